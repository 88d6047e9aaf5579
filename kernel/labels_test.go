package kernel_test

import (
	"context"
	"errors"
	"slices"
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
