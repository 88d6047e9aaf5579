package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

const testLoader = "def install(directory):\n    pass\n"

func testFiles(main string) fstest.MapFS {
	return fstest.MapFS{
		"python/ripple_kernel/main.py":   {Data: []byte(main)},
		"python/ripple_kernel/loader.py": {Data: []byte(testLoader)},
		"python/tests/x_test.py":         {Data: []byte("not installed")},
	}
}

func TestInstallScripts(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir, err := installScripts(parent, testFiles("print('v1')\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(dir), "kernel-") {
		t.Errorf("dir = %s", dir)
	}
	for name, want := range map[string]string{mainFile: "print('v1')\n", loaderFile: testLoader} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v", name, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tests", "x_test.py")); !os.IsNotExist(err) {
		t.Errorf("files under python/tests were installed")
	}

	// Reused as is when present (a __pycache__ beside the files is fine).
	os.Mkdir(filepath.Join(dir, "__pycache__"), 0o700)
	st1, _ := os.Stat(filepath.Join(dir, mainFile))
	again, err := installScripts(parent, testFiles("print('v1')\n"))
	st2, _ := os.Stat(filepath.Join(again, mainFile))
	if err != nil || again != dir || !os.SameFile(st1, st2) {
		t.Errorf("second install: %s, %v; want the same files in %s", again, err, dir)
	}

	// Other content gets another directory.
	v2, err := installScripts(parent, testFiles("print('v2')\n"))
	if err != nil || v2 == dir {
		t.Errorf("new content installed into %s, %v", v2, err)
	}

	// A damaged install is replaced.
	os.WriteFile(filepath.Join(dir, mainFile), []byte("garbage"), 0o600)
	fixed, err := installScripts(parent, testFiles("print('v1')\n"))
	if err != nil || fixed != dir {
		t.Fatalf("repair: %s, %v", fixed, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, mainFile)); string(got) != "print('v1')\n" {
		t.Errorf("damaged main.py not replaced: %q", got)
	}

	// No temporary or damaged directories are left behind.
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") || strings.Contains(e.Name(), ".damaged-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestInstallScriptsConcurrently(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = installScripts(parent, testFiles("print('race')\n"))
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Errorf("install %d: %s, %v", i, dirs[i], errs[i])
		}
	}
}

func TestInstallScriptsNeedsBootstrapFiles(t *testing.T) {
	t.Parallel()
	for _, missing := range []string{mainFile, loaderFile} {
		files := testFiles("x")
		delete(files, "python/"+missing)
		_, err := installScripts(t.TempDir(), files)
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: err = %v", missing, err)
		}
	}
}

func TestRemoveStaleScripts(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	keep := filepath.Join(parent, "kernel-keep")
	fresh := filepath.Join(parent, "kernel-fresh")
	stale := filepath.Join(parent, "kernel-stale")
	other := filepath.Join(parent, "logs")
	for _, d := range []string{keep, fresh, stale, other} {
		os.MkdirAll(d, 0o700)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, d := range []string{keep, stale, other} {
		os.Chtimes(d, old, old)
	}
	removeStaleScripts(parent, keep, 14*24*time.Hour)
	for d, want := range map[string]bool{keep: true, fresh: true, stale: false, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}

func TestBinaryStamp(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	files := testFiles("print('stamped')\n")
	dir, err := installScripts(parent, files)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(parent, "ripple-bin")
	os.WriteFile(exe, []byte("binary v1"), 0o700)
	info, _ := os.Stat(exe)
	stamp := stampPath(parent, exe, info)
	if _, ok := stampedDir(stamp); ok {
		t.Fatal("a stamp before any was written")
	}
	writeStamp(stamp, dir, files)
	if got, ok := stampedDir(stamp); !ok || got != dir {
		t.Fatalf("stampedDir = %s, %v; want %s", got, ok, dir)
	}

	// Another binary at the same path has another stamp.
	os.WriteFile(exe, []byte("binary v2, longer"), 0o700)
	info2, _ := os.Stat(exe)
	if stampPath(parent, exe, info2) == stamp {
		t.Error("a rebuilt binary kept its stamp")
	}

	// A file changed after the stamp (size or mtime) voids it.
	main := filepath.Join(dir, mainFile)
	os.WriteFile(main, []byte("print('tampered')\n"), 0o600)
	if _, ok := stampedDir(stamp); ok {
		t.Error("stamp accepted a rewritten main.py")
	}
	os.Remove(main)
	if _, ok := stampedDir(stamp); ok {
		t.Error("stamp accepted a removed main.py")
	}
	if got, err := installScripts(parent, files); err != nil || got != dir {
		t.Fatalf("reinstall: %s, %v", got, err)
	}
	writeStamp(stamp, dir, files)
	if _, ok := stampedDir(stamp); !ok {
		t.Error("stamp of the reinstalled files not accepted")
	}

	// An old stamp is removed with stale installs; the one in use is not.
	old := time.Now().Add(-30 * 24 * time.Hour)
	other := filepath.Join(parent, stampPrefix+"0123456789abcdef")
	os.WriteFile(other, []byte(dir+"\n"), 0o600)
	os.Chtimes(other, old, old)
	removeStaleScripts(parent, dir, 14*24*time.Hour)
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("stale stamp left: %v", err)
	}
	if _, ok := stampedDir(stamp); !ok {
		t.Error("the fresh stamp was removed")
	}
}
