package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The checks made before a WebSocket upgrade (PROTOCOL.md 1).

// tokenHash is the SHA-256 of a token. Comparing hashes rather than the
// tokens keeps the comparison constant-time whatever the lengths (a plain
// subtle.ConstantTimeCompare returns early on a length mismatch).
type tokenHash [sha256.Size]byte

func hashToken(t string) tokenHash { return sha256.Sum256([]byte(t)) }

// presentedToken returns the token of a request: ?token= or
// "Authorization: Bearer TOKEN"; ok is false when there is none.
func presentedToken(r *http.Request) (token string, ok bool) {
	if t := r.URL.Query().Get("token"); t != "" {
		return t, true
	}
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) > len(prefix) && strings.EqualFold(auth[:len(prefix)], prefix) {
		return strings.TrimSpace(auth[len(prefix):]), true
	}
	return "", false
}

func (h tokenHash) matches(token string) bool {
	got := hashToken(token)
	return subtle.ConstantTimeCompare(h[:], got[:]) == 1
}

// originSet is the set of allowed origins, normalised by normalizeOrigin.
type originSet map[string]bool

// ownOrigins returns the origins of a server listening on addr: 127.0.0.1,
// localhost and [::1] on its port, and its own host when it is bound to a
// specific one. The web page the server will serve comes from these.
func ownOrigins(addr net.Addr) originSet {
	set := originSet{}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return set
	}
	port := strconv.Itoa(tcp.Port)
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
		set["http://"+host+":"+port] = true
	}
	if !tcp.IP.IsUnspecified() {
		set["http://"+net.JoinHostPort(tcp.IP.String(), port)] = true
	}
	return set
}

// normalizeOrigin lowercases scheme and host and drops a default port, so
// "HTTP://LocalHost:80" and "http://localhost" compare equal. ok is false
// for something that is not a scheme://host[:port] origin (including the
// opaque origin "null").
func normalizeOrigin(origin string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// allows reports whether a request's Origin header is acceptable. Requests
// without one do not come from a browser page and are let through (the
// token still applies); with one, the origin must be listed, or be the
// request's own host when that host is localhost or an IP address of this
// machine (Jupyter's same-origin rule: a server bound to 0.0.0.0 serves
// its page at http://192.168.1.5:PORT, and that page must be able to
// connect; a host name is not trusted, against DNS rebinding).
func (s originSet) allows(r *http.Request) bool {
	values := r.Header.Values("Origin")
	if len(values) == 0 {
		return true
	}
	if len(values) > 1 {
		return false
	}
	o, ok := normalizeOrigin(values[0])
	return ok && (s[o] || sameLocalOrigin(o, r.Host))
}

// sameLocalOrigin reports whether the normalised origin o is http://host
// of the request's Host header and that host is localhost or one of this
// machine's IP addresses.
func sameLocalOrigin(o, host string) bool {
	own, ok := normalizeOrigin("http://" + host)
	if !ok || own != o {
		return false
	}
	u, err := url.Parse(own)
	if err != nil {
		return false
	}
	name := u.Hostname()
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && isLocalIP(ip)
}

// isLocalIP reports whether ip is a loopback address or an address of one
// of this machine's interfaces.
func isLocalIP(ip net.IP) bool {
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// OriginCheckPath answers a POST from the web page whose WebSocket was
// refused: {allowed, origin, message}. A browser does not show a page why
// its WebSocket handshake failed; a POST carries the page's Origin like
// the handshake did, so the page can say why and what to do.
const OriginCheckPath = "/origin-check"
