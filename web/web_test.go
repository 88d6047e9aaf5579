package web_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"github.com/ripple-run/ripple/server"
	"github.com/ripple-run/ripple/server/servertest"
	"github.com/ripple-run/ripple/web"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// get fetches path from h and returns the response and its body.
func get(t *testing.T, h http.Handler, method, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func TestPageWithoutToken(t *testing.T) {
	t.Parallel()
	res, body := get(t, web.Handler(), "GET", "/", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if !strings.Contains(body, `<script type="module" src="app.js"></script>`) {
		t.Errorf("the page does not load app.js:\n%s", body)
	}
	for name, want := range map[string]string{
		"Content-Security-Policy": "connect-src 'self'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-cache",
	} {
		if got := res.Header.Get(name); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to contain %q", name, got, want)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q: want framing forbidden and nothing unsafe", csp)
	}
}

// TestEveryReferenceIsServed follows every src/href of the page and every
// relative import of its modules: a renamed file fails here, not in a
// user's browser.
func TestEveryReferenceIsServed(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	_, page := get(t, h, "GET", "/", nil)
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 6 {
		t.Fatalf("only %d references in the page", len(refs))
	}
	imports := regexp.MustCompile(`from "\./([^"]+)"`)
	wantType := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	seen := map[string]bool{}
	queue := []string{}
	for _, r := range refs {
		queue = append(queue, "/"+r[1])
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		res, body := get(t, h, "GET", p, nil)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s (referenced by the page): %d", p, res.StatusCode)
			continue
		}
		if want := wantType[filepath.Ext(p)]; res.Header.Get("Content-Type") != want {
			t.Errorf("GET %s: Content-Type %q, want %q", p, res.Header.Get("Content-Type"), want)
		}
		if strings.HasSuffix(p, ".js") && !strings.Contains(p, "/vendor/") {
			for _, m := range imports.FindAllStringSubmatch(body, -1) {
				queue = append(queue, "/"+m[1])
			}
		}
	}
	for _, must := range []string{"/app.js", "/rpc.js", "/editor.js", "/sha3.js", "/text.js", "/vendor/codemirror/codemirror.js"} {
		if !seen[must] {
			t.Errorf("%s is not reachable from the page", must)
		}
	}
}

func TestVendoredLicenceServed(t *testing.T) {
	t.Parallel()
	res, body := get(t, web.Handler(), "GET", "/vendor/codemirror/LICENSE", nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "MIT License") {
		t.Fatalf("GET the CodeMirror licence: %d %.40q", res.StatusCode, body)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		mention      string
	}{
		{"GET", "/nope.js", http.StatusNotFound, "/nope.js"},
		{"GET", "/vendor/", http.StatusNotFound, "/vendor/"},
		{"GET", "/vendor/codemirror", http.StatusNotFound, "/vendor/codemirror"},
		{"GET", "/../web.go", http.StatusNotFound, ""},
		{"POST", "/", http.StatusMethodNotAllowed, "POST"},
		{"PUT", "/app.js", http.StatusMethodNotAllowed, "PUT"},
	} {
		res, body := get(t, h, tc.method, tc.path, nil)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.mention) {
			t.Errorf("%s %s: %d %q, want %d naming %q", tc.method, tc.path, res.StatusCode, body, tc.status, tc.mention)
		}
		if tc.status == http.StatusMethodNotAllowed && res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, res.Header.Get("Allow"))
		}
	}
}

func TestRevalidation(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	res, body := get(t, h, "GET", "/app.js", nil)
	etag := res.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{24}"$`).MatchString(etag) {
		t.Fatalf("ETag %q", etag)
	}
	res, again := get(t, h, "GET", "/app.js", http.Header{"If-None-Match": {etag}})
	if res.StatusCode != http.StatusNotModified || again != "" {
		t.Errorf("If-None-Match with the current ETag: %d, %d bytes", res.StatusCode, len(again))
	}
	res, again = get(t, h, "GET", "/app.js", http.Header{"If-None-Match": {`"stale"`}})
	if res.StatusCode != http.StatusOK || again != body {
		t.Errorf("If-None-Match with a stale ETag: %d", res.StatusCode)
	}
	res, head := get(t, h, "HEAD", "/app.js", nil)
	if res.StatusCode != http.StatusOK || head != "" || res.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD: %d, %d bytes, length %q", res.StatusCode, len(head), res.Header.Get("Content-Length"))
	}
}

