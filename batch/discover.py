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
                           "unittest": bool,
                           "case": null | {"id", "index", "args": [source]},
                           "notRun": [what pytest would run around it and
                                      ripple run does not]}]}],
   "lookups": [{"path", "qualname", "status": "def"|"bound"|"missing"|"error",
                "line", "error"}]}

Collection follows pytest's default rules: functions whose name starts with
"test" at module level, and in classes whose name starts with "Test" and
that define no __init__, methods whose name starts with "test"; subclasses
of unittest.TestCase whatever their name (as far as the module shows: the
base is unittest.TestCase or a class of the module that is one). Their
tests are marked "unittest". A class's test methods include those it
inherits from classes defined in the module (those of a base from
another module cannot be seen here). The kernel sets up and tears down a
method's instance as unittest or pytest does (engine_testing.py). A test that
needs arguments that no parametrize mark gives (pytest fixtures), an async
test and one marked skip are reported with a "skip" reason, so they show up
as skipped entries rather than vanish.

pytest.mark.parametrize (on the function, its class or in a pytestmark,
stacked marks multiplying as in pytest) makes one test per case, named as
pytest names it ("test_add[1-2]": each value's id, or argname+index for a
value pytest would not print, or the ids=/pytest.param(id=) given; repeated
ids made unique as pytest 8 does). A case's "args" are the source of its
values, in the order of the function's parameters; the kernel evaluates
them in the module's namespace, as pytest does at collection. Marks given
with pytest.param(marks=) apply to their case. Values that are not a
literal list or tuple (a name, a call) cannot be expanded without importing
the module: the test is reported skipped, saying so.

pytest fixtures are not run: a test that takes one is skipped. Fixtures a
test does not ask for but pytest would run around it are listed in its
"notRun" for the console to say so: autouse fixtures (of its module, its
class, or a conftest.py of its directory or a parent up to the project
root) and module-level xunit functions (setup_module, teardown_module,
setup_function, teardown_function); so are a test's own decorators other
than marks: the engine runs the function's own body, so a wrapper (a
mock.patch, a retry) is not applied. A test whose parameters a decorator
may supply is skipped, saying so.

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


def test_entries(fn, cls_name, cls_marks, scope_params, cls_body=()):
    """The entries of one test function: one, or one per parametrize case.
    scope_params are the parametrize marks of its class and module;
    cls_body is the body of its class."""
    params = required_params(fn)
    if cls_name and not is_static(fn):
        params = params[1:]  # self (or cls)
    cls_skip, cls_xfail, cls_unresolved = cls_marks
    skip_if, xfail, unresolved = conditional_marks(fn.decorator_list)
    skip = cls_skip or skip_mark(fn.decorator_list) or skip_if
    base = {"class": cls_name, "name": fn.name, "line": fn.lineno, "skip": skip,
            "xfail": xfail or cls_xfail, "unresolved": cls_unresolved + unresolved, "case": None}
    if not skip and isinstance(fn, ast.AsyncFunctionDef):
        base["skip"] = "async def test: needs a plugin (not supported by ripple run)"
    # pytest applies the function's own marks first (the decorator nearest
    # the def first), then its class's, then its module's.
    # A method's own marks are evaluated in its class's body: a value that
    # names a class attribute is evaluated there.
    own_scope = None
    if cls_name:
        own_scope = (cls_name, class_names(cls_body), dict(CONSTANTS, **constants_of(cls_body, CONSTANTS)))
    marks = [(d, own_scope) for d in reversed(fn.decorator_list) if dotted(d) in PARAMETRIZE_MARKS]
    marks += [(d, None) for d in scope_params]
    wrappers = decorators_not_applied(fn)
    if wrappers:
        base["decorators"] = wrappers
    if not marks:
        if not base["skip"] and params:
            if wrappers:
                base["skip"] = ("takes arguments (%s), which its decorator (%s) may supply: ripple run runs the "
                                "function's own body, without its decorators" % (", ".join(params), ", ".join(wrappers)))
            else:
                base["skip"] = "takes arguments (%s): pytest fixtures are not supported by ripple run" % ", ".join(params)
        return [base]
    cases, why = parametrize_cases(marks)
    if why is None and not cases:
        why = "parametrize got an empty parameter set"
    if why is None:
        names = list(cases[0]["values"])
        extra = [n for n in names if n not in params]
        missing = [n for n in params if n not in names]
        kwonly = {a.arg for a in fn.args.kwonlyargs}
        if extra:
            why = "parametrize names %s, which %s does not take as a required argument" % (", ".join(extra), fn.name)
        elif missing:
            why = "takes arguments (%s) that no parametrize mark gives: pytest fixtures are not supported by ripple run" % ", ".join(missing)
        elif any(n in kwonly for n in params):
            why = "parametrizes keyword-only arguments: not supported by ripple run"
    if why is not None:
        if not base["skip"]:
            base["skip"] = why
        return [base]
    out = []
    for index, case in enumerate(cases):
        entry = dict(base)
        entry["unresolved"] = list(base["unresolved"])
        case_skip = skip_mark(case["marks"])
        case_skip_if, case_xfail, case_unresolved = conditional_marks(case["marks"])
        entry["skip"] = base["skip"] or case_skip or case_skip_if
        entry["xfail"] = case_xfail or base["xfail"]
        entry["unresolved"] += case_unresolved
        entry["case"] = {"id": case["id"], "index": index, "args": [case["values"][n] for n in params]}
        out.append(entry)
    return out


