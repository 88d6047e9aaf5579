package workspace

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// IgnoredDir reports whether a directory with this name is left out of the
// project's modules and of watching: hidden folders, __pycache__, .venv,
// venv and node_modules (PROTOCOL.md 5.1). Reading and writing files in them
// through the workspace still works.
func IgnoredDir(name string) bool {
	switch name {
	case "__pycache__", "venv", "node_modules":
		return true
	}
	return strings.HasPrefix(name, ".")
}

// Module is one project module: its dotted name and its file.
type Module struct {
	Name string // "pkg.util"; a package is named by its folder: "pkg"
	Path string // "pkg/util.py", "pkg/__init__.py"
}

// ModuleName returns the dotted module name of a project-relative path:
// "pkg/util.py" -> "pkg.util", "pkg/__init__.py" -> "pkg". ok is false for
// paths that are not modules: not "*.py", inside an ignored folder, with a
// name Python could not import as a dotted name (an empty part or a dot in a
// folder or file stem), or the root's own __init__.py.
func ModuleName(p string) (name string, ok bool) {
	p = path.Clean(p)
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	stem, found := strings.CutSuffix(p, ".py")
	if !found {
		if stem, found = strings.CutSuffix(p, NotebookExt); !found || path.Base(stem) == "__init__" {
			return "", false
		}
	}
	parts := strings.Split(stem, "/")
	for i, part := range parts {
		if part == "" || strings.Contains(part, ".") || (i < len(parts)-1 && IgnoredDir(part)) {
			return "", false
		}
	}
	if parts[len(parts)-1] == "__init__" {
		parts = parts[:len(parts)-1]
		if len(parts) == 0 {
			return "", false
		}
	}
	return strings.Join(parts, "."), true
}

// modulePaths returns the two files a dotted name can live in, in the order
// Python's path finder prefers them: the package first.
func modulePaths(name string) (pkg, mod string, ok bool) {
	parts := strings.Split(name, ".")
	for _, part := range parts {
		if part == "" || strings.Contains(part, "/") || part == "__init__" || IgnoredDir(part) {
			return "", "", false
		}
	}
	base := strings.Join(parts, "/")
	return base + "/__init__.py", base + ".py", true
}

// Modules lists the project's modules, sorted by name: every "*.py" below the
// root outside ignored folders (see IgnoredDir). When a package and a module
// share a name (pkg/__init__.py and pkg.py), the package wins, as in Python.
// Symlinked files count if they stay inside the root; symlinked folders are
// not followed.
func (ws *Workspace) Modules() ([]Module, error) {
	byName := make(map[string]Module)
	err := fs.WalkDir(ws.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // an unreadable folder has no modules we can use
		}
		if d.IsDir() {
			if p != "." && IgnoredDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		name, ok := ModuleName(p)
		if !ok {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			rel, err := ws.resolve(p)
			if err != nil {
				return nil
			}
			if fi, err := ws.root.Stat(rel); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		if prev, dup := byName[name]; dup && (path.Base(prev.Path) == "__init__.py" || isNotebook(p)) {
			return nil
		}
		byName[name] = Module{Name: name, Path: p}
		return nil
	})
	if err != nil {
		return nil, fsError(".", err)
	}
	mods := make([]Module, 0, len(byName))
	for _, m := range byName {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Name, b.Name) })
	return mods, nil
}

// ModulePath returns the project-relative path of the module with the dotted
// name, looking for the package's __init__.py first, then the module file,
// on disk or in an open buffer. ErrModuleNotFound if neither exists.
func (ws *Workspace) ModulePath(name string) (string, error) {
	pkg, mod, ok := modulePaths(name)
	if !ok {
		return "", newError(ErrModuleNotFound, "", fmt.Sprintf("%q is not a valid dotted module name", name))
	}
	for _, p := range [...]string{pkg, mod, notebookPath(mod)} {
		rel, err := ws.resolve(p)
		if err != nil {
			continue
		}
		ws.mu.Lock()
		_, open := ws.buffers[rel]
		ws.mu.Unlock()
		if open {
			return p, nil
		}
		if fi, err := ws.root.Stat(rel); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", newError(ErrModuleNotFound, "", fmt.Sprintf("module %s: neither %s nor %s exists", name, mod, pkg))
}

// Source returns the source the kernel should compile for the module with
// the dotted name: the open buffer's content if the module's file is open
// (unsaved edits run), else the file on disk.
func (ws *Workspace) Source(name string) (string, error) {
	p, err := ws.ModulePath(name)
	if err != nil {
		return "", err
	}
	rel, err := ws.resolve(p)
	if err != nil {
		return "", err
	}
	ws.mu.Lock()
	b := ws.buffers[rel]
	var content string
	if b != nil {
		content = b.content
	}
	ws.mu.Unlock()
	if b == nil {
		data, err := ws.readFile(rel, p)
		if err != nil {
			return "", fmt.Errorf("module %s: %w", name, err)
		}
		content = string(data)
	}
	if isNotebook(p) {
		return notebookSource(p, content), nil
	}
	return content, nil
}
