"""ripple run --tests without pytest: the test files written for pytest
(what the Go side says cannot run), and unittest's own loader and runner
behind the "unittest" op of the kernel method "pytest"."""

from __future__ import annotations

import os
import sys
import time
import traceback
import unittest
from types import TracebackType
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple, Type, Union, cast

from .api import KernelAPI, WireObject
from .signals import TEST_PROCESS

# An exception as unittest passes it to a result (sys.exc_info()).
ExcInfo = Union[Tuple[Type[BaseException], BaseException, TracebackType], Tuple[None, None, None]]


def arg_paths(args: Optional[Iterable[object]]) -> List[str]:
    """The paths among pytest's arguments (PATH or PATH::NODE; options and
    their values are not: the Go side refuses them without pytest)."""
    return [str(a).split("::", 1)[0] for a in args or [] if not str(a).startswith("-")]


def _test_files(root: str, paths: Optional[List[str]] = None) -> Iterator[str]:
    """The test files under root, or under paths (relative to root): a
    file named counts whatever its name, as pytest collects it."""
    for top in paths or [root]:
        top = os.path.join(root, top)
        if os.path.isfile(top):
            if top.endswith(".py"):
                yield top
            continue
        yield from _walk_test_files(top)


def _walk_test_files(root: str) -> Iterator[str]:
    skip = {".git", ".hg", ".tox", ".venv", "venv", "node_modules", "__pycache__", "build", "dist"}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py") and (name.startswith("test") or name.endswith("_test.py")):
                yield os.path.join(dirpath, name)


def pytest_style_files(root: str, paths: Optional[List[str]] = None) -> List[List[str]]:
    """Test files written for pytest (module-level test functions, Test*
    classes that are not TestCases, import pytest) under root or paths:
    without pytest they cannot run as their author meant. [[path, why],
    ...]"""
    import ast

    found = []
    for path in _test_files(root, paths):
        try:
            with open(path, "rb") as f:
                tree = ast.parse(f.read(), path)
        except (OSError, SyntaxError, ValueError):
            continue
        why = ""
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n == "pytest" or n.startswith("pytest.") for n in names):
                    why = "imports pytest"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                why = "test function %s" % node.name
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test") and not node.bases:
                why = "test class %s is not a unittest.TestCase" % node.name
            if why:
                break
        if why:
            found.append([os.path.relpath(path, root).replace(os.sep, "/"), why])
    return found


def run(api: KernelAPI, params: WireObject) -> WireObject:
    """Without pytest: unittest's loader (discover, pattern test*.py from
    the project root) and runner, one module at a time per "run"."""

    root = os.getcwd()
    op = params.get("step", "collect")
    if op == "collect":
        pattern = params.get("pattern") or "test*.py"
        tops: List[Tuple[str, str, str]] = []  # (start directory, pattern, top-level directory)
        for arg in arg_paths(params.get("paths")):
            path = os.path.abspath(os.path.join(root, arg))
            if not os.path.exists(path):
                # pytest's words for it (a usage error).
                return {"usage": "file or directory not found: %s" % arg}
            if os.path.isdir(path):
                tops.append((path, pattern, _unittest_top(root, path)))
            else:
                start = os.path.dirname(path)
                tops.append((start, os.path.basename(path), _unittest_top(root, start)))
        tests: List[unittest.TestCase] = []
        with api.user_code(), TEST_PROCESS.hidden(), TEST_PROCESS.signals():
            for start, pat, top in tops or [(root, pattern, root)]:
                _flatten(unittest.defaultTestLoader.discover(start, pattern=pat, top_level_dir=top), tests)
        _UNITTEST[:] = tests
        chunk: List[WireObject] = []
        for t in tests:
            nodeid, path, line = _unittest_node(t, root)
            chunk.append({"nodeid": nodeid, "path": path, "line": line, "scope": path, "junit": _junit_from_id(nodeid)})
            if len(chunk) == 200:
                api.emit_progress({"event": "items", "items": chunk})
                chunk = []
        if chunk:
            api.emit_progress({"event": "items", "items": chunk})
        return {"count": len(tests)}
    indices = params.get("indices") or []
    tests = [_UNITTEST[i] for i in indices]
    result = _EventResult(api, {id(t): i for i, t in enumerate(_UNITTEST)})
    with api.user_code(), TEST_PROCESS.hidden(), TEST_PROCESS.signals():
        unittest.TestSuite(tests).run(result)
    # Tests that never started: their class or module fixture failed or
    # skipped (unittest reports that once, on a stand-in test).
    why: WireObject = {"status": "error", "message": "not run"}
    if result.errors:
        why = {"status": "error", "message": "%s: %s" % (result.errors[-1][0], result.errors[-1][1].strip().split("\n")[-1]),
               "longrepr": result.errors[-1][1]}
    elif result.skipped:
        why = {"status": "skipped", "message": result.skipped[-1][1]}
    for i in indices:
        if i not in result.ended:
            ev = dict(why, event="end", i=i, duration=0.0)
            api.emit_progress(ev)
    return {}


_UNITTEST: List[unittest.TestCase] = []  # the tests of the last collect


