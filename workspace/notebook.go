package workspace

import (
	"fmt"
	"strings"

	"github.com/ripple-run/ripple/notebook"
)

// NotebookExt is the extension of Jupyter notebooks. A notebook is a
// module of the project (ModuleName: "nb/intro.ipynb" is "nb.intro"), whose
// Source is the Python its code cells make (package notebook): it runs as
// a script, "nb.intro:__main__". A .py file of the same name wins, as a
// package wins over a module.
const NotebookExt = ".ipynb"

// isNotebook reports whether a project path is a notebook.
func isNotebook(p string) bool { return strings.HasSuffix(p, NotebookExt) }

// notebookPath is the notebook beside the module file mod ("a/b.py").
func notebookPath(mod string) string { return strings.TrimSuffix(mod, ".py") + NotebookExt }

// notebookSource is the Python a notebook's text runs as. A notebook that
// does not parse runs as one statement raising SyntaxError with the
// reason, so its script frame fails naming the file and what is wrong in
// it, as a .py file with a syntax error does.
func notebookSource(p, text string) string {
	nb, err := notebook.Parse([]byte(text))
	if err != nil {
		return fmt.Sprintf("raise SyntaxError(%q)\n", fmt.Sprintf("%s: %v", p, err))
	}
	return nb.Script().Source
}
