// Command sizes reports the largest Python modules, classes and functions
// of the kernel's package and the largest Go functions of the module,
// against the sizes a reader can hold: a Python module over 700 lines, a
// class over 500, a function over 80; a Go function over 100. Tests and
// generated code are left out. It also prints a reader's map of the
// kernel's package: each module with the first line of its docstring.
//
// It is information, not a check: .ci/run prints it and goes on, and
// where an exception is right the package doc says why. Run it from the
// repository root:
//
//	go run ./bench/sizes [-top 10] [-python python3]
//
// The Python side is measured by pysizes.py (embedded) with the
// interpreter's ast module, the Go side with go/parser.
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed pysizes.py
var pysizes []byte

// The limits: a unit over its limit is listed above the threshold line.
const (
	pyModuleLimit   = 700
	pyClassLimit    = 500
	pyFunctionLimit = 80
	goFunctionLimit = 100
)

// kernelPackage is the kernel's Python package; kernelDir is measured
// instead while the package does not exist.
const (
	kernelPackage = "kernel/python/ripple_kernel"
	kernelDir     = "kernel/python"
)

func main() {
	top := flag.Int("top", 10, "units listed under each threshold line (all those over it are listed)")
	python := flag.String("python", "python3", "the Python `interpreter` that measures the kernel's modules")
	flag.Parse()
	if err := run(os.Stdout, *python, *top); err != nil {
		fmt.Fprintln(os.Stderr, "bench/sizes:", err)
		os.Exit(1)
	}
}

// unit is a module, class or function and its size in lines.
type unit struct {
	Path  string `json:"path"`
	Line  int    `json:"line"`
	Name  string `json:"name"`
	Lines int    `json:"lines"`
	Doc   string `json:"doc"` // modules: the first line of the docstring
}

// pySizes is what pysizes.py prints.
type pySizes struct {
	Modules   []unit `json:"modules"`
	Classes   []unit `json:"classes"`
	Functions []unit `json:"functions"`
}

func run(w io.Writer, python string, top int) error {
	pkg := kernelPackage
	if st, err := os.Stat(pkg); err != nil || !st.IsDir() {
		pkg = kernelDir
	}
	py, err := measurePython(python, pkg)
	if err != nil {
		return err
	}
	goFuncs, err := measureGo(".")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Sizes (tests and generated code left out; units over a limit are listed above its line)\n\n")
	table(w, "Python modules of "+pkg, "module", pyModuleLimit, py.Modules, top)
	table(w, "Python classes", "class", pyClassLimit, py.Classes, top)
	table(w, "Python functions", "function", pyFunctionLimit, py.Functions, top)
	table(w, "Go functions", "function", goFunctionLimit, goFuncs, top)
	readersMap(w, pkg, py.Modules)
	return nil
}

// measurePython runs pysizes.py on dir.
func measurePython(python, dir string) (*pySizes, error) {
	cmd := exec.Command(python, "-", dir)
	cmd.Stdin = bytes.NewReader(pysizes)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: measuring %s: %w", python, dir, err)
	}
	var s pySizes
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("measuring %s: %w", dir, err)
	}
	return &s, nil
}

// measureGo returns the functions and methods of the Go files under root,
// leaving out tests, generated files and the directories the go command
// ignores (testdata, names starting with . or _) and node_modules.
func measureGo(root string) ([]unit, error) {
	var funcs []unit
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			funcs = append(funcs, unit{Path: path, Line: start.Line, Name: funcName(fn), Lines: end.Line - start.Line + 1})
		}
		return nil
	})
	return funcs, err
}

// funcName is a function's name, or a method's as (*T).m or T.m.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	recv := "?"
	if id, ok := t.(*ast.Ident); ok {
		recv = id.Name
	}
	if star != "" {
		return "(*" + recv + ")." + fn.Name.Name
	}
	return recv + "." + fn.Name.Name
}

// table prints the units over limit, largest first, then the threshold
// line, then the top largest of the others.
func table(w io.Writer, title, kind string, limit int, units []unit, top int) {
	units = slices.Clone(units)
	slices.SortStableFunc(units, func(a, b unit) int { return b.Lines - a.Lines })
	over := 0
	for over < len(units) && units[over].Lines > limit {
		over++
	}
	fmt.Fprintf(w, "%s: %d, %d over %d lines\n", title, len(units), over, limit)
	fmt.Fprintf(w, "  %6s  %s\n", "lines", kind)
	for i, u := range units {
		if i == over {
			fmt.Fprintf(w, "  %6s  -------- limit: %s > %d lines above this line --------\n", "", kind, limit)
		}
		if i >= over+top {
			fmt.Fprintf(w, "  %6s  ... %d more\n", "", len(units)-i)
			break
		}
		where := u.Path
		if u.Name != "" {
			where = fmt.Sprintf("%s:%d %s", u.Path, u.Line, u.Name)
		}
		fmt.Fprintf(w, "  %6d  %s\n", u.Lines, where)
	}
	if over == len(units) {
		fmt.Fprintf(w, "  %6s  -------- limit: %s > %d lines above this line --------\n", "", kind, limit)
	}
	fmt.Fprintln(w)
}

// readersMap lists the package's modules in path order, each with the
// first line of its docstring.
func readersMap(w io.Writer, pkg string, modules []unit) {
	fmt.Fprintf(w, "Map of %s (each module, the first line of its docstring):\n", pkg)
	width := 0
	for _, m := range modules {
		width = max(width, len(m.Path))
	}
	for _, m := range modules {
		doc := m.Doc
		if doc == "" {
			doc = "(no docstring)"
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, m.Path, doc)
	}
}
