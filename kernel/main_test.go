package kernel

import (
	"context"
	"sync"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

var testPython = sync.OnceValues(func() (Interpreter, error) {
	return FindPython(context.Background(), "", ".")
})

// python returns the interpreter the tests run kernels on.
func python(t testing.TB) Interpreter {
	t.Helper()
	p, err := testPython()
	if err != nil {
		t.Fatalf("no python for the tests: %v", err)
	}
	return p
}
