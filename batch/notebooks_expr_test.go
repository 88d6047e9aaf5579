package batch

import "testing"

func TestIsExpressionStatementAsIPythonShowsValues(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]bool{
		"x":                         true,
		"f(a=1, b=[2])":             true,
		"x == 1":                    true,
		"x <= 1 or y != 2":          true,
		"'a=b'":                     true,
		"(y := 3)":                  true,
		"d['k'] # x = 1":            true,
		"x = 1":                     false,
		"a.b = [1]":                 false,
		"a[0] += 1":                 false,
		"n: int = 3":                false,
		"x >>= 2":                   false,
		"ax.plot(x);":               false,
		"ax.plot(x);  # silenced":   false,
		"import os":                 false,
		"for i in r:\n    print(i)": false,
		"@dec\ndef f(): pass":       false,
		"del x":                     false,
		`"""doc = 1"""`:             true,
		"f(\n  x=1,\n)":             true,
		"obj.attr = f(\n  x=1,\n)":  false,
		"returned_value":            true,
		"print('x;')":               true,
	} {
		if got := isExpressionStatement(src); got != want {
			t.Errorf("isExpressionStatement(%q) = %v, want %v", src, got, want)
		}
	}
}
