package notebook_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/notebook"
)

// small is a notebook with every cell type, ids, metadata and outputs.
const small = `{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "m1",
   "metadata": {"tags": ["intro"]},
   "source": ["# Title\n", "Some <b>text</b>"]
  },
  {
   "cell_type": "code",
   "execution_count": 7,
   "id": "c1",
   "metadata": {"scrolled": true},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["old\n"]}],
   "source": ["x = 1\n", "print(x)"]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "c2",
   "metadata": {},
   "outputs": [],
   "source": "y = x + 1\ny"
  }
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "custom": {"é": "<&>"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
`

func TestScriptMapsEveryLineToItsCell(t *testing.T) {
	t.Parallel()
	nb, err := notebook.Parse([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	s := nb.Script()
	want := "# %% [cell 1] markdown\n# # Title\n# Some <b>text</b>\n" +
		"# %% [cell 2]\nx = 1\nprint(x)\n" +
		"# %% [cell 3]\ny = x + 1\ny\n"
	if s.Source != want {
		t.Fatalf("script:\n%s\nwant:\n%s", s.Source, want)
	}
	for _, tc := range []struct {
		line     int
		cell, cl int
		id       string
		code     bool
		name     string
	}{
		{1, 0, 0, "m1", false, "cell 1"},
		{3, 0, 2, "m1", false, "cell 1, line 2"},
		{6, 1, 2, "c1", true, "cell 2, line 2"},
		{9, 2, 2, "c2", true, "cell 3, line 2"},
	} {
		o, ok := s.Origin(tc.line)
		if !ok || o.Cell != tc.cell || o.Line != tc.cl || o.CellID != tc.id || o.Code != tc.code || o.String() != tc.name {
			t.Errorf("Origin(%d) = %+v %v, want cell %d line %d id %s (%s)", tc.line, o, ok, tc.cell, tc.cl, tc.id, tc.name)
		}
		if back, ok := s.Line(tc.cell, tc.cl); !ok || back != tc.line {
			t.Errorf("Line(%d, %d) = %d %v, want %d", tc.cell, tc.cl, back, ok, tc.line)
		}
	}
	if _, ok := s.Origin(10); ok {
		t.Error("Origin past the end: ok")
	}
	if s.Lines() != 9 {
		t.Errorf("Lines = %d, want 9", s.Lines())
	}
}

func TestIPythonSyntaxBecomesIPythonCallsLineForLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cell, want string }{
		{"%matplotlib inline\nx = 1", "get_ipython().run_line_magic('matplotlib', 'inline')\nx = 1"},
		{"!ls -l 'a b'", `get_ipython().system('ls -l \'a b\'')`},
		{"files = !ls", "files = get_ipython().getoutput('ls')"},
		{"out = !!ls", "out = get_ipython().getoutput('ls')"},
		{"t = %timeit -o f()", "t = get_ipython().run_line_magic('timeit', '-o f()')"},
		{"def f():\n    listing = !ls\n    return listing", "def f():\n    listing = get_ipython().getoutput('ls')\n    return listing"},
		{"%%bash\necho hi\necho 'x'", `get_ipython().run_cell_magic('bash', '', 'echo hi\necho \'x\'\n')` + "\n# echo hi\n# echo 'x'"},
		{"x != y\na %= 2\nb = %s", "x != y\na %= 2\nb = get_ipython().run_line_magic('s', '')"},
	} {
		nb, err := notebook.Parse([]byte(`{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null, "source": ` + quote(tc.cell) + `}]}`))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.TrimPrefix(nb.Script().Source, "# %% [cell 1]\n")
		if got != tc.want+"\n" {
			t.Errorf("cell %q:\n got %q\nwant %q", tc.cell, got, tc.want+"\n")
		}
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestParseNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, want string }{
		{`[1]`, "not a JSON object"},
		{`{"cells": []}`, `"nbformat" is missing`},
		{`{"nbformat": 3, "cells": []}`, "nbformat 3: ripple reads nbformat 4"},
		{`{"nbformat": 4}`, `"cells" is missing`},
		{`{"nbformat": 4, "cells": [{"source": ""}]}`, `cell 1: "cell_type" is missing`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "source": ""}, {"cell_type": "sql", "source": ""}]}`, `cell 2: cell_type "sql"`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "source": 3}]}`, `cell 1: "source": want a string or a list of strings`},
		{`{"nbformat": 4, "cells": [{"cell_type": "code", "id": 3, "source": ""}]}`, `cell 1: "id" is not a string`},
	} {
		_, err := notebook.Parse([]byte(tc.doc))
		if !errors.Is(err, notebook.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want ErrInvalid with %q", tc.doc, err, tc.want)
		}
	}
}

