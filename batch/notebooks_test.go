package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindNotebooksNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, p := range []string{"a.ipynb", "sub/b.ipynb", "sub/.ipynb_checkpoints/b-checkpoint.ipynb", "x.py", "My Nb.ipynb", "odd/01-intro.ipynb"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := findNotebooks(root, []string{"sub", filepath.Join(root, "a.ipynb"), "a.ipynb"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		got = append(got, en.Path+"="+en.ID())
	}
	if strings.Join(got, " ") != "a.ipynb=a:__main__ sub/b.ipynb=sub.b:__main__" {
		t.Errorf("entries %v", got)
	}
	for _, tc := range []struct {
		paths []string
		err   error
		want  string
	}{
		{[]string{".."}, ErrUsage, "not inside the project"},
		{[]string{"x.py"}, ErrUsage, "not a notebook"},
		{[]string{"missing.ipynb"}, ErrUsage, "missing.ipynb"},
		{[]string{"My Nb.ipynb"}, ErrUsage, "notebook My Nb.ipynb: its path is not a Python module name"},
		{[]string{"odd"}, ErrUsage, "odd/01-intro.ipynb: its path is not a Python module name"},
		{[]string{"sub/.ipynb_checkpoints/.."}, nil, ""},
	} {
		_, err := findNotebooks(root, tc.paths)
		if tc.err == nil {
			if err != nil {
				t.Errorf("%v: %v", tc.paths, err)
			}
			continue
		}
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("findNotebooks(%v) = %v, want %v naming %q", tc.paths, err, tc.err, tc.want)
		}
	}
	empty := t.TempDir()
	if _, err := findNotebooks(empty, nil); !errors.Is(err, ErrNoNotebooks) {
		t.Errorf("a project without notebooks: %v, want ErrNoNotebooks", err)
	}
}