PARAMETRIZE_MARKS = {"pytest.mark.parametrize", "mark.parametrize", "parametrize"}
# Decorators that only mark a test (or bind it as a method): everything
# else wraps it, and the engine runs the function's own body without the
# wrapper (a mock.patch does not patch), which the console says.
MARKING_DECORATORS = {"staticmethod", "classmethod"} | SKIP_MARKS | SKIPIF_MARKS | SKIPUNLESS_MARKS | XFAIL_MARKS


def decorators_not_applied(fn):
    """The source of the decorators of a test that ripple run does not
    apply (see MARKING_DECORATORS; any pytest.mark.* only marks)."""
    out = []
    for dec in fn.decorator_list:
        name = dotted(dec)
        if name in MARKING_DECORATORS or name.startswith(("pytest.mark.", "mark.")):
            continue
        out.append(source_of(dec))
    return out
PARAM_CALLS = {"pytest.param", "param"}


def class_names(body):
    """Names a class body binds other than its functions (its attributes
    that a method's decorators may use)."""
    names = set()
    for node in body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif not isinstance(node, FUNCS):
            names |= bound_names(node)
    return names


def argument_source(node, scope):
    """The source of a parametrize value as the kernel evaluates it (in the
    module's namespace), parenthesized; a value of a method's own mark that
    uses a class attribute is evaluated with the class's namespace first,
    as the decorator was."""
    src = "(%s)" % source_of(node)
    if scope is not None:
        cls, names, _ = scope
        if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node)):
            return "__import__('builtins').eval(%r, globals(), vars(%s))" % (src, cls)
    return src


def argnames_of(mark):
    """The argument names of a parametrize mark, None when they are not
    literal."""
    node = mark.args[0] if isinstance(mark, ast.Call) and mark.args else keyword(mark, "argnames")
    names = constant(node)
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    if isinstance(node, (ast.List, ast.Tuple)) and all(isinstance(constant(e), str) for e in node.elts):
        return [e.value for e in node.elts]
    return None


def parametrize_cases(marks):
    """The product of parametrize marks, as pytest builds it: a list of
    {"id", "values": {argname: source}, "marks": [mark nodes]}, or (None,
    why) when a mark cannot be expanded statically."""
    cases = [{"ids": [], "values": {}, "marks": []}]
    for mark, scope in marks:
        sets, why = parameter_sets(mark, scope)
        if why is not None:
            return None, why
        if not sets:
            return [], None
        cases = [{"ids": c["ids"] + [ps["id"]], "values": dict(c["values"], **ps["values"]), "marks": c["marks"] + ps["marks"]}
                 for c in cases for ps in sets]
    return [{"id": "-".join(c["ids"]), "values": c["values"], "marks": c["marks"]} for c in cases], None


