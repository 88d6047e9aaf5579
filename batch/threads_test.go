package batch

import (
	"slices"
	"strings"
	"testing"
)

func TestThreadLimits(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	if got := threadLimits(1, 8, none); got != nil {
		t.Errorf("one kernel: %v, want the libraries' defaults", got)
	}
	got := threadLimits(2, 8, none)
	if len(got) != len(threadVars) || !slices.Contains(got, "OPENBLAS_NUM_THREADS=4") || !slices.Contains(got, "OMP_NUM_THREADS=4") {
		t.Errorf("2 kernels on 8 cores: %v", got)
	}
	if got := threadLimits(4, 2, none); !slices.Contains(got, "MKL_NUM_THREADS=1") {
		t.Errorf("more kernels than cores: %v, want 1 thread each", got)
	}
	userSet := func(v string) (string, bool) { return "3", v == "OPENBLAS_NUM_THREADS" }
	got = threadLimits(2, 8, userSet)
	if slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, "OPENBLAS_NUM_THREADS=") }) {
		t.Errorf("a variable the user set was overridden: %v", got)
	}
	if !slices.Contains(got, "OMP_NUM_THREADS=4") {
		t.Errorf("the others are still set: %v", got)
	}
}
