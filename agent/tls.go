package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// ErrInsecure is a connection that would carry code in the clear: a
// non-loopback coordinator address without a pinned certificate.
var ErrInsecure = errors.New("refusing an unauthenticated connection")

// IsLoopback reports whether addr (host:port) names a loopback address
// (127.0.0.0/8, ::1 or localhost): the only place plain TCP is allowed.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Fingerprint is the pin of a certificate: "sha256:" and the hex SHA-256
// of its SubjectPublicKeyInfo.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// serverTLS returns the coordinator's TLS config: the certificate in
// certFile/keyFile, or a self-signed one made now for host, and its
// fingerprint.
func serverTLS(certFile, keyFile, host string) (*tls.Config, string, error) {
	var cert tls.Certificate
	var err error
	if certFile != "" || keyFile != "" {
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, "", fmt.Errorf("agents certificate %s / key %s: %w", certFile, keyFile, err)
		}
	} else if cert, err = selfSigned(host); err != nil {
		return nil, "", err
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, "", fmt.Errorf("agents certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, Fingerprint(leaf), nil
}

func selfSigned(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "ripple coordinator"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if host != "" && ip == nil {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed agents certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// clientTLS returns the agent's TLS config for addr: the coordinator's
// certificate pinned by fingerprint, or verified against the CA file.
// Nil (plain TCP) only for a loopback address when neither is given and
// TLS is not forced.
func clientTLS(addr, fingerprint, caFile string, force bool) (*tls.Config, error) {
	if fingerprint == "" && caFile == "" {
		if IsLoopback(addr) && !force {
			return nil, nil
		}
		return nil, fmt.Errorf("%w to %s: it is not a loopback address, so the coordinator's certificate must be pinned with --coordinator-fingerprint sha256:HEX or --ca FILE", ErrInsecure, addr)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("coordinator address %q: %w", addr, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: host}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
		return cfg, nil
	}
	want, ok := strings.CutPrefix(fingerprint, "sha256:")
	if !ok || len(want) != 64 {
		return nil, fmt.Errorf("--coordinator-fingerprint %q: want sha256: and 64 hex digits", fingerprint)
	}
	want = strings.ToLower(want)
	// The pin replaces the chain check: the certificate is self-signed,
	// and what authenticates it is its public key's hash.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("coordinator %s sent no certificate", addr)
		}
		got := Fingerprint(cs.PeerCertificates[0])
		if subtle.ConstantTimeCompare([]byte(got), []byte("sha256:"+want)) != 1 {
			return fmt.Errorf("coordinator %s: certificate fingerprint %s, pinned %s", addr, got, fingerprint)
		}
		return nil
	}
	return cfg, nil
}