def parameter_sets(mark, scope):
    """The cases of one parametrize mark: ([{"id", "values", "marks"}],
    None), or (None, why). scope: see argument_source."""
    if not isinstance(mark, ast.Call):
        return None, "a parametrize mark without arguments"
    names = argnames_of(mark)
    if not names:
        return None, "parametrize argument names that are not a literal string or list"
    indirect = keyword(mark, "indirect")
    if indirect is not None and constant(indirect, True) is not False:
        return None, "parametrize(indirect=...) goes through fixtures: not supported by ripple run"
    values = mark.args[1] if len(mark.args) > 1 else keyword(mark, "argvalues")
    if not isinstance(values, (ast.List, ast.Tuple)):
        src = ast.get_source_segment(SOURCE[0], values) if values is not None else None
        return None, "parametrize values %s are not a literal list: ripple run cannot expand them without importing the module" % (
            src or "(computed)")
    ids = keyword(mark, "ids")
    given = None
    if isinstance(ids, (ast.List, ast.Tuple)):
        given = [constant(e) if isinstance(constant(e), str) else None for e in ids.elts]
    sets, resolved = [], []
    for idx, elt in enumerate(values.elts):
        case_id, case_marks = None, []
        if isinstance(elt, ast.Call) and dotted(elt) in PARAM_CALLS:
            args = list(elt.args)
            case_id = constant(keyword(elt, "id"))
            m = keyword(elt, "marks")
            if m is not None:
                case_marks = list(m.elts) if isinstance(m, (ast.List, ast.Tuple)) else [m]
        elif len(names) == 1:
            args = [elt]
        elif isinstance(elt, (ast.List, ast.Tuple)):
            args = list(elt.elts)
        else:
            return None, "parametrize case %s is not a literal tuple of %d values" % (source_of(elt), len(names))
        if len(args) != len(names) or any(isinstance(a, ast.Starred) for a in args):
            return None, "parametrize case %s does not give exactly %s" % (source_of(elt), ", ".join(names))
        if not isinstance(case_id, str):
            if given is not None and idx < len(given) and given[idx] is not None:
                case_id = ascii_escaped(given[idx])
            else:
                case_id = "-".join(value_id(a, n, idx, scope and scope[2]) for a, n in zip(args, names))
        resolved.append(case_id)
        sets.append({"values": {n: argument_source(a, scope) for n, a in zip(names, args)}, "marks": case_marks})
    for ps, case_id in zip(sets, unique_ids(resolved)):
        ps["id"] = case_id
    return sets, None


def source_of(node):
    return ast.get_source_segment(SOURCE[0], node) or ast.unparse(node)


_NON_PRINTABLE = {i: "\\x%02x" % i for i in range(128) if i not in range(32, 127)}
_NON_PRINTABLE.update({ord("\t"): "\\t", ord("\r"): "\\r", ord("\n"): "\\n"})


def ascii_escaped(value):
    """pytest's ascii_escaped: how a str or bytes value appears in an id."""
    if isinstance(value, bytes):
        text = value.decode("ascii", "backslashreplace")
    else:
        text = value.encode("unicode_escape").decode("ascii")
    return text.translate(_NON_PRINTABLE)


CONSTANTS = {}  # module-level names bound once to a foldable value (collect)
_NOT_FOLDED = object()
_FOLD_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
             ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
             ast.Pow: lambda a, b: a ** b}
_FOLD_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Not: lambda a: not a, ast.Invert: lambda a: ~a}
_FOLDABLE = (str, bytes, bool, int, float, complex, type(None))


class _Sequence(list):
    """A folded list literal: only subscripted (a list is not an id)."""


