package kernel_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/kernel"
)

// StatementIDs reads the ids the kernel gives a function's statements
// (5.2: definition labels, #k, repeats) from the source alone, without
// running it.
func TestStatementIDs(t *testing.T) {
	py, err := kernel.FindPython(context.Background(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := "import os\nraise SystemExit(3)\ndef main():\n    x = 1\n    y = x + 1\n    x = 2\n    print(x)\n    return y\n" +
		"class C:\n    def m(self):\n        a, b = 1, 2\n        a += 1\n"
	ids, err := kernel.StatementIDs(context.Background(), py, "m", src)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{
		"main":     {"m:main/x", "m:main/y", "m:main/x#2", "m:main/#1", "m:main/return"},
		"C.m":      {"m:C.m/a,b", "m:C.m/a"},
		"__main__": {"m:__main__/os", "m:__main__/#1", "m:__main__/main", "m:__main__/C"},
	} {
		if !slices.Equal(ids[q], want) {
			t.Errorf("%s: got %v, want %v", q, ids[q], want)
		}
	}
	if _, err := kernel.StatementIDs(context.Background(), py, "m", "def f(:\n"); !errors.Is(err, kernel.ErrNoLabels) {
		t.Errorf("syntax error: got %v, want ErrNoLabels", err)
	}
}

// StatementsAffected: an edit reaches a running statement when it changes
// the statement, one before it, or what it can reach in the module; other
// edits of the module do not.
func TestStatementsAffected(t *testing.T) {
	py, err := kernel.FindPython(context.Background(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := "K = 1\ndef helper():\n    return K\ndef other():\n    return 2\ndef main():\n    a = 1\n    b = helper()\n    c = other()\n" +
		"class C:\n    def m(self):\n        x = self.h()\n        y = 2\n    def h(self):\n        return 1\n    def g(self):\n        return 1\n"
	main := []kernel.FrameStatements{{Qualname: "main", IDs: []string{"m:main/b"}}}
	method := []kernel.FrameStatements{{Qualname: "C.m", IDs: []string{"m:C.m/x"}}}
	for _, c := range []struct {
		name, from, to string
		frames         []kernel.FrameStatements
		want           bool
	}{
		{"a later statement", "c = other()", "c = other() + 1", main, false},
		{"a function it does not reach", "return 2", "return 3", main, false},
		{"a new function", "K = 1\n", "K = 1\ndef z():\n    pass\n", main, false},
		{"the function it calls", "return K", "return K + 1", main, true},
		{"a global its callee reads", "K = 1", "K = 2", main, true},
		{"the statement", "b = helper()", "b = helper() * 2", main, true},
		{"a statement before it", "a = 1", "a = 5", main, true},
		{"a syntax error", "K = 1", "K = (", main, true},
		{"the frame's parameters", "def main():", "def main(q=1):", main, true},
		{"a later statement of a method", "y = 2", "y = 3", method, false},
		{"a method it calls", "def h(self):\n        return 1", "def h(self):\n        return 5", method, true},
		{"a method it does not mention", "def g(self):\n        return 1", "def g(self):\n        return 5", method, false},
	} {
		got, why, err := kernel.StatementsAffected(context.Background(), py, "m", old, strings.Replace(old, c.from, c.to, 1), c.frames)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: affected %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}

// The cost of the static reads an engine call may wait for (a 2008 check
// on an id no run reported; the check after an edit of a running frame's
// module, which runs while the run is already asked to stop).
func BenchmarkStatementIDs(b *testing.B) {
	py, err := kernel.FindPython(context.Background(), "", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	src := benchSource()
	for b.Loop() {
		if _, err := kernel.StatementIDs(context.Background(), py, "m", src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStatementsAffected(b *testing.B) {
	py, err := kernel.FindPython(context.Background(), "", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	src := benchSource()
	edited := strings.Replace(src, "x0 = 0", "x0 = 1", 1)
	frames := []kernel.FrameStatements{{Qualname: "main", IDs: []string{"m:main/x500"}}}
	for b.Loop() {
		if _, _, err := kernel.StatementsAffected(context.Background(), py, "m", src, edited, frames); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSource is a module with a 1,000-statement main, like the engine
// benchmark's.
func benchSource() string {
	var sb strings.Builder
	sb.WriteString("def main():\n")
	for i := range 1000 {
		sb.WriteString("    x" + strconv.Itoa(i) + " = " + strconv.Itoa(i) + "\n")
	}
	return sb.String()
}
