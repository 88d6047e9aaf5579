"""Where the --entry functions of `ripple run` are (standard library only).

ripple's batch package runs this script with the project's interpreter. It
reads one JSON request on stdin and writes one JSON answer on stdout. It
parses modules with `ast` and never imports user code, so a module with a
syntax error is reported (the engine then reports its compile error for the
entry), not fatal. Tests are not found here: ripple run --tests has pytest
collect them in the kernels (kernel/python/ripple_kernel/pytest_plugin.py).

Request:
  {"lookups": [{"path": "main.py", "qualname": "main"}]}

Answer:
  {"lookups": [{"path", "qualname", "status": "def"|"bound"|"missing"|"error",
                "line", "error": null | {"message", "line", "column"}}]}
"""

import ast
import json
import sys

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def read_tree(path):
    with open(path, "rb") as f:
        source = f.read()
    return ast.parse(source, filename=path)


def syntax_error(exc):
    if isinstance(exc, SyntaxError):
        return {"message": "%s: %s" % (type(exc).__name__, exc.msg), "line": exc.lineno or 0, "column": exc.offset or 0}
    return {"message": "%s: %s" % (type(exc).__name__, exc), "line": 0, "column": 0}


def bound_names(node):
    """Names a top-level statement binds (other than def/class)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.alias):
            names.add((sub.asname or sub.name).split(".")[0])
    return names


def lookup(tree, qualname):
    parts = qualname.split(".")
    body = tree.body
    line = 0
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        match = None
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == part:
                match = node
        if match is None:
            for node in body:
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and part in bound_names(node):
                    return "bound", 0
            return "missing", 0
        if last:
            return ("def", match.lineno) if isinstance(match, FUNCS) else ("bound", match.lineno)
        if isinstance(match, FUNCS):
            return "missing", 0  # a function has no methods
        if not isinstance(match, ast.ClassDef):
            return "bound", 0
        body = match.body
        line = match.lineno
    return "bound", line


def main():
    request = json.load(sys.stdin)
    trees = {}

    def tree_of(path):
        if path not in trees:
            try:
                trees[path] = (read_tree(path), None)
            except (SyntaxError, ValueError, OSError) as exc:
                trees[path] = (None, syntax_error(exc))
        return trees[path]

    lookups = []
    for lk in request.get("lookups") or []:
        tree, error = tree_of(lk["path"])
        out = {"path": lk["path"], "qualname": lk["qualname"], "status": "error", "line": 0, "error": error}
        if tree is not None:
            out["status"], out["line"] = lookup(tree, lk["qualname"])
        lookups.append(out)
    json.dump({"lookups": lookups}, sys.stdout)


if __name__ == "__main__":
    main()