def fold(node, env=None, depth=0):
    """The value of a constant expression (literals, arithmetic on them,
    module-level names bound once to one), as pytest would see it at
    import; _NOT_FOLDED when it needs more. Results stay small: a fold
    that would build a big string or number gives up. env maps the names
    in scope (default: the module's CONSTANTS)."""
    if env is None:
        env = CONSTANTS
    if depth > 20:
        return _NOT_FOLDED
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, _FOLDABLE) else _NOT_FOLDED
    if isinstance(node, ast.Name):
        return env.get(node.id, _NOT_FOLDED)
    if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) <= 1000:
        items = [fold(e, env, depth + 1) for e in node.elts]
        if any(i is _NOT_FOLDED for i in items):
            return _NOT_FOLDED
        return tuple(items) if isinstance(node, ast.Tuple) else _Sequence(items)
    if isinstance(node, ast.Subscript):
        seq, index = fold(node.value, env, depth + 1), fold(node.slice, env, depth + 1)
        if isinstance(seq, (tuple, list, str, bytes)) and type(index) is int and -len(seq) <= index < len(seq):
            return seq[index]
        return _NOT_FOLDED
    if isinstance(node, ast.UnaryOp) and type(node.op) in _FOLD_UNARY:
        value = fold(node.operand, env, depth + 1)
        if not isinstance(value, _FOLDABLE) or isinstance(value, (str, bytes)):
            return _NOT_FOLDED
        try:
            return _FOLD_UNARY[type(node.op)](value)
        except Exception:
            return _NOT_FOLDED
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD_OPS:
        left, right = fold(node.left, env, depth + 1), fold(node.right, env, depth + 1)
        if not isinstance(left, _FOLDABLE) or not isinstance(right, _FOLDABLE):
            return _NOT_FOLDED  # also sequences: [0] * n could be huge
        if isinstance(node.op, ast.Pow) and not (isinstance(right, (int, float)) and abs(right) <= 64 and
                                                 isinstance(left, (int, float)) and abs(left) <= 1 << 16):
            return _NOT_FOLDED
        if isinstance(node.op, ast.Mult) and any(isinstance(v, (str, bytes)) for v in (left, right)):
            size = [len(v) if isinstance(v, (str, bytes)) else v for v in (left, right)]
            if not all(isinstance(n, int) for n in size) or size[0] * size[1] > 4096:
                return _NOT_FOLDED
        try:
            value = _FOLD_OPS[type(node.op)](left, right)
        except Exception:
            return _NOT_FOLDED
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
            return _NOT_FOLDED
        return value if isinstance(value, _FOLDABLE) else _NOT_FOLDED
    return _NOT_FOLDED


