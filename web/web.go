package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
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

// contentSecurityPolicy allows the page's own scripts, styles and images
// and connections to its own origin only ('self' covers ws:// to the same
// host and port), and no framing: the page can edit the user's files, so
// no other site may load it in a frame to click for the user. Images may
// also be data: URLs: the PNGs and SVGs a statement displays (PROTOCOL.md
// 7.2) arrive in mime bundles; HTML ones go into sandboxed srcdoc frames,
// which inherit this policy (no script runs in them).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	name        string // base name, for http.ServeContent
	body        []byte
	contentType string
	etag        string // strong ETag from the content
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
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
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
