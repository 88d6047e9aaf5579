package workspace

import (
	"slices"
	"strings"
	"testing"
)

const tinyNotebook = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
 {"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": null, "source": "x = 1"}]}`

func TestNotebookIsAModule(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"nb.ipynb": "nb", "docs/intro.ipynb": "docs.intro", "__init__.ipynb": "", "pkg/__init__.ipynb": "",
		".ipynb_checkpoints/nb-checkpoint.ipynb": "", "a.b.ipynb": "", "nb.ipynb.bak": "",
	} {
		got, ok := ModuleName(p)
		if ok != (want != "") || got != want {
			t.Errorf("ModuleName(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	ws, _ := setup(t, map[string]string{"nb.ipynb": tinyNotebook, "both.ipynb": tinyNotebook, "both.py": "y = 2\n",
		"bad.ipynb": "{not json", ".ipynb_checkpoints/nb-checkpoint.ipynb": tinyNotebook})
	mods, err := ws.Modules()
	wantErr(t, err, nil)
	var got []string
	for _, m := range mods {
		got = append(got, m.Name+"="+m.Path)
	}
	if want := []string{"bad=bad.ipynb", "both=both.py", "nb=nb.ipynb"}; !slices.Equal(got, want) {
		t.Errorf("Modules = %v, want %v (a .py wins over its notebook)", got, want)
	}
	for name, want := range map[string]string{"nb": "nb.ipynb", "both": "both.py"} {
		if p, err := ws.ModulePath(name); err != nil || p != want {
			t.Errorf("ModulePath(%s) = %q, %v; want %s", name, p, err, want)
		}
	}
	src, err := ws.Source("nb")
	wantErr(t, err, nil)
	if src != "# %% [cell 1]\nx = 1\n" {
		t.Errorf("Source(nb) = %q: want the notebook's derived script", src)
	}
	src, err = ws.Source("bad")
	wantErr(t, err, nil)
	if !strings.HasPrefix(src, "raise SyntaxError(") || !strings.Contains(src, "bad.ipynb: invalid notebook: not a JSON object") {
		t.Errorf("Source(bad) = %q: want a SyntaxError naming the file and the fault", src)
	}
}
