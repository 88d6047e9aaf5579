package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestModuleName(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"main.py": "main", "pkg/util.py": "pkg.util", "pkg/__init__.py": "pkg", "a/b/c.py": "a.b.c",
		"./x.py": "x", "__init__.py": "", "x.txt": "", "pkg/__pycache__/m.py": "", ".venv/lib.py": "",
		"venv/a.py": "", "node_modules/a.py": "", ".hidden/a.py": "", "a.b.py": "", "my.pkg/a.py": "",
		"../x.py": "", "/abs.py": "",
	} {
		got, ok := ModuleName(p)
		if ok != (want != "") || got != want {
			t.Errorf("ModuleName(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
}

func TestModulesAndSource(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{
		"main.py": "import pkg\n", "pkg/__init__.py": "", "pkg/util.py": "u = 1\n", "pkg/sub/deep.py": "",
		"dup.py": "module\n", "dup/__init__.py": "package\n", "README.md": "",
		"__pycache__/main.cpython-311.py": "", ".venv/lib/site.py": "", "venv/x.py": "", "node_modules/y.py": "",
		".git/hooks/h.py": "", "data/readme.txt": "",
	})
	if err := os.Symlink("pkg/util.py", filepath.Join(root, "alias.py")); err != nil {
		t.Fatal(err)
	}
	mods, err := ws.Modules()
	wantErr(t, err, nil)
	var got []string
	for _, m := range mods {
		got = append(got, m.Name+"="+m.Path)
	}
	want := []string{"alias=alias.py", "dup=dup/__init__.py", "main=main.py", "pkg=pkg/__init__.py", "pkg.sub.deep=pkg/sub/deep.py", "pkg.util=pkg/util.py"}
	if len(got) != len(want) {
		t.Fatalf("Modules = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Modules[%d] = %s, want %s", i, got[i], want[i])
		}
	}

	for name, wantPath := range map[string]string{"pkg.util": "pkg/util.py", "pkg": "pkg/__init__.py", "dup": "dup/__init__.py"} {
		p, err := ws.ModulePath(name)
		wantErr(t, err, nil)
		if p != wantPath {
			t.Errorf("ModulePath(%s) = %s, want %s", name, p, wantPath)
		}
	}
	for _, bad := range []string{"nope", "pkg.nope", "", "a..b", "../x", ".venv.lib.site", "pkg/util"} {
		_, err := ws.ModulePath(bad)
		wantErr(t, err, ErrModuleNotFound)
	}
	src, err := ws.Source("dup")
	wantErr(t, err, nil)
	if src != "package\n" {
		t.Errorf("Source(dup) = %q", src)
	}
	_, err = ws.Source("missing")
	wantErr(t, err, ErrModuleNotFound)
}
