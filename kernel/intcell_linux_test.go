package kernel

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The kernel maps the interrupt cell, and the processes user code starts
// do not inherit it.
func TestInterruptCellIsNotInherited(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(k.PID()) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(maps), "ripple-interrupt") {
		t.Fatalf("the kernel has not mapped the interrupt cell:\n%s", maps)
	}
	rec := &recorder{}
	if err := k.Eval(testCtx(t), "import os\nos.system('ls -l /proc/self/fd')", rec); err != nil {
		t.Fatal(err)
	}
	if out := rec.out(); !strings.Contains(out, "0 ->") || strings.Contains(out, "ripple-interrupt") {
		t.Fatalf("a child's open files:\n%s\nwant no interrupt cell among them", out)
	}
}
