package tests

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/notebook"
)

// ripple run --notebooks on real notebooks (tests/notebooks, vendored from
// jupyter/notebook's docs) and on a copy with a broken cell: one JUnit case
// per notebook, the broken cell and line named, exit status 1, outputs
// written back valid under nbformat's schema (Debian's python3-nbformat).

// debianPython (tests/jupyter_test.go) has Debian's python3-nbformat,
// python3-nbclient and python3-ipykernel (.ci/run installs them).

// needDebianModules skips (fails under CI) without the modules in
// debianPython.
func needDebianModules(t *testing.T, modules ...string) {
	t.Helper()
	for _, m := range modules {
		if err := exec.Command(debianPython, "-c", "import "+m).Run(); err != nil {
			testenv.NeedOrSkip(t, "%s cannot import %s (apt-get install python3-%s)", debianPython, m, m)
		}
	}
}

// copyNotebooks copies the vendored notebooks into a new project dir.
func copyNotebooks(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	if slices.Contains(names, "text_annotation.ipynb") {
		names = append(slices.Clone(names), "data/births.csv") // the data it reads
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("notebooks", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// editCell rewrites the source of cell (1-based) of a notebook file.
func editCell(t *testing.T, path string, cell int, source string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]any
	if err := json.Unmarshal(data, &nb); err != nil {
		t.Fatal(err)
	}
	nb["cells"].([]any)[cell-1].(map[string]any)["source"] = source
	out, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

type junitReport struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Class   string `xml:"classname,attr"`
			File    string `xml:"file,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestRunNotebooksNamesTheBrokenCell(t *testing.T) {
	t.Parallel()
	needDebianModules(t, "nbformat")
	bin := buildBinary(t)
	dir := copyNotebooks(t, "running_code.ipynb", "mynotebook.ipynb")
	broken := filepath.Join(dir, "broken.ipynb")
	data, _ := os.ReadFile(filepath.Join(dir, "running_code.ipynb"))
	if err := os.WriteFile(broken, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Cell 6 of "Running Code" is print(a); the second line now reads a
	// name nobody defined.
	editCell(t, broken, 6, "print(a)\nprint(b)")
	junit := filepath.Join(t.TempDir(), "junit.xml")
	cmd := exec.Command(bin, "run", "--notebooks", "--project", dir, "--junit", junit, "--kernels", "2", "--python", debianPython)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("ripple run --notebooks: %v, want exit status 1\n%s", err, out)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var rep junitReport
	if err := xml.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("junit: %v\n%s", err, raw)
	}
	if rep.Tests != 3 || rep.Failures != 1 {
		t.Fatalf("junit: %d tests, %d failures, want 3 and 1\n%s", rep.Tests, rep.Failures, raw)
	}
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			switch c.File {
			case "broken.ipynb":
				if c.Failure == nil || !strings.Contains(c.Failure.Message, "cell 6, line 2: NameError: name 'b' is not defined") {
					t.Errorf("broken.ipynb: failure %+v, want cell 6, line 2 named", c.Failure)
				}
			case "running_code.ipynb", "mynotebook.ipynb":
				if c.Failure != nil || c.Error != nil {
					t.Errorf("%s did not pass: %+v %+v", c.File, c.Failure, c.Error)
				}
			default:
				t.Errorf("unexpected test case %+v", c)
			}
		}
	}
	// The outputs went back into the notebooks, as Jupyter writes them.
	check := `import sys, json, nbformat
out = {}
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    out[path.rsplit("/", 1)[-1]] = [[c.execution_count, [(o.output_type, o.get("name", o.get("ename", "")), o.get("text", o.get("evalue", ""))) for o in c.outputs]] for c in nb.cells if c.cell_type == "code"]
print(json.dumps(out, separators=(",", ":")))`
	res, err := exec.Command(debianPython, "-c", check, filepath.Join(dir, "running_code.ipynb"), broken).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat: %v\n%s", err, res)
	}
	var cells map[string][][2]json.RawMessage
	if err := json.Unmarshal(res, &cells); err != nil {
		t.Fatalf("%v: %s", err, res)
	}
	expectCell := func(nb string, i int, want string) {
		t.Helper()
		if got := string(cells[nb][i][0]) + " " + string(cells[nb][i][1]); got != want {
			t.Errorf("%s code cell %d: %.300s, want %.300s", nb, i+1, got, want)
		}
	}
	expectCell("running_code.ipynb", 1, `2 [["stream","stdout","10\n"]]`)
	expectCell("running_code.ipynb", 5, `6 [["stream","stderr","hi, stderr\n"]]`)
	expectCell("running_code.ipynb", 8, `9 [["stream","stdout","`+firstPowers()+`"]]`)
	expectCell("broken.ipynb", 1, `2 [["stream","stdout","10\n"],["error","NameError","name 'b' is not defined"]]`)
	expectCell("broken.ipynb", 2, `null []`)
}

// firstPowers is what cell 28 of "Running Code" prints: 2**i - 1 for i <
// 500, one a line, as JSON string content.
func firstPowers() string {
	var b strings.Builder
	one := big.NewInt(1)
	for i := range 500 {
		p := new(big.Int).Lsh(one, uint(i))
		b.WriteString(p.Sub(p, one).String())
		b.WriteString(`\n`)
	}
	return b.String()
}

// magicNotebook uses IPython syntax in every form the derivation rewrites.
const magicNotebook = `{"cells": [
 {"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "outputs": [], "source": ["%matplotlib inline\n", "n = 3\n", "!echo shell says {n}\n", "files = !printf 'a\\nb\\n'\n", "files"]},
 {"cell_type": "code", "execution_count": null, "id": "b", "metadata": {}, "outputs": [], "source": ["%%capture captured\n", "print('hidden')"]},
 {"cell_type": "code", "execution_count": null, "id": "c", "metadata": {}, "outputs": [], "source": ["captured.stdout"]},
 {"cell_type": "code", "execution_count": null, "id": "d", "metadata": {}, "outputs": [], "source": ["%time y = n * 2\n", "y"]}
], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
`

func TestRunNotebooksRunsIPythonMagicsOnIPython(t *testing.T) {
	t.Parallel()
	needDebianModules(t, "nbformat", "IPython")
	bin := buildBinary(t)
	dir := t.TempDir()
	writeFile(t, dir, "magic.ipynb", magicNotebook)
	cmd := exec.Command(bin, "run", "--notebooks", "magic.ipynb", "--project", dir, "--python", debianPython)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ripple run --notebooks: %v\n%s", err, out)
	}
	res, err := exec.Command(debianPython, "-c", `import sys, json, nbformat
nb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)
nbformat.validate(nb)
for c in nb.cells:
    print(c.execution_count, json.dumps([o.get("text") or o["data"]["text/plain"] for o in c.outputs]))`, filepath.Join(dir, "magic.ipynb")).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat: %v\n%s", err, res)
	}
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	want := []string{`1 ["shell says 3\r\n", "['a', 'b']"]`, `2 []`, `3 ["'hidden\\n'"]`}
	if len(lines) != 4 || !slices.Equal(lines[:3], want) || !strings.HasPrefix(lines[3], `4 ["CPU times: `) || !strings.HasSuffix(lines[3], `", "6"]`) {
		t.Errorf("outputs:\n%s\nwant %q and cell 4 with %%time's report and 6", res, want)
	}
}

// Acceptance 2 of issue 30: the vendored notebooks, and a copy with a
// broken cell, give the same outputs cell by cell (text/plain, stream text,
// error name and value, images by presence and size) executed by nbclient on
// ipykernel and run by ripple: by ripple run --notebooks, and by nbclient on
// the `ripple` kernelspec when this build has one (ripple jupyter install).

// summarize runs tests/notebooks/nbsummary.py (with --kernel: nbclient
// executes the notebook on that kernelspec first).
func summarize(t *testing.T, path string, args ...string) []json.RawMessage {
	t.Helper()
	cells, err := summary(path, args...)
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

// summary is summarize for any goroutine.
func summary(path string, args ...string) ([]json.RawMessage, error) {
	return summaryIn(os.Environ(), path, args...)
}

// summaryIn is summary with env as the environment.
func summaryIn(env []string, path string, args ...string) ([]json.RawMessage, error) {
	script, err := filepath.Abs(filepath.Join("notebooks", "nbsummary.py"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(debianPython, append(append([]string{script}, args...), path)...)
	cmd.Env = append(env, "PYDEVD_DISABLE_FILE_VALIDATION=1")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = append(out, ee.Stderr...)
		}
		return nil, fmt.Errorf("nbsummary %s %s: %w\n%s", strings.Join(args, " "), path, err, out)
	}
	var cells []json.RawMessage
	if err := json.Unmarshal(out, &cells); err != nil {
		return nil, fmt.Errorf("nbsummary %s: %w\n%s", path, err, out)
	}
	return cells, nil
}

// compareCells reports every code cell whose summaries differ.
func compareCells(t *testing.T, name, what string, want, got []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d code cells under %s, %d under ipykernel", name, len(got), what, len(want))
		return
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Errorf("%s code cell %d differs:\n  ipykernel: %.400s\n  %s: %.400s", name, i+1, want[i], what, got[i])
		}
	}
}

func TestNotebooksEquivalentToIPykernel(t *testing.T) {
	t.Parallel()
	needDebianModules(t, "nbformat", "nbclient", "ipykernel", "matplotlib", "pandas")
	bin := buildBinary(t)
	names := []string{"running_code.ipynb", "mynotebook.ipynb", "text_annotation.ipynb"}
	ripple := copyNotebooks(t, names...)
	reference := copyNotebooks(t, names...)
	for _, dir := range []string{ripple, reference} {
		data, _ := os.ReadFile(filepath.Join(dir, "running_code.ipynb"))
		writeFile(t, dir, "broken.ipynb", string(data))
		editCell(t, filepath.Join(dir, "broken.ipynb"), 6, "print(a)\nprint(b)")
	}
	names = append(names, "broken.ipynb")
	// One matplotlib cache for every run: the fonts it lists decide the
	// figures' sizes, and a user's cache may predate fonts installed since.
	mplEnv := "MPLCONFIGDIR=" + t.TempDir()

	want := make(map[string][]json.RawMessage)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			cells, err := summaryIn(append(os.Environ(), mplEnv), filepath.Join(reference, n), "--kernel", "python3")
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			want[n] = cells
			mu.Unlock()
		})
	}
	cmd := exec.Command(bin, "run", "--notebooks", "--project", ripple, "--kernels", "2", "--python", debianPython)
	cmd.Dir = ripple
	cmd.Env = append(os.Environ(), mplEnv)
	out, err := cmd.CombinedOutput()
	wg.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("ripple run --notebooks: %v, want exit status 1 (broken.ipynb)\n%s", err, out)
	}
	for _, n := range names {
		compareCells(t, n, "ripple run --notebooks", want[n], summarize(t, filepath.Join(ripple, n)))
	}

	t.Run("kernelspec", func(t *testing.T) {
		// nbclient on the `ripple` kernelspec (ripple jupyter install,
		// tests/jupyter_test.go's set-up), each notebook in a fresh copy.
		env, _ := jupyterEnv(t)
		env = append(env, mplEnv)
		installKernelspec(t, bin, env)
		kernelDir := copyNotebooks(t, names[:3]...)
		data, _ := os.ReadFile(filepath.Join(kernelDir, "running_code.ipynb"))
		writeFile(t, kernelDir, "broken.ipynb", string(data))
		editCell(t, filepath.Join(kernelDir, "broken.ipynb"), 6, "print(a)\nprint(b)")
		for _, n := range names {
			got, err := summaryIn(env, filepath.Join(kernelDir, n), "--kernel", "ripple")
			if err != nil {
				t.Fatal(err)
			}
			compareCells(t, n, "nbclient on ripple", want[n], got)
		}
	})
}

// watchNotebook's second cell is slow and logs each run of it to a file
// outside the project; its third reads the second's x.
func watchNotebook(log string) string {
	return `{"cells": [
 {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Watched"]},
 {"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "outputs": [], "source": ["import time\n", "time.sleep(0.5)\n", "x = 2\n", "_ = open('` + log + `', 'a').write('ran\\n')"]},
 {"cell_type": "code", "execution_count": null, "id": "b", "metadata": {}, "outputs": [], "source": ["y = x * 10\n", "print('y is', y)"]}
], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
`
}

func TestRunNotebooksWatchRerunsOnlyTheEditedCell(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "runs.log")
	writeFile(t, dir, "nb.ipynb", watchNotebook(log))
	cmd := exec.Command(bin, "run", "--notebooks", "--watch", "--project", dir)
	cmd.Dir = dir
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	path := filepath.Join(dir, "nb.ipynb")
	outputOf := func(cell int) string {
		var nb struct {
			Cells []struct {
				Outputs []struct {
					Text []string `json:"text"`
				} `json:"outputs"`
			} `json:"cells"`
		}
		data, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(data, &nb) != nil || len(nb.Cells) <= cell {
			return ""
		}
		var b strings.Builder
		for _, o := range nb.Cells[cell].Outputs {
			b.WriteString(strings.Join(o.Text, ""))
		}
		return b.String()
	}
	testenv.Eventually(t, "the first run's output in the notebook", func() bool { return outputOf(2) == "y is 20\n" })

	editCell(t, path, 3, "y = x * 7\nprint('y is', y)")
	testenv.Eventually(t, "the edited cell's new output in the notebook", func() bool { return outputOf(2) == "y is 14\n" })
	if data, _ := os.ReadFile(log); string(data) != "ran\n" {
		t.Errorf("the slow cell ran %q: want once (the edit touched only cell 3)", data)
	}
	if !strings.Contains(stdout.String(), "nb.ipynb passed") {
		t.Errorf("stdout %q: want a line per run", stdout.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("ripple run --notebooks --watch after Ctrl-C: %v, want exit status 0\n%s", err, stderr.String())
	}
}

// The web page shows a notebook as the script ripple runs
// (web/static/notebook.js): line for line the Go derivation's, so that the
// values the server sends for a notebook's lines land beside them. Checked
// with node on the vendored notebooks and one with IPython syntax (whose
// rewritten lines the page shows as typed, on the same lines).
func TestPageShowsANotebookAsItsScript(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.NeedOrSkip(t, "node is not installed (apt-get install nodejs)")
	}
	module, err := filepath.Abs(filepath.Join("..", "web", "static", "notebook.js"))
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"magic.ipynb": magicNotebook, "broken JSON": "{"}
	for _, n := range []string{"running_code.ipynb", "mynotebook.ipynb"} {
		data, err := os.ReadFile(filepath.Join("notebooks", n))
		if err != nil {
			t.Fatal(err)
		}
		texts[n] = string(data)
	}
	for name, text := range texts {
		cmd := exec.Command(node, "--input-type=module", "-e", `import { notebookScript } from `+strconv.Quote("file://"+module)+`;
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
process.stdout.write(notebookScript(Buffer.concat(chunks).toString("utf8")));`)
		cmd.Stdin = strings.NewReader(text)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node notebook.js on %s: %v", name, err)
		}
		page := strings.Split(string(out), "\n")
		nb, err := notebook.Parse([]byte(text))
		if err != nil {
			if len(page) != 2 || !strings.HasPrefix(page[0], "# ripple: this notebook is not JSON") {
				t.Errorf("%s: the page shows %q, want one line saying it is not JSON", name, out)
			}
			continue
		}
		script := strings.Split(nb.Script().Source, "\n")
		if len(page) != len(script) {
			t.Errorf("%s: the page shows %d lines, ripple runs %d", name, len(page), len(script))
			continue
		}
		for i := range script {
			// IPython lines differ in text (the page shows them as typed,
			// a cell magic's body included); the separators never do.
			ipython := !strings.HasPrefix(script[i], "# %% [cell ") &&
				(strings.Contains(script[i], "get_ipython().") || name == "magic.ipynb")
			if page[i] != script[i] && !ipython {
				t.Errorf("%s line %d: the page shows %q, ripple runs %q", name, i+1, page[i], script[i])
			}
		}
	}
}

// ripple serve: a notebook is one of the project's modules (the page's
// Run as script), and nb:__main__ runs its cells with a value per
// statement whose line maps back to its cell and line.
func TestServeRunsANotebookAsAScript(t *testing.T) {
	t.Parallel()
	s := serveProject(t, map[string]string{"nb.ipynb": watchNotebook(filepath.Join(t.TempDir(), "log")), "helper.py": "K = 3\n"}, engine.Config{})
	c, init := connect(t, s.url, "nb-client")
	if !slices.Contains(init.Modules, "nb") {
		t.Fatalf("modules %v: want the notebook's module nb", init.Modules)
	}
	_, run := c.newContext("nb:__main__")
	if run.failed != nil {
		t.Fatalf("nb:__main__ failed: %+v", run.failed)
	}
	y := run.updates.Latest("nb:__main__/y")
	if y == nil || y.Payload.Preview != "20" || y.Range == nil {
		t.Fatalf("y: %+v, want 20 with its range", y)
	}
	nb, err := notebook.Parse([]byte(watchNotebook("")))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := nb.Script().Origin(y.Range.Start.Line + 1); !ok || o.String() != "cell 3, line 1" {
		t.Errorf("y's line %d maps to %v, want cell 3, line 1", y.Range.Start.Line+1, o)
	}
	if !strings.Contains(run.output, "y is 20") {
		t.Errorf("output %q", run.output)
	}
}

// A cell with a syntax error and a notebook that is not nbformat 4 are
// errors naming the cell and line, or what is wrong; no cell ran, so only
// the failing cell gets a count, with the SyntaxError as its output.
func TestRunNotebooksReportsSyntaxErrorsAndBadNotebooks(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	writeFile(t, dir, "s.ipynb", `{"cells": [
 {"cell_type": "code", "execution_count": 4, "id": "a", "metadata": {}, "outputs": [], "source": ["x = 1"]},
 {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["text"]},
 {"cell_type": "code", "execution_count": null, "id": "b", "metadata": {}, "outputs": [], "source": ["y = 2\n", "z = (\n"]}
], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`)
	writeFile(t, dir, "old.ipynb", `{"nbformat": 3, "worksheets": []}`)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	cmd := exec.Command(bin, "run", "--notebooks", "--project", dir, "--junit", junit)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("ripple run --notebooks: %v, want exit status 1\n%s", err, out)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var rep junitReport
	if err := xml.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	errs := map[string]string{}
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			if c.Error != nil {
				errs[c.File] = c.Error.Message
			}
		}
	}
	if !strings.Contains(errs["s.ipynb"], "cell 3, line 2: SyntaxError: '(' was never closed") ||
		!strings.Contains(errs["old.ipynb"], "nbformat 3: ripple reads nbformat 4") {
		t.Errorf("errors %q\n%s", errs, raw)
	}
	var nb struct {
		Cells []struct {
			Count   *int `json:"execution_count"`
			Outputs []struct {
				EName string `json:"ename"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	mustDecode(t, []byte(readFile(t, dir, "s.ipynb")), &nb)
	if nb.Cells[0].Count != nil || nb.Cells[2].Count == nil || *nb.Cells[2].Count != 1 ||
		len(nb.Cells[2].Outputs) != 1 || nb.Cells[2].Outputs[0].EName != "SyntaxError" {
		t.Errorf("cells after a syntax error: %s", readFile(t, dir, "s.ipynb"))
	}
}
