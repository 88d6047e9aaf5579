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
                "tests": [{"class", "name", "line", "skip",
                           "xfail": null | {"reason", "strict", "run"},
                           "unresolved": [condition source],
                           "unittest": bool}]}],
   "lookups": [{"path", "qualname", "status": "def"|"bound"|"missing"|"error",
                "line", "error"}]}

Collection follows pytest's default rules: functions whose name starts with
"test" at module level, and in classes whose name starts with "Test" and
that define no __init__, methods whose name starts with "test"; subclasses
of unittest.TestCase whatever their name (as far as the module shows: the
base is unittest.TestCase or a class of the module that is one). Their
tests are marked "unittest" (the instance is built as unittest does,
Class("test_name")); those of a class with setUp/tearDown-style fixtures,
its own or a base's, or with a base defined in another module, are skipped:
ripple run does not run unittest fixtures. A test that
needs arguments (pytest fixtures, parametrize), an async test and one marked
skip are reported with a "skip" reason, so they show up as skipped entries
rather than vanish.

Conditional marks (pytest.mark.skipif, unittest.skipIf / skipUnless, the
conditions of pytest.mark.xfail) are decided here, as pytest decides them
when it collects: a condition is evaluated with sys, os and platform in
scope (pytest's names for string conditions), on this interpreter. One that
needs more (a name of the test module) cannot be decided without importing
the module: it is listed in "unresolved" and the mark is ignored (the test
runs as if unmarked). xfail (pytest.mark.xfail, unittest.expectedFailure)
applies when it has no condition or one that holds.
"""

import ast
import json
import sys


SOURCE = [""]  # the text of the module being collected (for conditions' source)


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
SKIPIF_MARKS = {"pytest.mark.skipif", "mark.skipif", "skipif", "unittest.skipIf", "skipIf"}
SKIPUNLESS_MARKS = {"unittest.skipUnless", "skipUnless"}
XFAIL_MARKS = {"pytest.mark.xfail", "mark.xfail", "xfail", "unittest.expectedFailure", "expectedFailure"}


def constant(node, default=None):
    return node.value if isinstance(node, ast.Constant) else default


def keyword(call, name):
    if isinstance(call, ast.Call):
        for k in call.keywords:
            if k.arg == name:
                return k.value
    return None


def decide(node):
    """(value, source): a condition's truth, evaluated as pytest would
    with sys, os and platform in scope; value is None when it cannot be
    decided here (it needs the module's own names)."""
    source = constant(node)
    if not isinstance(source, str):
        source = ast.get_source_segment(SOURCE[0], node) or ast.unparse(node)
    import os
    import platform

    scope = {"os": os, "sys": sys, "platform": platform}
    try:
        value = eval(compile(ast.Expression(node), "<condition>", "eval"), scope)
        if isinstance(value, str):  # pytest's string condition
            value = eval(compile(value, "<condition>", "eval"), scope)
        return bool(value), source
    except Exception:
        return None, source


def conditional_marks(decorators):
    """(skip reason, xfail, unresolved conditions) of a def's or class's
    conditional marks."""
    skip, xfail, unresolved = "", None, []
    for dec in decorators:
        name = dotted(dec)
        call = dec if isinstance(dec, ast.Call) else None
        args = list(call.args) if call else []
        if keyword(call, "condition") is not None:
            args = [keyword(call, "condition")]
        reason_node = keyword(call, "reason")
        if name in SKIPIF_MARKS or name in SKIPUNLESS_MARKS:
            if reason_node is None and name.endswith(("skipIf", "skipUnless")) and len(args) > 1:
                reason_node = args[1]
                args = args[:1]
            if not args and name in SKIPIF_MARKS and not skip:
                # pytest: a skipif without a condition skips.
                reason = constant(reason_node, "")
                skip = "marked skipif: " + (reason if isinstance(reason, str) and reason else "no condition")
            for cond in args:
                value, source = decide(cond)
                if value is None:
                    unresolved.append(source)
                    continue
                if name in SKIPUNLESS_MARKS:
                    value = not value
                if value and not skip:
                    reason = constant(reason_node, "")
                    if not isinstance(reason, str) or not reason:
                        reason = "condition: " + source
                    skip = "marked %s: %s" % (name.rpartition(".")[2], reason)
        elif name in XFAIL_MARKS:
            applies = True
            for cond in args:
                value, source = decide(cond)
                if value is None:
                    unresolved.append(source)
                    applies = False
                elif not value:
                    applies = False
            if applies and xfail is None:
                reason = constant(reason_node, "")
                xfail = {"reason": reason if isinstance(reason, str) else "",
                         "strict": constant(keyword(call, "strict"), False) is True,
                         "run": constant(keyword(call, "run"), True) is not False}
    return skip, xfail, unresolved


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


def test_entry(fn, cls_name, cls_marks):
    params = required_params(fn)
    if cls_name and not is_static(fn):
        params = params[1:]  # self (or cls)
    cls_skip, cls_xfail, cls_unresolved = cls_marks
    skip_if, xfail, unresolved = conditional_marks(fn.decorator_list)
    skip = cls_skip or skip_mark(fn.decorator_list) or skip_if
    if not skip and isinstance(fn, ast.AsyncFunctionDef):
        skip = "async def test: needs a plugin (not supported by ripple run)"
    if not skip and params:
        skip = "takes arguments (%s): pytest fixtures and parametrize are not supported by ripple run" % ", ".join(params)
    return {"class": cls_name, "name": fn.name, "line": fn.lineno, "skip": skip,
            "xfail": xfail or cls_xfail, "unresolved": cls_unresolved + unresolved}


NO_MARKS = ("", None, [])


def class_marks(decorators):
    skip_if, xfail, unresolved = conditional_marks(decorators)
    return (skip_mark(decorators) or skip_if, xfail, unresolved)


def pytestmark(body):
    """The marks of a module's or class's `pytestmark = mark` or
    `pytestmark = [marks]`, as decorator nodes (the last assignment wins)."""
    marks = []
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            value = node.value
            marks = list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [value]
    return marks


def merge_marks(outer, inner):
    """Marks of a scope inside another (module, then class): the first
    skip wins, the innermost xfail, every unresolved condition."""
    return (outer[0] or inner[0], inner[1] or outer[1], outer[2] + inner[2])


FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


TESTCASE_BASES = {"unittest.TestCase", "TestCase", "unittest.IsolatedAsyncioTestCase", "IsolatedAsyncioTestCase"}
UNITTEST_FIXTURES = {"setUp", "tearDown", "setUpClass", "tearDownClass", "asyncSetUp", "asyncTearDown"}
UNITTEST_FIXTURE_SKIP = ("a unittest.TestCase with setUp/tearDown (or a base ripple cannot see): "
                         "ripple run does not run unittest fixtures")


def testcase_kind(node, classes, seen=()):
    """None when the class is not a unittest.TestCase as far as this module
    shows, else whether it (or a base defined in this module) has unittest
    fixtures or a base defined elsewhere that may have them."""
    kind = None
    for base in node.bases:
        name = dotted(base)
        if name in TESTCASE_BASES:
            kind = kind or False
        elif name in classes and name not in seen:
            inner = testcase_kind(classes[name], classes, seen + (node.name,))
            if inner is not None:
                kind = kind or inner
    if kind is None:
        return None
    own = any(isinstance(n, FUNCS) and n.name in UNITTEST_FIXTURES for n in node.body)
    foreign = any(dotted(b) not in TESTCASE_BASES and dotted(b) not in classes for b in node.bases)
    return kind or own or foreign


def collect(tree):
    # A later definition of a name replaces an earlier one, as at import.
    found = {}
    module_marks = class_marks(pytestmark(tree.body))
    classes = {}
    for node in tree.body:
        if isinstance(node, FUNCS) and node.name.startswith("test"):
            found[node.name] = [test_entry(node, "", module_marks)]
            continue
        if isinstance(node, ast.ClassDef):
            # unittest.TestCase subclasses are collected whatever their
            # name, as pytest does (it runs them the unittest way).
            case = testcase_kind(node, classes)
            classes[node.name] = node
        if isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or case is not None):
            body = [n for n in node.body if isinstance(n, FUNCS)]
            if case is None and any(n.name in ("__init__", "__new__") for n in body):
                found.pop(node.name, None)  # pytest does not collect it
                continue
            cls_marks = merge_marks(module_marks, class_marks(node.decorator_list + pytestmark(node.body)))
            if case and not cls_marks[0]:
                cls_marks = (UNITTEST_FIXTURE_SKIP,) + cls_marks[1:]
            methods = {}
            for fn in body:
                if fn.name.startswith("test"):
                    entry = test_entry(fn, node.name, cls_marks)
                    entry["unittest"] = case is not None
                    methods[fn.name] = entry
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
        tests = []
        if tree:
            with open(f["path"], "rb") as fh:
                SOURCE[0] = fh.read().decode("utf-8", "replace")
            tests = collect(tree)
        files.append({"path": f["path"], "error": error, "tests": tests})
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
