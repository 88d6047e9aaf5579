package batch_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/batch"
)

// entryLines lists entries as "id path:line [skip]".
func entryLines(es []batch.Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.ID() + " " + e.Location())
		b.WriteString("\n")
	}
	return b.String()
}

func discover(t *testing.T, root string, opts batch.DiscoverOptions) ([]batch.Entry, error) {
	t.Helper()
	return batch.Discover(context.Background(), python(t), root, opts)
}

func TestDiscoverEntries(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"main.py":   "from helper import add\n\n\ndef main():\n    x = 1\n\n\nclass Job:\n    def run(self):\n        pass\n\n\nalias = main\n",
		"helper.py": "def add(a, b):\n    return a + b\n",
		"broken.py": "def main(:\n",
	})
	es, err := discover(t, root, batch.DiscoverOptions{Entries: []string{"main:Job.run", "helper:add", "main:alias", "broken:main", "main:main"}})
	if err != nil {
		t.Fatal(err)
	}
	// An assignment (alias) and a module that does not parse are left for
	// the engine to judge: their line is unknown.
	want := `broken:main broken.py
helper:add helper.py:1
main:alias main.py
main:main main.py:4
main:Job.run main.py:9
`
	if got := entryLines(es); got != want {
		t.Errorf("entries:\n%s\nwant:\n%s", got, want)
	}

	es, err = discover(t, root, batch.DiscoverOptions{})
	if err != nil || entryLines(es) != "main:main main.py:4\n" {
		t.Errorf("default entry: %v %q", err, entryLines(es))
	}
}

func TestDiscoverErrors(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"main.py":   "def other():\n    pass\n",
		"tool.py":   "def run():\n    pass\n",
		"test_e.py": "def helper():\n    pass\n",
	})
	empty := project(t, map[string]string{"lib.py": "x = 1\n"})
	cases := []struct {
		name string
		root string
		opts batch.DiscoverOptions
		err  error
		want string
	}{
		{"bad pointer", root, batch.DiscoverOptions{Entries: []string{"nocolon"}}, batch.ErrUsage, `--entry "nocolon"`},
		{"missing module", root, batch.DiscoverOptions{Entries: []string{"nosuch:main"}}, batch.ErrUsage, "module nosuch is not in the project"},
		{"missing function", root, batch.DiscoverOptions{Entries: []string{"tool:nope"}}, batch.ErrUsage, "tool.py defines no nope"},
		{"missing method", root, batch.DiscoverOptions{Entries: []string{"tool:run.x"}}, batch.ErrUsage, "tool.py defines no run.x"},
		{"default without main.py", empty, batch.DiscoverOptions{}, batch.ErrNoEntries, "has no main.py"},
	}
	for _, c := range cases {
		_, err := discover(t, c.root, c.opts)
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %v naming %q", c.name, err, c.err, c.want)
		}
	}
	// PROTOCOL.md 7.1: a main.py without a function main runs as a script
	// by default, and module:__main__ is an entry like any other.
	for _, opts := range []batch.DiscoverOptions{{}, {Entries: []string{"main:__main__"}}} {
		es, err := discover(t, root, opts)
		if err != nil || entryLines(es) != "main:__main__ main.py:1\n" {
			t.Errorf("entries of %+v: %v %q, want main:__main__", opts, err, entryLines(es))
		}
	}
}

func TestDiscoverBrokenInterpreter(t *testing.T) {
	t.Parallel()
	py := python(t)
	py.Path = filepath.Join(t.TempDir(), "no-python")
	_, err := batch.Discover(context.Background(), py, fixture, batch.DiscoverOptions{Entries: []string{"main:main"}})
	if !errors.Is(err, batch.ErrDiscovery) || !strings.Contains(err.Error(), "no-python") {
		t.Errorf("err = %v, want ErrDiscovery naming the interpreter", err)
	}
}
