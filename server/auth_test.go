package server

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

func TestHandshakeChecks(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{AllowOrigins: []string{"https://IDE.example.com:443"}}, nil)
	port := strconv.Itoa(b.srv.Addr().(*net.TCPAddr).Port)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	withOrigin := func(h http.Header, origin string) http.Header {
		if h == nil {
			h = http.Header{}
		}
		h.Set("Origin", origin)
		return h
	}
	tests := []struct {
		name   string
		url    string
		header http.Header
		status int // 0: the upgrade succeeds
	}{
		{"token in query", b.url, nil, 0},
		{"token as bearer", b.wsURLWithoutToken(), bearer(testToken), 0},
		{"bearer is case-insensitive", b.wsURLWithoutToken(), http.Header{"Authorization": {"bearer " + testToken}}, 0},
		{"no token", b.wsURLWithoutToken(), nil, http.StatusUnauthorized},
		{"wrong token", b.wsURLWithoutToken() + "?token=nope", nil, http.StatusUnauthorized},
		{"token prefix", b.wsURLWithoutToken() + "?token=" + testToken[:4], nil, http.StatusUnauthorized},
		{"token with a suffix", b.wsURLWithoutToken() + "?token=" + testToken + "x", nil, http.StatusUnauthorized},
		{"wrong bearer", b.wsURLWithoutToken(), bearer("nope"), http.StatusUnauthorized},
		{"empty bearer", b.wsURLWithoutToken(), http.Header{"Authorization": {"Bearer "}}, http.StatusUnauthorized},
		{"basic auth", b.wsURLWithoutToken(), http.Header{"Authorization": {"Basic " + testToken}}, http.StatusUnauthorized},
		{"own origin 127.0.0.1", b.url, withOrigin(nil, "http://127.0.0.1:"+port), 0},
		{"own origin localhost", b.url, withOrigin(nil, "http://localhost:"+port), 0},
		{"own origin upper case", b.url, withOrigin(nil, "HTTP://LOCALHOST:"+port), 0},
		{"allowed origin", b.url, withOrigin(nil, "https://ide.example.com"), 0},
		{"foreign origin with the right token", b.url, withOrigin(nil, "http://evil.example"), http.StatusForbidden},
		{"foreign origin with a bearer token", b.wsURLWithoutToken(), withOrigin(bearer(testToken), "http://evil.example"), http.StatusForbidden},
		{"own host on another port", b.url, withOrigin(nil, "http://127.0.0.1:1"), http.StatusForbidden},
		{"allowed host over http", b.url, withOrigin(nil, "http://ide.example.com"), http.StatusForbidden},
		{"null origin", b.url, withOrigin(nil, "null"), http.StatusForbidden},
		{"origin with a path", b.url, withOrigin(nil, "http://localhost:"+port+"/x"), http.StatusForbidden},
		{"foreign origin without token", b.wsURLWithoutToken(), withOrigin(nil, "http://evil.example"), http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, resp, err := servertest.Dial(testCtx(t), tt.url, tt.header)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				defer c.Close()
				// The connection really serves the protocol.
				err := c.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil)
				wantCode(t, err, protocol.CodeSessionNotInitialised)
				return
			}
			if err == nil {
				c.Close()
				t.Fatalf("dial succeeded, want HTTP %d", tt.status)
			}
			if resp == nil {
				t.Fatalf("dial failed without an HTTP response: %v", err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

func TestPlainHTTPRequests(t *testing.T) {
	t.Parallel()
	web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "web client at "+r.URL.Path)
	})
	b := setup(t, Config{Web: web}, nil)
	get := func(path string, header http.Header) (int, string) {
		req, _ := http.NewRequestWithContext(testCtx(t), "GET", b.httpURL()+path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/index.html", nil); code != 200 || body != "web client at /index.html" {
		t.Fatalf("web hook: %d %q", code, body)
	}
	// /ws without the upgrade headers but with the token: a WebSocket
	// handshake error, not the web hook.
	if code, _ := get("/ws?token="+testToken, nil); code != http.StatusBadRequest {
		t.Fatalf("GET /ws without upgrade: HTTP %d, want 400", code)
	}
	// Auth comes before the upgrade.
	if code, _ := get("/ws", nil); code != http.StatusUnauthorized {
		t.Fatalf("GET /ws without token: HTTP %d, want 401", code)
	}

	// Without a web hook every other path is 404.
	b2 := setup(t, Config{}, nil)
	resp, err := http.Get(b2.httpURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET / without web hook: HTTP %d, want 404", resp.StatusCode)
	}
}

func TestNormalizeOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"http://localhost:8080", "http://localhost:8080", true},
		{"HTTP://LocalHost:8080", "http://localhost:8080", true},
		{"http://localhost:80", "http://localhost", true},
		{"https://example.com:443/", "https://example.com", true},
		{"http://[::1]:9000", "http://[::1]:9000", true},
		{"null", "", false},
		{"", "", false},
		{"localhost:8080", "", false},
		{"http://user@localhost:8080", "", false},
		{"http://localhost:8080/path", "", false},
		{"http://localhost:8080?q=1", "", false},
	}
	for _, tt := range tests {
		got, ok := normalizeOrigin(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("normalizeOrigin(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	if _, err := New(servertest.New(), Config{}); err != ErrNoToken {
		t.Fatalf("no token: %v, want ErrNoToken", err)
	}
	if _, err := New(servertest.New(), Config{Token: "t", AllowOrigins: []string{"evil.example"}}); err == nil {
		t.Fatal("an allowed origin without scheme was accepted")
	}
}

func TestDefaultBindIsLoopback(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	addr := b.srv.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() || addr.Port == 0 {
		t.Fatalf("listening on %v, want 127.0.0.1 on a random port", addr)
	}
	if want := "ws://" + addr.String() + "/ws?token=" + testToken; b.url != want {
		t.Fatalf("URL %q, want %q", b.url, want)
	}
}

// A server bound to every interface serves its page at one of the
// machine's addresses; that page (Origin equal to the Host it loaded from)
// may connect. Another host name, or a Host that is not this machine,
// stays refused; the origin check endpoint says which and why.
func TestSameOriginOnAnAddressOfThisMachine(t *testing.T) {
	t.Parallel()
	var local net.IP
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			local = n.IP
			break
		}
	}
	if local == nil {
		t.Skip("this machine has no non-loopback IPv4 address")
	}
	b := setup(t, Config{Addr: "0.0.0.0:0"}, nil)
	port := strconv.Itoa(b.srv.Addr().(*net.TCPAddr).Port)
	url := "ws://127.0.0.1:" + port + "/ws?token=" + testToken
	hostPort := net.JoinHostPort(local.String(), port)
	tests := []struct {
		name, host, origin string
		status             int // 0: the upgrade succeeds
	}{
		{"page at a local address", hostPort, "http://" + hostPort, 0},
		{"page at localhost", "localhost:" + port, "http://localhost:" + port, 0},
		{"a host name", "ripple.example:" + port, "http://ripple.example:" + port, http.StatusForbidden},
		{"an address not of this machine", "203.0.113.7:" + port, "http://203.0.113.7:" + port, http.StatusForbidden},
		{"origin of another host", hostPort, "http://203.0.113.7:" + port, http.StatusForbidden},
		{"another port", hostPort, "http://" + net.JoinHostPort(local.String(), "1"), http.StatusForbidden},
	}
	for _, tt := range tests {
		c, resp, err := servertest.Dial(testCtx(t), url, http.Header{"Host": {tt.host}, "Origin": {tt.origin}})
		if tt.status == 0 {
			if err != nil {
				t.Errorf("%s: dial: %v", tt.name, err)
				continue
			}
			c.Close()
			continue
		}
		if err == nil {
			c.Close()
			t.Errorf("%s: dial succeeded, want HTTP %d", tt.name, tt.status)
			continue
		}
		if resp == nil || resp.StatusCode != tt.status {
			t.Errorf("%s: %v %v, want HTTP %d", tt.name, resp, err, tt.status)
		}
	}

	check := func(host, origin string) string {
		req, _ := http.NewRequestWithContext(testCtx(t), "POST", "http://127.0.0.1:"+port+OriginCheckPath, nil)
		req.Host = host
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if got := check(hostPort, "http://"+hostPort); !strings.Contains(got, `"allowed":true`) {
		t.Errorf("origin check of the page's own origin: %s", got)
	}
	if got := check(hostPort, "http://evil.example"); !strings.Contains(got, `"allowed":false`) || !strings.Contains(got, "--allow-origin http://evil.example") {
		t.Errorf("origin check of a foreign origin: %s, want refused with the flag that allows it", got)
	}
}