// TestEmbeddedMatchesSources: the binary serves the files in static/ as
// they are in the repository (nothing stale, nothing left out).
func TestEmbeddedMatchesSources(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	n := 0
	err := fs.WalkDir(os.DirFS("static"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, err := os.ReadFile(filepath.Join("static", p))
		if err != nil {
			return err
		}
		res, body := get(t, h, "GET", "/"+p, nil)
		if res.StatusCode != http.StatusOK || body != string(want) {
			t.Errorf("GET /%s: %d, %d bytes; the file has %d", p, res.StatusCode, len(body), len(want))
		}
		n++
		return nil
	})
	if err != nil || n < 10 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}

func TestPageURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"ws://127.0.0.1:8123/ws?token=abc", "http://127.0.0.1:8123/?token=abc"},
		{"wss://ide.example.com/ws?token=a%2Bb", "https://ide.example.com/?token=a%2Bb"},
		{"ws://[::1]:9/ws?token=t", "http://[::1]:9/?token=t"},
	} {
		got, err := web.PageURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("PageURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"http://127.0.0.1:1/ws", "127.0.0.1:1", "ws:///ws?token=t", "ws://%zz"} {
		if got, err := web.PageURL(bad); err == nil {
			t.Errorf("PageURL(%q) = %q, want an error", bad, got)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("PageURL(%q): error %q does not name the URL", bad, err)
		}
	}
	if _, err := web.PageURL("http://x/ws"); !errors.Is(err, web.ErrNotWebSocketURL) {
		t.Errorf("PageURL(http://...): %v, want ErrNotWebSocketURL", err)
	}
}

// TestBehindTheServer: plugged into server.Config.Web, the page is served
// at the server's own origin and /ws stays the WebSocket.
func TestBehindTheServer(t *testing.T) {
	t.Parallel()
	srv, err := server.New(servertest.New(), server.Config{Token: "tok", Web: web.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(t.Context())
	page, err := web.PageURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "app.js") {
		t.Fatalf("GET %s: %d", page, res.StatusCode)
	}
	// The page's own origin passes the server's Origin check.
	origin := strings.TrimSuffix(strings.Split(page, "?")[0], "/")
	c, _, err := servertest.Dial(t.Context(), srv.URL(), http.Header{"Origin": {origin}})
	if err != nil {
		t.Fatalf("WebSocket from the page's origin %s: %v", origin, err)
	}
	c.Close()
}

// TestFramePolicy: the page rich HTML outputs are shown in has a policy of
// its own that lets the output's styles apply (a DataFrame looks as in a
// notebook) and runs only the frame's own script, named by its hash; only
// this origin may frame it, and the page itself still forbids inline
// styles and may frame only its own origin.
func TestFramePolicy(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	res, body := get(t, h, "GET", "/frame.html", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /frame.html: %d", res.StatusCode)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"style-src 'unsafe-inline'", "frame-ancestors 'self'", "default-src 'none'", "img-src data:"} {
		if !strings.Contains(csp, want) {
			t.Errorf("frame policy %q lacks %q", csp, want)
		}
	}
	script := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindStringSubmatch(body)
	if script == nil {
		t.Fatal("frame.html has no inline script")
	}
	sum := sha256.Sum256([]byte(script[1]))
	if want := "script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
		t.Errorf("frame policy %q does not name its script's hash (%s)", csp, want)
	}
	if strings.Contains(csp, "script-src 'unsafe") || strings.Contains(csp, "'self'; style") {
		t.Errorf("frame policy %q lets other scripts run", csp)
	}
	if got := res.Header.Get("X-Frame-Options"); got != "SAMEORIGIN" {
		t.Errorf("frame X-Frame-Options %q, want SAMEORIGIN", got)
	}
	page, _ := get(t, h, "GET", "/", nil)
	if pcsp := page.Header.Get("Content-Security-Policy"); !strings.Contains(pcsp, "frame-src 'self'") || !strings.Contains(pcsp, "style-src 'self';") {
		t.Errorf("page policy %q: want frame-src 'self' and no inline styles", pcsp)
	}
}