def constants_of(body, env):
    """The names of a module's or class's body bound exactly once, by a
    plain assignment of a foldable value (NAME = 3, NAME = "x" * 2),
    folded with env's names in scope."""
    counts, values = {}, {}
    for node in body:
        for name in bound_names(node) | ({node.name} if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else set()):
            counts[name] = counts.get(name, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    out = {}
    for name, value in values.items():
        if counts.get(name) == 1:
            folded = fold(value, env)
            if folded is not _NOT_FOLDED:
                out[name] = folded
    return out


def value_id(node, argname, idx, env=None):
    """pytest's id of one parameter value: the value for a string, number,
    bool or None, else argname followed by the case's index. A value is
    known when it is a constant expression (fold); one that needs the
    module's import (a call, an enum member) gets argname+index, where
    pytest may print the value."""
    value = fold(node, env)
    if value is _NOT_FOLDED:
        return "%s%d" % (argname, idx)
    if isinstance(value, (str, bytes)):
        return ascii_escaped(value)
    if value is None or isinstance(value, (bool, int, float, complex)):
        return str(value)
    return "%s%d" % (argname, idx)


def unique_ids(ids):
    """Repeated ids made unique as pytest 8 does: a suffix counting the
    repeats, after an underscore when the id ends with a digit."""
    counts = {}
    for i in ids:
        counts[i] = counts.get(i, 0) + 1
    if all(n == 1 for n in counts.values()):
        return ids
    taken, suffixes, out = set(ids), {}, []
    for i in ids:
        if counts[i] == 1:
            out.append(i)
            continue
        sep = "_" if i and i[-1].isdigit() else ""
        n = suffixes.get(i, 0)
        new = "%s%s%d" % (i, sep, n)
        while new in taken:
            n += 1
            new = "%s%s%d" % (i, sep, n)
        taken.add(new)
        suffixes[i] = n + 1
        out.append(new)
    return out


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


def is_testcase(node, classes, seen=()):
    """Whether the class is a unittest.TestCase as far as this module shows
    (a base named so, or a class of the module that is one)."""
    for base in node.bases:
        name = dotted(base)
        if name in TESTCASE_BASES:
            return True
        if name in classes and name not in seen and is_testcase(classes[name], classes, seen + (node.name,)):
            return True
    return False


def class_functions(node, classes, seen=()):
    """The functions of a class and, after them, those it inherits from
    bases defined earlier in the module (depth first, left to right): the
    first definition of a name wins, as attribute lookup finds it."""
    out = {}
    for stmt in node.body:
        if isinstance(stmt, FUNCS):
            out[stmt.name] = stmt
        elif isinstance(stmt, ast.ClassDef):
            out[stmt.name] = None
        else:
            for name in bound_names(stmt):
                out[name] = None  # test_x = None hides an inherited test
    for base in node.bases:
        name = dotted(base)
        if name in classes and name not in seen:
            for fname, fn in class_functions(classes[name], classes, seen + (node.name,)).items():
                out.setdefault(fname, fn)
    return out


FIXTURE_DECORATORS = {"pytest.fixture", "fixture"}
MODULE_XUNIT = ("setup_module", "teardown_module")
FUNCTION_XUNIT = ("setup_function", "teardown_function")
CONFTEST_AUTOUSE = {}  # conftest.py path -> its autouse fixture names


def autouse_fixtures(body):
    """The names of the autouse fixtures a module's or class's body defines."""
    names = []
    for fn in body:
        if not isinstance(fn, FUNCS):
            continue
        for dec in fn.decorator_list:
            if dotted(dec) in FIXTURE_DECORATORS and isinstance(dec, ast.Call) and constant(keyword(dec, "autouse")) is True:
                name = constant(keyword(dec, "name"))
                names.append(name if isinstance(name, str) else fn.name)
    return names


def conftest_autouse(path):
    """The autouse fixtures of the conftest.py files that apply to the test
    module at path (relative to the project root, the working directory),
    nearest first, as "autouse fixture NAME (CONFTEST PATH)"."""
    import os

    out = []
    directory = os.path.dirname(path)
    while True:
        conftest = os.path.join(directory, "conftest.py")
        if conftest not in CONFTEST_AUTOUSE:
            names = []
            if os.path.isfile(conftest):
                try:
                    names = autouse_fixtures(read_tree(conftest).body)
                except (SyntaxError, ValueError, OSError):
                    pass
            CONFTEST_AUTOUSE[conftest] = names
        out += ["autouse fixture %s (%s)" % (name, conftest) for name in CONFTEST_AUTOUSE[conftest]]
        if directory in ("", "."):
            return out
        directory = os.path.dirname(directory)


def not_run(tests, tree, path):
    """Fill each runnable test's "notRun" (see the module doc)."""
    funcs = {n.name for n in tree.body if isinstance(n, FUNCS)}
    module_level = conftest_autouse(path) + ["autouse fixture %s" % n for n in autouse_fixtures(tree.body)]
    module_level += [n for n in MODULE_XUNIT if n in funcs]
    function_level = [n for n in FUNCTION_XUNIT if n in funcs]
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for t in tests:
        if t["skip"]:
            continue
        items = list(module_level) + ["decorator @%s" % d for d in t.get("decorators", ())]
        if t["class"]:
            cls = classes.get(t["class"])
            if cls is not None:
                items += ["autouse fixture %s" % n for n in autouse_fixtures(cls.body)]
        else:
            items += function_level
        if items:
            t["notRun"] = items


def collect(tree):
    # A later definition of a name replaces an earlier one, as at import.
    found = {}
    CONSTANTS.clear()
    CONSTANTS.update(constants_of(tree.body, {}))
    module_marks = class_marks(pytestmark(tree.body))
    module_params = [m for m in pytestmark(tree.body) if dotted(m) in PARAMETRIZE_MARKS]
    classes = {}
    for node in tree.body:
        if isinstance(node, FUNCS) and node.name.startswith("test"):
            found[node.name] = test_entries(node, "", module_marks, module_params)
            continue
        case = False
        if isinstance(node, ast.ClassDef):
            # unittest.TestCase subclasses are collected whatever their
            # name, as pytest does (it runs them the unittest way).
            case = is_testcase(node, classes)
            classes[node.name] = node
        if isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or case):
            functions = {k: v for k, v in class_functions(node, classes).items() if v is not None}
            if not case and ("__init__" in functions or "__new__" in functions):
                found.pop(node.name, None)  # pytest does not collect it
                continue
            cls_marks = merge_marks(module_marks, class_marks(node.decorator_list + pytestmark(node.body)))
            cls_params = [d for d in reversed(node.decorator_list) if dotted(d) in PARAMETRIZE_MARKS]
            cls_params += [m for m in pytestmark(node.body) if dotted(m) in PARAMETRIZE_MARKS]
            methods = {}
            for fn in functions.values():
                if fn.name.startswith("test"):
                    entries = test_entries(fn, node.name, cls_marks, [] if case else cls_params + module_params, node.body)
                    for entry in entries:
                        entry["unittest"] = case
                    methods[fn.name] = entries
            found[node.name] = [e for es in methods.values() for e in es]
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
            not_run(tests, tree, f["path"])
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
