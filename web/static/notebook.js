// Notebooks (.ipynb) in the page: shown read-only as the script ripple runs
// (docs/notebooks.md), so that the values the server sends for a notebook's
// lines land beside the right line. notebookScript follows the Go package
// notebook's derivation line for line (a `# %% [cell N]` separator before
// each cell, a code cell's lines as they are, a markdown or raw cell's as
// comments); only IPython lines differ: the page shows `%time x = f()` as
// typed where the kernel runs the IPython call it becomes, on the same line.
// The buffer's server text stays the notebook's JSON: the page never sends
// edits of a notebook (editor.js), it is edited in Jupyter or an editor.

// isNotebook reports whether a project path is a notebook.
export function isNotebook(path) {
  return typeof path === "string" && path.endsWith(".ipynb");
}

// notebookScript is the script of a notebook's JSON text; a notebook that
// does not parse shows one comment line saying why.
export function notebookScript(json) {
  let nb;
  try {
    nb = JSON.parse(json);
  } catch (e) {
    return `# ripple: this notebook is not JSON (${e.message})\n`;
  }
  if (!nb || nb.nbformat !== 4 || !Array.isArray(nb.cells)) {
    return "# ripple: this is not an nbformat 4 notebook\n";
  }
  const out = [];
  nb.cells.forEach((cell, i) => {
    const kind = cell && cell.cell_type;
    out.push(kind === "code" ? `# %% [cell ${i + 1}]` : `# %% [cell ${i + 1}] ${kind}`);
    for (const line of cellLines(cell && cell.source)) {
      out.push(kind === "code" ? line : `# ${line}`.trimEnd());
    }
  });
  return out.join("\n") + "\n";
}

// cellLines splits a cell's source (a string or a list of strings) into
// lines without their line ends, as Python reads them.
function cellLines(source) {
  let text = Array.isArray(source) ? source.join("") : typeof source === "string" ? source : "";
  if (text === "") return [];
  text = text.replace(/\r\n/g, "\n").replace(/\r/g, "\n");
  if (text.endsWith("\n")) text = text.slice(0, -1);
  return text.split("\n");
}
