// Package notebook reads and writes Jupyter notebooks (nbformat 4 `.ipynb`
// JSON) as ripple module sources: a notebook's code cells, in order, are one
// Python script (a script frame, `module:__main__`), and the values and
// output of its statements go back into the notebook as the cells' outputs.
//
// Start with Parse, then Script for what the kernel compiles:
//
//	nb, err := notebook.Parse(data)          // ErrInvalid naming what is wrong
//	s := nb.Script()                         // s.Source: the derived Python
//	o, ok := s.Origin(12)                    // line 12 of s.Source: cell and line
//	nb.SetOutputs(o.Cell, outs, count)       // one cell's nbformat outputs
//	err = notebook.WriteFile(path, nb)       // atomic; everything else kept
//
// # The derived script
//
// Each code cell starts with a separator comment, `# %% [cell N]` (N is the
// cell's 1-based position among all cells, markdown ones included, as
// Jupyter's "cell N" counts), followed by the cell's lines unchanged; a
// markdown or raw cell is its separator and its lines as comments. So the
// script reads like a "percent" script and every derived line maps to one
// cell and line (Script.Origin; Script.Line for the other way).
//
// IPython syntax is rewritten as IPython's own input transformers rewrite
// it, line for line (magic.go): `%name args` calls
// get_ipython().run_line_magic, a cell starting with `%%name` calls
// run_cell_magic with the cell's body (its other lines become comments, so
// the lines still match), `!cmd` calls system and `x = !cmd` getoutput.
// get_ipython is ripple's (kernel/python/ripple_kernel/ipython.py): an
// IPython shell on the notebook's namespace where the interpreter has
// IPython, else an error naming the missing package.
//
// # Writing outputs back
//
// Marshal writes the notebook as Jupyter does (keys sorted, one-space
// indent, UTF-8 unescaped, a final newline), keeping every field it does
// not own byte for byte in meaning: metadata, markdown and raw cells, cell
// ids, attachments, unknown keys. It owns only the code cells' "outputs"
// and "execution_count" (SetOutputs, ClearOutputs). WriteFile replaces the
// file atomically (a temp file beside it, fsync, rename).
package notebook
