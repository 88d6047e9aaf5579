package kernel

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// A server killed with SIGKILL cannot clean up: its kernel must notice on
// its own (connection closed, the parent-death signal, the sentinel) and
// leave no process behind, children of user code included, also those
// that left its process group (setsid) or were orphaned.
func TestSigkilledServerLeavesNoKernel(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold-kernel", "RIPPLE_TEST_ROOT="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var kernel, child, setsid, orphan int
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, scanErr := fmt.Sscanf(line, "kernel %d child %d setsid %d orphan %d", &kernel, &child, &setsid, &orphan); err != nil || scanErr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q (%v, %v)", line, err, scanErr)
	}
	if !alive(kernel) || !alive(child) || !alive(setsid) || !alive(orphan) {
		t.Fatalf("kernel %d or its processes %d, %d (setsid), %d (orphan) are not running", kernel, child, setsid, orphan)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitGone(t, kernel)
	waitGone(t, child)
	waitGone(t, setsid)
	waitGone(t, orphan)
}