func TestMarshalOfAnUnchangedNotebookIsJupytersFile(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"running_code.ipynb", "mynotebook.ipynb"} {
		data, err := os.ReadFile(filepath.Join("..", "tests", "notebooks", name))
		if err != nil {
			t.Fatal(err)
		}
		nb, err := notebook.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		out, err := nb.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, data) {
			t.Errorf("%s: Marshal differs from the file Jupyter wrote (%d bytes, want %d)", name, len(out), len(data))
		}
	}
}

func TestSetOutputsKeepsEverythingElse(t *testing.T) {
	t.Parallel()
	nb, err := notebook.Parse([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	outs := []notebook.Output{
		notebook.Stream("stdout", "1\n"),
		{OutputType: "execute_result", Data: map[string]any{"text/plain": "2"}, ExecutionCount: 2},
		{OutputType: "display_data", Data: map[string]any{"text/plain": "<Figure>", "image/png": "iVBORw0KGgo=\n"}},
		notebook.Error("NameError", "name 'z' is not defined", []string{"Traceback", "NameError: name 'z' is not defined"}),
	}
	if err := nb.SetOutputs(1, outs, 2); err != nil {
		t.Fatal(err)
	}
	if err := nb.SetOutputs(0, outs, 1); !errors.Is(err, notebook.ErrInvalid) || !strings.Contains(err.Error(), "cell 1 is a markdown cell") {
		t.Errorf("SetOutputs on markdown = %v", err)
	}
	if err := nb.SetOutputs(1, []notebook.Output{{OutputType: "stream", Name: "stdin"}}, 1); err == nil || !strings.Contains(err.Error(), `stream output named "stdin"`) {
		t.Errorf("SetOutputs of a bad stream = %v", err)
	}
	path := filepath.Join(t.TempDir(), "n.ipynb")
	if err := notebook.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{`"id": "m1"`, `"tags": [`, `"scrolled": true`, `"é": "<&>"`, `"Some <b>text</b>"`,
		`"execution_count": 2`, `"ename": "NameError"`, `"image/png": [`, `"source": "y = x + 1\ny"`} {
		if !strings.Contains(text, want) {
			t.Errorf("written notebook lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, `"old\n"`) {
		t.Error("the old output is still there")
	}
	again, err := notebook.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Script().Source; got != nb.Script().Source {
		t.Errorf("the script changed with the outputs:\n%s", got)
	}
	validate(t, path)
}

// validate checks path against nbformat's own schema (Debian's
// python3-nbformat).
func validate(t *testing.T, path string) {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import nbformat").Run(); err != nil {
		testenv.NeedOrSkip(t, "%s cannot import nbformat (apt-get install python3-nbformat)", python)
	}
	out, err := exec.Command(python, "-c", `import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)
nbformat.validate(nb)
print("valid", nb.nbformat, nb.nbformat_minor)`, path).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "valid 4") {
		t.Fatalf("nbformat.validate(%s): %v\n%s", path, err, out)
	}
}

func TestWrittenOutputsOfAVendoredNotebookValidate(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "tests", "notebooks", "running_code.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	nb, err := notebook.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	nb.ClearOutputs()
	for _, c := range nb.Cells {
		if c.Type == notebook.CodeCell {
			if err := nb.SetOutputs(c.Index, []notebook.Output{notebook.Stream("stderr", "é\n"),
				{OutputType: "execute_result", Data: map[string]any{"text/plain": "x", "application/json": map[string]any{"a": 1}}, ExecutionCount: c.Number()}}, c.Number()); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "running_code.ipynb")
	if err := notebook.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	validate(t, path)
}