def _unittest_top(root: str, start: str) -> str:
    """The top-level directory unittest discovers start from: the project
    when start is a package path inside it (its modules then have dotted
    names from the project, as a discovery of the project gives them),
    else start itself (python -m unittest discover -s START's default)."""
    rel = os.path.relpath(start, root)
    if rel == ".":
        return root
    if rel.startswith(".."):
        return start
    d = root
    for part in rel.split(os.sep):
        d = os.path.join(d, part)
        if not os.path.isfile(os.path.join(d, "__init__.py")):
            return start
    return root


def _flatten(suite: Iterable[object], out: List[unittest.TestCase]) -> None:
    for t in suite:
        if hasattr(t, "__iter__"):
            _flatten(t, out)
        else:
            out.append(cast(unittest.TestCase, t))  # a test: a suite's leaves are tests


def _unittest_node(test: unittest.TestCase, root: str) -> Tuple[str, str, int]:
    """A pytest-style node id for a unittest test: path::Class::method;
    for a doctest (a load_tests hook's DocTestSuite), path::name as
    pytest's --doctest-modules names it, for a FunctionTestCase
    path::function: their class's method is the same for all of them."""
    import inspect

    dt = getattr(test, "_dt_test", None)
    func = getattr(test, "_testFunc", None)
    if isinstance(test, unittest.FunctionTestCase) and func is not None:
        code = getattr(func, "__code__", None)
        where = _rel(code.co_filename if code is not None else str(getattr(func, "__module__", "")), root)
        name = str(getattr(func, "__qualname__", None) or test.id())
        return "%s::%s" % (where, name), where, (code.co_firstlineno - 1 if code is not None else -1)
    if dt is not None and getattr(dt, "name", None):
        where = _rel(str(dt.filename or test.id()), root)
        return "%s::%s" % (where, dt.name), where, (dt.lineno if dt.lineno is not None else -1)
    cls = type(test)
    mod = sys.modules.get(cls.__module__)
    path = getattr(mod, "__file__", None) or cls.__module__
    if os.path.isabs(path):
        path = os.path.relpath(path, root)
    path = path.replace(os.sep, "/")
    method = getattr(test, "_testMethodName", "")
    line = -1
    try:
        fn = getattr(cls, method)
        line = inspect.getsourcelines(fn)[1] - 1
    except (AttributeError, TypeError, OSError):
        pass
    if cls.__name__ == "_FailedTest":
        return "%s::%s" % (path, method), path, line
    return "%s::%s::%s" % (path, cls.__qualname__, method), path, line


def _rel(path: str, root: str) -> str:
    """path relative to root, with slashes, when it is absolute."""
    if os.path.isabs(path):
        path = os.path.relpath(path, root)
    return path.replace(os.sep, "/")


def _junit_from_id(nodeid: str) -> List[str]:
    from_path, _, rest = nodeid.partition("::")
    names = [from_path[:-3].replace("/", ".") if from_path.endswith(".py") else from_path] + rest.split("::")
    return [".".join(names[:-1]), names[-1]]


class _EventResult(unittest.TestResult):
    """A unittest result that sends each test's outcome as it ends."""

    def __init__(self, api: KernelAPI, index: Dict[int, int]) -> None:
        super().__init__()
        self.api = api
        self.index = index  # id(test) -> its index in the collection
        self.ended: Set[int] = set()  # indices of the tests whose outcome was sent
        self._t0 = 0.0
        self._ev: Optional[WireObject] = None

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self._t0 = time.perf_counter()
        self._ev = None
        i = self.index.get(id(test))
        if i is not None:
            self.api.emit_progress({"event": "start", "i": i})

    def _set(self, status: str, message: str = "", text: str = "") -> None:
        self._ev = {"status": status, "message": message, "longrepr": text}

    def addSuccess(self, test: unittest.TestCase) -> None:
        self._set("passed")

    def addFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:
        self._set("failed", _exc_line(err), "".join(traceback.format_exception(*err)))

    def addError(self, test: unittest.TestCase, err: ExcInfo) -> None:
        if self.index.get(id(test)) is None:
            # A class or module fixture (setUpClass...) failed.
            return super().addError(test, err)
        self._set("error", _exc_line(err), "".join(traceback.format_exception(*err)))

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        if self.index.get(id(test)) is None:
            return super().addSkip(test, reason)
        self._set("skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:
        self._set("xfailed", _exc_line(err))

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        self._set("failed", "Unexpected success")

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase, err: Optional[ExcInfo]) -> None:
        if err is not None and (self._ev is None or self._ev["status"] == "passed"):
            kind = "failed" if err[0] is not None and issubclass(err[0], test.failureException) else "error"
            self._set(kind, "%s: %s" % (subtest, _exc_line(err)), "".join(traceback.format_exception(*err)))

    def stopTest(self, test: unittest.TestCase) -> None:
        super().stopTest(test)
        i = self.index.get(id(test))
        if i is None:
            return
        ev = self._ev or {"status": "passed"}
        ev.update(event="end", i=i, duration=time.perf_counter() - self._t0)
        self.ended.add(i)
        self.api.flush_output()
        self.api.emit_progress(ev)


def _exc_line(err: ExcInfo) -> str:
    return "".join(traceback.format_exception_only(err[0], err[1])).strip().split("\n")[-1]
