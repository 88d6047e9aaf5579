//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
	"golang.org/x/sys/unix"
)

// ttyWatch is `ripple watch` running on the slave side of a
// pseudo-terminal, as in a real terminal: it is the session leader and
// the foreground process group, so a Ctrl-C typed on the master reaches
// it as SIGINT from the line discipline.
type ttyWatch struct {
	*process
	t      *testing.T
	master *os.File

	mu   sync.Mutex
	cond *sync.Cond
	out  strings.Builder // everything read from the master, \r removed; guarded by mu
	eof  bool            // guarded by mu: the master read ended
}

// openPTY opens a new pseudo-terminal of cols columns: the master
// (non-blocking, so that closing it ends a pending read) and the slave.
func openPTY(t *testing.T, cols int) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		unix.Close(fd)
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		unix.Close(fd)
		t.Fatalf("pty number: %v", err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: uint16(cols)}); err != nil {
		unix.Close(fd)
		t.Fatalf("pty size: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatalf("open pty slave: %v", err)
	}
	return master, slave
}

func startTTYWatch(t *testing.T, cols int, args ...string) *ttyWatch {
	t.Helper()
	master, slave := openPTY(t, cols)
	w := &ttyWatch{t: t, master: master}
	w.cond = sync.NewCond(&w.mu)
	// Cleanups run last-in first-out: the process is killed if the test
	// left it running (startProcess's), then the master is closed, which
	// ends the read even if a straggler still holds the slave, then the
	// reader is waited for.
	var reader sync.WaitGroup
	t.Cleanup(reader.Wait)
	t.Cleanup(func() {
		master.Close()
		slave.Close()
	})
	cmd := exec.Command(rippleBin, append([]string{"watch"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.Env = append(os.Environ(), "NO_COLOR=", "TERM=xterm")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	// Nothing to wait for before Wait: the master is not the child's pipe.
	w.process = startProcess(t, cmd, func() {})
	slave.Close() // the child has its own copies: the master reads EIO when they are gone
	reader.Add(1)
	go func() {
		defer reader.Done()
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			w.mu.Lock()
			w.out.WriteString(strings.ReplaceAll(string(buf[:n]), "\r", ""))
			if err != nil {
				w.eof = true
			}
			w.cond.Broadcast()
			w.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return w
}

// waitFor waits until the output after offset from contains s and returns
// the offset just past it.
func (w *ttyWatch) waitFor(from int, s string) int {
	w.t.Helper()
	// The reader broadcasts on every read; this wakes the wait once more at
	// the deadline.
	deadline := testenv.Deadline(w.t)
	stop := time.AfterFunc(time.Until(deadline), func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer stop.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if i := strings.Index(w.out.String()[from:], s); i >= 0 {
			return from + i + len(s)
		}
		if w.eof || time.Now().After(deadline) {
			if !w.eof {
				// The dump goes to the terminal: wait for it to be read.
				w.mu.Unlock()
				w.quit()
				time.Sleep(500 * time.Millisecond)
				w.mu.Lock()
			}
			all := w.out.String()
			w.t.Fatalf("waiting for %q after offset %d; the terminal shows (from %d of %d bytes; a SIGQUIT goroutine dump last if it hung):\n%q",
				s, from, max(0, len(all)-60000), len(all), all[max(0, len(all)-60000):])
		}
		w.cond.Wait()
	}
}

func (w *ttyWatch) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// ctrlC types Ctrl-C on the terminal.
func (w *ttyWatch) ctrlC() {
	w.t.Helper()
	if _, err := w.master.Write([]byte{0x03}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *ttyWatch) exit() int {
	w.t.Helper()
	return w.exitCode(w.t, w.output)
}

// section returns the output from offset from up to the next table header
// (or the end).
func section(out string, from int) string {
	s := out[from:]
	if i := strings.Index(s, "── "); i >= 0 {
		return s[:i]
	}
	return s
}

func TestWatchTerminal(t *testing.T) {
	t.Parallel()
	const cols = 72
	dir := project(t, map[string]string{"main.py": watchMain, "helper.py": watchHelper})
	w := startTTYWatch(t, cols, dir)

	// The first table: every expression, coloured: bold cyan header, green
	// marks for computed values.
	at := w.waitFor(0, sgr("1", "36")+"── main:main · run 1 · 5 recomputed")
	at = w.waitFor(at, "──"+sgr0)
	w.waitFor(at, " return ") // the last row
	first := section(w.output(), at)
	for _, row := range []string{
		// A "#k" row names its statement; the label column fits it.
		sgr("32") + "*" + sgr0 + " x                    " + sgr("2") + "int     " + sgr0 + "  6 ",
		sgr("32") + "*" + sgr0 + " y                    " + sgr("2") + "int     " + sgr0 + "  30 ",
		sgr("32") + "*" + sgr0 + ` #1 print("y is", y)  ` + sgr("2") + "NoneType" + sgr0 + "  None ",
		sgr("32") + "*" + sgr0 + " return               " + sgr("2") + "int     " + sgr0 + "  35 ",
	} {
		if !strings.Contains(first, row) {
			t.Errorf("first table lacks the row %q:\n%q", row, first)
		}
	}
	if !strings.Contains(w.output()[:at], "y is 30\n") {
		t.Errorf("the run's output did not come before its table:\n%s", w.output()[:at])
	}

	// A save of helper.py: the file note, the output, then only what
	// changed (x is cached and not shown again).
	writeFile(t, dir, "helper.py", "def foo(a, b):\n    c = a * b * 2\n    return c\n")
	at = w.waitFor(at, sgr("2")+"· helper.py modified"+sgr0)
	at = w.waitFor(at, "y is 60\n")
	at = w.waitFor(at, "── main:main · run 2 · 4 recomputed · ")
	w.waitFor(at, " return ")
	second := section(w.output(), at)
	if strings.Contains(second, " x ") || !strings.Contains(second, " y ") || !strings.Contains(second, " 65 ") {
		t.Errorf("second table should show y and z but not x:\n%s", second)
	}

	// An error: its row in red with the line; it ends the run, so the
	// return after it is not reached (PROTOCOL.md 8.1), dimmed.
	writeFile(t, dir, "main.py", strings.Replace(watchMain, "    return z\n", "    w = z / 0\n    return z\n", 1))
	at = w.waitFor(at, "run 3")
	at = w.waitFor(at, sgr("31")+"  ! w       ZeroDivisionError: division by zero  line 9"+sgr0)
	at = w.waitFor(at, sgr("2")+"  · return  not reached: exception in w (line 9)"+sgr0)

	// A long computation printing first: Ctrl-C interrupts it and ripple
	// watch stays; Ctrl-C again, now idle, exits 0.
	writeFile(t, dir, "main.py", strings.Replace(watchMain, "    return z\n", "    import time; print('sleeping'); time.sleep(600)\n    return z\n", 1))
	at = w.waitFor(at, "sleeping\n")
	w.ctrlC()
	at = w.waitFor(at, "^C interrupting main:main (Ctrl-C again to exit)")
	at = w.waitFor(at, "── main:main · run 4 · interrupted ──")
	at = w.waitFor(at, "interrupted by the user")
	select {
	case <-w.done:
		t.Fatalf("ripple watch exited after one Ctrl-C during a run:\n%s", w.output())
	default:
	}
	w.ctrlC()
	w.waitFor(at, "ripple watch: stopped")
	if code := w.exit(); code != 0 {
		t.Errorf("exit code %d", code)
	}

	for i, line := range strings.Split(w.output(), "\n") {
		if n := len([]rune(stripSGRCodes(line))); n > cols {
			t.Errorf("line %d is %d columns wide on a %d-column terminal: %q", i+1, n, cols, line)
		}
	}
	expectNoKernels(t, dir)
}

// TestWatchNoColourOffTerminal: the text form on a pipe has no escape
// codes.
func TestWatchNoColourOffTerminal(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"main.py": watchMain, "helper.py": watchHelper})
	cmd := exec.Command(rippleBin, "watch", dir)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	must(t, cmd.Start())
	if !testenv.Poll(testenv.Deadline(t), func() bool { return strings.Contains(out.String(), "return") }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no table:\n%s", out.String())
	}
	must(t, cmd.Process.Signal(os.Interrupt))
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("escape codes on a pipe:\n%q", out.String())
	}
	if !strings.Contains(out.String(), "── main:main · run 1 · 5 recomputed") {
		t.Errorf("output:\n%s", out.String())
	}
}

const sgr0 = "\x1b[0m"

// sgr is the escape sequence watchview writes for the given SGR codes
// (one sequence per code).
func sgr(codes ...string) string {
	var b strings.Builder
	for _, c := range codes {
		b.WriteString("\x1b[" + c + "m")
	}
	return b.String()
}

func stripSGRCodes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
