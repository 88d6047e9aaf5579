"""Sizes of a Python package's modules, classes and functions, as JSON.

Run by bench/sizes (embedded in its binary): python3 - ROOT reads the .py
files under ROOT, leaving out tests (test_*.py, *_test.py, conftest.py and
tests/ directories), and prints one JSON object on stdout:
{"modules": [{"path", "lines", "doc"}], "classes": [...], "functions": [...]},
where a class or function is {"path", "line", "name", "lines"} and its
lines run from its def (or class) line to its last line.
"""

import ast
import json
import os
import sys


def is_test(name):
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def main():
    root = sys.argv[1]
    out = {"modules": [], "classes": [], "functions": []}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in ("tests", "__pycache__") and not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(".py") or is_test(name):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            rel = os.path.relpath(path)
            tree = ast.parse(text, path)
            doc = ast.get_docstring(tree) or ""
            out["modules"].append({
                "path": rel,
                "lines": len(text.splitlines()),
                "doc": doc.strip().splitlines()[0] if doc.strip() else "",
            })
            walk(tree, rel, "", out)
    json.dump(out, sys.stdout)


def walk(node, path, prefix, out):
    """Adds the classes and functions under node, named by their nesting."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            kind, sep = "classes", "."
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind, sep = "functions", ".<locals>."
        else:
            walk(child, path, prefix, out)
            continue
        name = prefix + child.name
        out[kind].append({
            "path": path,
            "line": child.lineno,
            "name": name,
            "lines": (child.end_lineno or child.lineno) - child.lineno + 1,
        })
        walk(child, path, name + sep, out)


if __name__ == "__main__":
    main()
