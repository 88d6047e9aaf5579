package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy allows the page's own scripts, styles, fonts
// (KaTeX's) and images and connections to its own origin only ('self'
// covers ws:// to the same host and port), and no framing: the page can
// edit the user's files, so no other site may load it in a frame to click
// for the user. Images may also be data: URLs: the PNGs and SVGs a
// statement displays (PROTOCOL.md 7.2) arrive in mime bundles. HTML ones go
// into sandboxed frames of frame.html (frame-src 'self'), which has a
// policy of its own (framePolicy).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; frame-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// framePath is the page a rich HTML output is shown in. It is loaded in a
// frame sandboxed without allow-same-origin (an origin of its own: nothing
// in it can reach the page, its storage or the server's token), and its
// policy lets the output look as it would in a notebook: its own <style>
// elements and style attributes, data: images and fonts. Only the frame's
// own inline script runs (named by its hash); the output's scripts do not.
// Only this origin may frame it.
const framePath = "/frame.html"

// framePolicy returns frame.html's policy for the SHA-256 of its script.
func framePolicy(scriptHash string) string {
	return "default-src 'none'; script-src 'sha256-" + scriptHash + "'; style-src 'unsafe-inline'; img-src data:; font-src data:; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
}

// inlineScriptHash returns the base64 SHA-256 of the text of the first
// <script> element of an HTML page ("" when it has none): what a policy
// names to let that script, and no other, run.
func inlineScriptHash(page []byte) string {
	_, rest, ok := bytes.Cut(page, []byte("<script>"))
	if !ok {
		return ""
	}
	script, _, ok := bytes.Cut(rest, []byte("</script>"))
	if !ok {
		return ""
	}
	sum := sha256.Sum256(script)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// asset is one embedded file, ready to serve.
type asset struct {
	name        string // base name, for http.ServeContent
	body        []byte
	contentType string
	etag        string // strong ETag from the content
	policy      string // its Content-Security-Policy
	frameable   bool   // this origin may frame it (X-Frame-Options SAMEORIGIN)
}

var (
	assetsOnce sync.Once
	assets     map[string]*asset // URL path -> asset; immutable after assetsOnce
	assetsErr  error
)

// loadAssets reads every embedded file once. The files are compiled in, so
// an error here is a bug in the build, not a runtime condition.
func loadAssets() (map[string]*asset, error) {
	assetsOnce.Do(func() {
		assets = map[string]*asset{}
		assetsErr = fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			body, err := static.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(body)
			ctype := mime.TypeByExtension(path.Ext(p))
			if ctype == "" {
				ctype = "text/plain; charset=utf-8" // LICENSE
			}
			urlPath := strings.TrimPrefix(p, "static")
			assets[urlPath] = &asset{
				name:        path.Base(p),
				body:        body,
				contentType: ctype,
				etag:        `"` + hex.EncodeToString(sum[:12]) + `"`,
				policy:      contentSecurityPolicy,
			}
			if urlPath == framePath {
				assets[urlPath].policy = framePolicy(inlineScriptHash(body))
				assets[urlPath].frameable = true
			}
			return nil
		})
		if a, ok := assets["/index.html"]; ok {
			assets["/"] = a
		}
	})
	return assets, assetsErr
}

// Handler returns the handler that serves the page and its assets: "/" is
// the page, every other path an embedded file or 404. It answers GET and
// HEAD only (405 otherwise) and needs no token (see the package doc).
// Responses revalidate (Cache-Control: no-cache) against a strong ETag, so
// a browser never runs the assets of an older binary and never downloads
// the same ones twice.
func Handler() http.Handler {
	files, err := loadAssets()
	if err != nil {
		panic(fmt.Sprintf("web: embedded assets: %v", err))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "ripple: method "+r.Method+" not allowed: the web client is read-only", http.StatusMethodNotAllowed)
			return
		}
		a, ok := files[r.URL.Path]
		if !ok {
			http.Error(w, "ripple: no such page: "+r.URL.Path, http.StatusNotFound)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", a.policy)
		h.Set("X-Content-Type-Options", "nosniff")
		if a.frameable {
			h.Set("X-Frame-Options", "SAMEORIGIN")
		} else {
			h.Set("X-Frame-Options", "DENY")
		}
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
	})
}

// ErrNotWebSocketURL is returned by PageURL for a URL that is not the
// server's ws:// or wss:// URL.
var ErrNotWebSocketURL = errors.New("not a ws:// or wss:// URL")

// PageURL returns the web page's URL for the server's WebSocket URL (as
// server.Server.URL returns it): same host and port, http for ws and https
// for wss, path "/", and the same query, so the page gets the token.
func PageURL(wsURL string) (string, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return "", fmt.Errorf("web: page URL for %q: %w", wsURL, err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return "", fmt.Errorf("web: page URL for %q: %w", wsURL, ErrNotWebSocketURL)
	}
	if u.Host == "" {
		return "", fmt.Errorf("web: page URL for %q: %w: no host", wsURL, ErrNotWebSocketURL)
	}
	u.Path, u.RawPath = "/", ""
	return u.String(), nil
}
