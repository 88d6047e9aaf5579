package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
)

func TestMain(m *testing.M) {
	if os.Getenv(killChildEnv) != "" {
		runKillChild() // never returns
	}
	leakcheck.Main(m)
}

// setup creates a project in a fresh temp dir with the given files and opens
// it as a workspace, closed at the end of the test.
func setup(t testing.TB, files map[string]string) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	ws, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, ws.Root()
}

// writeFiles writes files (path -> content) below dir, directly on disk.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readDisk(t testing.TB, dir, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// wantErr fails the test unless err wraps want (nil for success).
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("error = %v, want %v", err, want)
	}
}
