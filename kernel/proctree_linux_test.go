package kernel

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// spawnEscapees makes the kernel start two processes that leave its
// process group: a child that called setsid(), and a grandchild that did
// too and whose parent has exited (orphaned: adopted by init). Returns
// their pids, both checked alive.
func spawnEscapees(t *testing.T, k *Kernel) (setsid, orphan int) {
	t.Helper()
	setsid = atoiOK(t, reprOK(t, k, "__import__('subprocess').Popen(['sleep', '600'], start_new_session=True).pid"))
	out := reprOK(t, k, "__import__('subprocess').run([__import__('sys').executable, '-c', "+
		"'import os, subprocess; os.setsid(); print(subprocess.Popen([\"sleep\", \"600\"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)'], "+
		"capture_output=True, text=True).stdout.strip()")
	orphan = atoiOK(t, strings.Trim(out, "'"))
	for _, pid := range []int{setsid, orphan} {
		if !alive(pid) {
			t.Fatalf("process %d is not running", pid)
		}
	}
	return setsid, orphan
}

func atoiOK(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}

// A kernel's whole process tree ends with it, however it ends: a stop, a
// kill (what a restart does to a kernel that does not stop in time), or
// its own death (os._exit in user code: no clean-up of its own runs).
func TestProcessTreeEndsWithKernel(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"stop", "kill", "exit"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			k := startKernel(t)
			setsid, orphan := spawnEscapees(t, k)
			switch end {
			case "stop":
				k.Stop(context.Background())
			case "kill":
				k.kill("test kills the kernel")
				<-k.done
			case "exit":
				k.Eval(testCtx(t), "import os; os._exit(7)", nil) // fails: the kernel is gone
				<-k.done
			}
			waitGone(t, k.PID())
			waitGone(t, setsid)
			waitGone(t, orphan)
		})
	}
}

// runtime/restartKernel goes through Pool.Restart: the old kernel's tree
// ends with it.
func TestPoolRestartEndsProcessTree(t *testing.T) {
	t.Parallel()
	f := startPool(t)
	k, err := f.p.Kernel(testCtx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	setsid, orphan := spawnEscapees(t, k)
	if err := f.p.Restart(testCtx(t), 0, "test restart"); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	waitGone(t, k.PID())
	waitGone(t, setsid)
	waitGone(t, orphan)
}

// Another kernel's processes are never hit.
func TestKillTaggedSparesOthers(t *testing.T) {
	t.Parallel()
	a, b := startKernel(t), startKernel(t)
	setsidB, orphanB := spawnEscapees(t, b)
	setsidA, orphanA := spawnEscapees(t, a)
	// a's kernel process carries its tag too (its sentinel does not).
	// (The count is not checked: a's supervisor, seeing its kernel die,
	// sweeps the same tag at the same time.)
	if n := killTagged(a.tag); n == 0 {
		t.Errorf("killTagged(a) sent no signal")
	}
	<-a.done
	waitGone(t, setsidA)
	waitGone(t, orphanA)
	for _, pid := range []int{b.PID(), setsidB, orphanB} {
		if !alive(pid) {
			t.Errorf("process %d was killed", pid)
		}
	}
	if killTagged("") != 0 {
		t.Error("an empty tag matched processes")
	}
}
