package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tempFiles returns the names of atomic-write temp files left in dir.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmps []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".ripple-") && strings.HasSuffix(e.Name(), ".tmp") {
			tmps = append(tmps, e.Name())
		}
	}
	return tmps
}

func TestAtomicWriteFailureAtEachStep(t *testing.T) {
	t.Parallel()
	injected := errors.New("injected failure")
	for step := stepCreateTemp; step <= stepSyncDir; step++ {
		t.Run(step.String(), func(t *testing.T) {
			t.Parallel()
			ws, root := setup(t, map[string]string{"pkg/old.py": "old content\n"})
			if err := os.Chmod(filepath.Join(root, "pkg/old.py"), 0o600); err != nil {
				t.Fatal(err)
			}
			ws.writeHook = func(s writeStep) error {
				if s == step {
					return injected
				}
				return nil
			}
			_, err := ws.Write("pkg/old.py", "new content\n")
			if !errors.Is(err, injected) {
				t.Fatalf("Write error = %v, want the injected failure", err)
			}
			if !strings.Contains(err.Error(), "pkg/old.py") || !strings.Contains(err.Error(), step.String()) {
				t.Errorf("error %q should name the path and the step", err)
			}
			want := "old content\n"
			if step == stepSyncDir { // the rename happened before the failure
				want = "new content\n"
			}
			if got := readDisk(t, root, "pkg/old.py"); got != want {
				t.Errorf("content after a failed %s = %q, want %q", step, got, want)
			}
			if fi, err := os.Stat(filepath.Join(root, "pkg/old.py")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode after a failed %s: %v %v, want 0600", step, fi.Mode(), err)
			}
			if tmps := tempFiles(t, filepath.Join(root, "pkg")); len(tmps) != 0 {
				t.Errorf("temp files left after a failed %s: %v", step, tmps)
			}

			// A new file: nothing at all unless the rename happened.
			_, err = ws.Write("pkg/new.py", "new\n")
			if !errors.Is(err, injected) {
				t.Fatalf("Write error = %v, want the injected failure", err)
			}
			_, statErr := os.Stat(filepath.Join(root, "pkg/new.py"))
			if exists := statErr == nil; exists != (step == stepSyncDir) {
				t.Errorf("new file exists=%v after a failed %s", exists, step)
			}
			if tmps := tempFiles(t, filepath.Join(root, "pkg")); len(tmps) != 0 {
				t.Errorf("temp files left after a failed %s: %v", step, tmps)
			}
		})
	}
}

func TestAtomicWriteKeepsMode(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"run.sh": "#!/bin/sh\n", "private.py": "k = 1\n"})
	for p, mode := range map[string]fs.FileMode{"run.sh": 0o755, "private.py": 0o600} {
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
		if _, err := ws.Write(p, "changed\n"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode = %v after write, want %v", p, fi.Mode().Perm(), mode)
		}
		if got := readDisk(t, root, p); got != "changed\n" {
			t.Errorf("%s = %q", p, got)
		}
	}
	if _, err := ws.Write("fresh/new.py", "n = 1\n"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "fresh/new.py"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != newFileMode {
		t.Errorf("new file mode = %v, want %v", fi.Mode().Perm(), newFileMode)
	}
}

const killChildEnv = "RIPPLE_WORKSPACE_KILL_CHILD"

// bigContent returns one of two large contents of different sizes, each
// ending in a marker, so any mix or truncation is detectable.
func bigContent(which int) string {
	if which == 0 {
		return strings.Repeat("a", 3<<20) + "END-A\n"
	}
	return strings.Repeat("b", 5<<20) + "END-B\n"
}

// runKillChild is the child side of TestAtomicWriteSurvivesSIGKILL: it
// rewrites big.txt with alternating contents forever, printing the name of
// each step of each write as it begins, until the parent kills it.
func runKillChild() {
	ws, err := Open(os.Getenv(killChildEnv), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ws.writeHook = func(s writeStep) error {
		fmt.Println(s)
		return nil
	}
	contents := [2]string{bigContent(0), bigContent(1)}
	for i := 1; ; i++ {
		if _, err := ws.Write("big.txt", contents[i%2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// TestAtomicWriteSurvivesSIGKILL kills a process (this test binary,
// re-executed) in the middle of large atomic writes, again and again, and
// checks the file is always whole: the old or the new content.
func TestAtomicWriteSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	whole := map[string]bool{bigContent(0): true, bigContent(1): true}
	writeFiles(t, dir, map[string]string{"big.txt": bigContent(0)})
	const rounds = 20
	interrupted, replaced := 0, 0
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill as the child begins a given step of its first or second
		// write, so the kills land in every step of writes of both contents.
		target := writeStep(round % int(stepSyncDir+1)).String()
		lines := bufio.NewScanner(stdout)
		for seen := 0; seen < 1+round/int(stepSyncDir+1)%2; {
			if !lines.Scan() {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child ended early: %s", stderr.String())
			}
			if lines.Text() == target {
				seen++
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		got := readDisk(t, dir, "big.txt")
		if !whole[got] {
			t.Fatalf("round %d: big.txt is torn: %d bytes, ends %q", round, len(got), got[max(0, len(got)-8):])
		}
		if got == bigContent(1) {
			replaced++
		}
		if tmps := tempFiles(t, dir); len(tmps) > 0 {
			interrupted++ // a write was cut short; its temp file is all that is left of it
			// The next start removes it (stale.go).
			ws, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ws.Close()
			if left := tempFiles(t, dir); len(left) > 0 {
				t.Fatalf("round %d: the next start left the temp files %v of an interrupted save", round, left)
			}
		}
	}
	t.Logf("%d rounds: %d kills landed mid-write, %d left the other content", rounds, interrupted, replaced)
	if interrupted == 0 {
		t.Errorf("no kill landed in the middle of a write; the test did not exercise anything")
	}
}
