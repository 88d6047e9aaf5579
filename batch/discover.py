"""Static entry discovery for `ripple run` (standard library only).

ripple's batch package runs this script with the project's interpreter. It
reads one JSON request on stdin and writes one JSON answer on stdout. It
parses modules with `ast` and never imports user code, so a module with a
syntax error is reported, not fatal, and nothing of the project runs here.

Request:
  {"files":   [{"path": "tests/test_a.py"}],       # modules to collect tests from
   "lookups": [{"path": "main.py", "qualname": "main"}]}  # --entry targets

Answer:
  {"files":   [{"path", "error": null | {"message", "line", "column"},
                "tests": [{"class", "name", "line", "skip"}]}],
   "lookups": [{"path", "qualname", "status": "def"|"bound"|"missing"|"error",
                "line", "error"}]}

Collection follows pytest's default rules: functions whose name starts with
"test" at module level, and in classes whose name starts with "Test" and
that define no __init__, methods whose name starts with "test". A test that
needs arguments (pytest fixtures, parametrize), an async test and one marked
skip are reported with a "skip" reason, so they show up as skipped entries
rather than vanish.
"""

import ast
import json
import sys


def read_tree(path):
    with open(path, "rb") as f:
        source = f.read()
    return ast.parse(source, filename=path)


def syntax_error(exc):
    if isinstance(exc, SyntaxError):
        return {"message": "%s: %s" % (type(exc).__name__, exc.msg), "line": exc.lineno or 0, "column": exc.offset or 0}
    return {"message": "%s: %s" % (type(exc).__name__, exc), "line": 0, "column": 0}


def dotted(node):
    """The dotted name of a decorator (its call's function if it is a call)."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


SKIP_MARKS = {"pytest.mark.skip", "mark.skip", "unittest.skip", "skip"}


def skip_mark(decorators):
    """The reason of a skip mark among the decorators, "" when there is none."""
    for dec in decorators:
        if dotted(dec) not in SKIP_MARKS:
            continue
        reason = "marked skip"
        if isinstance(dec, ast.Call):
            args = list(dec.args) + [k.value for k in dec.keywords if k.arg == "reason"]
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    reason = "marked skip: " + arg.value
                    break
        return reason
    return ""


def required_params(fn):
    """The names of the parameters a call must supply."""
    a = fn.args
    positional = list(getattr(a, "posonlyargs", [])) + list(a.args)
    required = positional[: len(positional) - len(a.defaults)]
    required += [arg for arg, default in zip(a.kwonlyargs, a.kw_defaults) if default is None]
    return [arg.arg for arg in required]


def is_static(fn):
    return any(dotted(d) == "staticmethod" for d in fn.decorator_list)


def test_entry(fn, cls_name, cls_skip):
    params = required_params(fn)
    if cls_name and not is_static(fn):
        params = params[1:]  # self (or cls)
    skip = cls_skip or skip_mark(fn.decorator_list)
    if not skip and isinstance(fn, ast.AsyncFunctionDef):
        skip = "async def test: needs a plugin (not supported by ripple run)"
    if not skip and params:
        skip = "takes arguments (%s): pytest fixtures and parametrize are not supported by ripple run" % ", ".join(params)
    return {"class": cls_name, "name": fn.name, "line": fn.lineno, "skip": skip}


FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def collect(tree):
    # A later definition of a name replaces an earlier one, as at import.
    found = {}
    for node in tree.body:
        if isinstance(node, FUNCS) and node.name.startswith("test"):
            found[node.name] = [test_entry(node, "", "")]
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            body = [n for n in node.body if isinstance(n, FUNCS)]
            if any(n.name in ("__init__", "__new__") for n in body):
                found.pop(node.name, None)  # pytest does not collect it
                continue
            cls_skip = skip_mark(node.decorator_list)
            methods = {}
            for fn in body:
                if fn.name.startswith("test"):
                    methods[fn.name] = test_entry(fn, node.name, cls_skip)
            found[node.name] = list(methods.values())
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.pop(node.name, None)
        else:
            for name in bound_names(node):  # test_x = None rebinds it
                found.pop(name, None)
    tests = [t for ts in found.values() for t in ts]
    tests.sort(key=lambda t: t["line"])
    return tests


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

    files = []
    for f in request.get("files") or []:
        tree, error = tree_of(f["path"])
        files.append({"path": f["path"], "error": error, "tests": collect(tree) if tree else []})
    lookups = []
    for lk in request.get("lookups") or []:
        tree, error = tree_of(lk["path"])
        out = {"path": lk["path"], "qualname": lk["qualname"], "status": "error", "line": 0, "error": error}
        if tree is not None:
            out["status"], out["line"] = lookup(tree, lk["qualname"])
        lookups.append(out)
    json.dump({"files": files, "lookups": lookups}, sys.stdout)


if __name__ == "__main__":
    main()
