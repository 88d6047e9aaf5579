"""What the kernel's pytest session tells the Go side beyond items and
outcomes: each test module's project imports (--watch), pytest's
--junitxml and cache plugin settings (which a worker's plugins leave to
the controller: batch/junit_pytest.go, batch/pytest_cache.go) and what
tests record for --junitxml (WorkerXML); the parts of pytest's main
that the session's set-up plays (prog, internal_error); the installed
distributions a warm kernel lists once (cached_distributions); each test
file's collect time (FileTimes); and the cyclic collector's threshold
while the session collects."""

from __future__ import annotations

import gc
import os
import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from .api import WireObject

if TYPE_CHECKING:
    import pytest


# The collector's first threshold while pytest starts and collects
# (collection_gc); CPython's default is 700.
COLLECTION_GC_THRESHOLD = 50_000


@contextmanager
def collection_gc() -> Iterator[None]:
    """pytest's start and collection with the cyclic collector's first
    threshold at COLLECTION_GC_THRESHOLD: collecting 20,000 items makes
    ~300,000 objects that live as long as the session, and at 700
    allocations a young collection the collector walked them in ~60
    young and 5 full collections (~0.2 s, an eighth of the run; pytest
    pays them too). At 50,000 a young collection holds a few MB at most.
    The threshold is the interpreter's again before any test runs, unless
    the suite's own code (a conftest.py, a module's import) set one
    meanwhile: that one stays, as under pytest; an interpreter whose
    automatic collection is off (threshold 0) or higher is left alone."""
    before = gc.get_threshold()
    if before[0] == 0 or before[0] >= COLLECTION_GC_THRESHOLD:
        yield
        return
    mine = (COLLECTION_GC_THRESHOLD,) + tuple(before[1:])
    gc.set_threshold(*mine)
    try:
        yield
    finally:
        if gc.get_threshold() == mine:
            # One full collection now: it counts what collection left as
            # long-lived, as the collections pytest's start would have
            # made did; else the next full ones come during the tests
            # (a full collection waits for a quarter more of them).
            gc.collect()
            gc.set_threshold(*before)


class FileTimes:
    """How long pytest took to collect each test file (its module's
    import, its items, its classes'), by the file's node id: a late
    kernel's hand-over costs the collection of its files (batch/handover.go),
    and one file can hold most of a suite's (click's stress tests: 31,000
    of 33,000 items, all deselected). A plugin of the first kernel's
    session."""

    def __init__(self) -> None:
        self.times: Dict[str, float] = {}
        self.began: Dict[str, float] = {}

    def pytest_collectstart(self, collector: pytest.Collector) -> None:
        self.began[collector.nodeid] = time.perf_counter()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        began = self.began.pop(report.nodeid, None)
        if began is None or not report.nodeid:
            return
        path = report.nodeid.split("::", 1)[0]
        self.times[path] = self.times.get(path, 0.0) + time.perf_counter() - began

    def send(self, emit: Callable[[WireObject], None]) -> None:
        """As progress frames of 500 files (a result is capped)."""
        files = sorted(self.times.items())
        for i in range(0, len(files), 500):
            emit({"event": "fileTimes", "times": dict(files[i:i + 500])})


_DISTRIBUTIONS: List[List[object]] = []  # importlib.metadata's distributions, listed once


class cached_distributions:
    """While pytest builds a Config, importlib.metadata.distributions()
    (pytest's search for plugins by entry point, and for their files to
    rewrite) answers what it answered for this kernel's first session:
    listing the installed packages is most of a warm kernel's start of a
    session (--watch), and they do not change under a running kernel."""

    def __enter__(self) -> None:
        import importlib.metadata as md

        self.md = md
        self.orig: Callable[..., Iterable[object]] = md.distributions
        if not _DISTRIBUTIONS:
            _DISTRIBUTIONS.append(list(self.orig()))
        cached = _DISTRIBUTIONS[0]

        def distributions(**kwargs: object) -> Iterable[object]:
            if kwargs:
                return self.orig(**kwargs)
            return iter(cached)

        setattr(md, "distributions", distributions)

    def __exit__(self, *exc: object) -> None:
        setattr(self.md, "distributions", self.orig)


def junitxml(config: pytest.Config) -> Optional[WireObject]:
    """pytest's --junitxml (from the command line or addopts): the file and
    the ini options of pytest's junitxml, which the Go side writes the file
    with (a kernel is a worker: pytest's plugin leaves it to the
    controller); None without it."""
    path = getattr(config.option, "xmlpath", None)
    if not path:
        return None
    path = os.path.normpath(os.path.abspath(os.path.expanduser(os.path.expandvars(path))))
    return {"path": path, "suiteName": str(config.getini("junit_suite_name")),
            "family": str(config.getini("junit_family")), "durations": str(config.getini("junit_duration_report"))}


class WorkerXML:
    """What a pytest kernel puts where pytest's junitxml keeps its LogXML
    (config.stash[xml_key]) when --junitxml is given: a worker's plugin
    makes none (the Go side writes the file), but fixtures and plugins
    record into it: record_testsuite_property and hypothesis's statistics
    (add_global_property: the testsuite's <properties>), record_xml_attribute
    (node_reporter(...).add_attribute: the testcase's attributes), and
    record_property and record_xml_attribute warn from its family as they
    do under pytest. What a test recorded goes with its outcome (take)."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.suite: List[Tuple[str, str]] = []  # global properties since the last take
        self.attrs: Dict[str, List[Tuple[str, str]]] = {}  # node id -> attributes, in order

    def add_global_property(self, name: str, value: object) -> None:
        __tracebackhide__ = True
        if not isinstance(name, str):
            raise TypeError("name parameter needs to be a string, but %s given" % type(name).__name__)
        self.suite.append((name, str(value)))

    def node_reporter(self, report: object) -> "_NodeAttrs":
        return _NodeAttrs(self.attrs.setdefault(str(getattr(report, "nodeid", report)), []))

    def take(self, nodeid: str) -> List[Dict[str, str]]:
        """JUnit children (batch/junit_pytest.go) for what was recorded
        for this test and, for the suite, since the last take."""
        out = [{"tag": "attribute", "message": n, "text": v} for n, v in self.attrs.pop(nodeid, [])]
        out += [{"tag": "suite-property", "message": n, "text": v} for n, v in self.suite]
        self.suite = []
        return out


class _NodeAttrs:
    """WorkerXML.node_reporter's answer: a testcase's added attributes."""

    def __init__(self, attrs: List[Tuple[str, str]]) -> None:
        self.attrs = attrs

    def add_attribute(self, name: str, value: object) -> None:
        self.attrs.append((str(name), str(value)))


def worker_xml(config: pytest.Config) -> Optional[WorkerXML]:
    """Put a WorkerXML where pytest's junitxml would keep its LogXML, when
    --junitxml is given and nothing is there (a kernel is a worker)."""
    if not getattr(config.option, "xmlpath", None):
        return None
    from _pytest.junitxml import xml_key

    if config.stash.get(xml_key, None) is not None:
        return None
    xml = WorkerXML(str(config.getini("junit_family")))
    config.stash[xml_key] = xml  # type: ignore[misc]  # duck-typed LogXML
    return xml


def cache(config: pytest.Config, worker: int) -> Optional[WireObject]:
    """pytest's cache plugin (cacheprovider, stepwise) reads the cache in
    every kernel (--lf, --ff, --nf, --sw select and order as they do under
    pytest) but, in a worker, writes nothing: the Go side writes what a
    serial session would (batch/pytest_cache.go). The cache directory
    and the options that decide what it writes; None without the plugin
    (-p no:cacheprovider) or with --cache-show. The first kernel makes the
    directory with pytest's supporting files (README.md, .gitignore,
    CACHEDIR.TAG), as pytest's first write would."""
    cache = getattr(config, "cache", None)
    if cache is None or config.getoption("cacheshow"):
        return None
    cachedir = getattr(cache, "_cachedir", None)
    if cachedir is None:
        return None
    if worker == 0 and not os.path.isdir(cachedir):
        try:
            os.makedirs(cachedir, exist_ok=True)
            cache._ensure_supporting_files()
        except OSError:
            pass  # pytest warns and writes nothing: so does the Go side
    return {"dir": str(cachedir), "stepwise": bool(config.getoption("stepwise")),
            "stepwiseSkip": bool(config.getoption("stepwise_skip"))}


def _project_file(mod: object, root: str) -> Optional[str]:
    """The project file of a module: under root and not in an installed
    location (a virtualenv inside the project), else None."""
    f = getattr(mod, "__file__", None)
    if not f:
        return None
    f = os.path.abspath(f)
    if not f.startswith(root + os.sep) or "site-packages" in f or "dist-packages" in f:
        return None
    return f


def purge_project_modules(root: str) -> None:
    """ripple run --tests --watch: forget the project's modules (test
    modules, conftest.py, the code under test) so that the next session
    imports what is on disk now, with pytest's assertion rewriting; the
    installed packages stay imported (the kernel stays warm)."""
    root = os.path.abspath(root)
    for name, mod in list(sys.modules.items()):
        if name == "__main__" or name.startswith(("ripple_kernel.", "_ripple")) or name == "ripple_kernel":
            continue
        if _project_file(mod, root) is not None:
            del sys.modules[name]
    import importlib

    importlib.invalidate_caches()


def dependencies(items: List[pytest.Item], rootdir: str) -> Dict[str, List[str]]:
    """For each test module of the session (by path relative to the
    project root), the project files it imports, directly or through other
    project modules (import statements read with ast), conftest.py files
    included: what --watch re-runs the module's tests for."""
    import ast

    root = os.getcwd()
    files: Dict[str, str] = {}  # module name -> project file
    for name, mod in list(sys.modules.items()):
        f = _project_file(mod, root)
        if f is not None:
            files[name] = f
    edges: Dict[str, Set[str]] = {}

    def imports_of(name: str, path: str) -> Set[str]:
        if path in edges:
            return edges[path]
        out: Set[str] = set()
        edges[path] = out
        try:
            with open(path, "rb") as fh:
                tree = ast.parse(fh.read(), path)
        except (OSError, SyntaxError, ValueError):
            return out
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: List[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".") if package else []
                    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                    base = ".".join(p for p in parts + ([base] if base else []) if p)
                targets = [base] + ["%s.%s" % (base, a.name) if base else a.name for a in node.names]
            for t in targets:
                while t:
                    if t in files:
                        out.add(files[t])
                    t = t.rpartition(".")[0]
        return out

    names = {f: n for n, f in files.items()}
    conftests = sorted(f for f in files.values() if os.path.basename(f) == "conftest.py")
    result: Dict[str, List[str]] = {}
    seen_modules: Set[str] = set()
    for item in items:
        module = getattr(item, "module", None)
        path = _project_file(module, root) if module is not None else None
        if path is None or path in seen_modules:
            continue
        seen_modules.add(path)
        todo, closure = [path], {path}
        while todo:
            p = todo.pop()
            for d in imports_of(names.get(p, ""), p):
                if d not in closure:
                    closure.add(d)
                    todo.append(d)
        here = os.path.dirname(path)
        closure.update(c for c in conftests if here == os.path.dirname(c) or here.startswith(os.path.dirname(c) + os.sep))
        result[os.path.relpath(path, root).replace(os.sep, "/")] = sorted(
            os.path.relpath(p, root).replace(os.sep, "/") for p in closure)
    return result


def _current_exception() -> Any:
    """The exception being handled as pytest's ExceptionInfo, the kernel's
    own frames left out of its traceback."""
    from _pytest._code import ExceptionInfo

    excinfo = ExceptionInfo.from_current()
    here = os.path.dirname(os.path.abspath(__file__))  # the kernel's package
    excinfo.traceback = excinfo.traceback.filter(lambda entry: os.path.dirname(str(entry.path)) != here)
    return excinfo


def internal_error(config: pytest.Config) -> None:
    """pytest's report of its internal error (Config.notify_exception:
    INTERNALERROR> lines on its terminal), the kernel's frames left out."""
    excinfo = _current_exception()
    try:
        config.notify_exception(excinfo, config.option)
    except Exception:
        pass  # pytest's own report failed: the status says it


def keyboard_interrupt(config: pytest.Config, render: Optional[Callable[[Any], str]]) -> str:
    """The KeyboardInterrupt being handled, which ended a test (the Go
    side's Ctrl-C, or the test's own), as pytest's wrap_session takes it:
    the pytest_keyboard_interrupt hook sees it; the answer is what
    pytest's terminal shows of it (render: the console's), "" when it
    landed in the kernel between two tests or rendering failed."""
    try:
        excinfo = _current_exception()
        if not excinfo.traceback:
            return ""
        config.hook.pytest_keyboard_interrupt(excinfo=excinfo)
        return render(excinfo) if render is not None else ""
    except Exception:
        return ""  # the Go side says which test it interrupted instead


def refused_option(config: pytest.Config) -> str:
    """Why the kernels cannot run pytest with config's options, naming the
    option (a usage error), "" when they can:
    - --pdb (on a failure) and --trace (at each test's start) stop in
      pytest's debugger, which reads the terminal; a kernel's stdin is
      none (pdb would read an end of file and end the session, "Quitting
      debugger"). pytest-xdist refuses them too.
    - pytest-cov's --cov: in a worker (as the kernels are) it measures
      for pytest-xdist's controller to combine and report, which ripple
      does not stand in for (pytest-cov failed with an internal error)."""
    for attr, option in (("usepdb", "--pdb"), ("trace", "--trace")):
        if getattr(config.option, attr, False):
            return ("%s: pytest's debugger reads the terminal, which ripple run's kernels do not have;"
                    " run python -m pytest %s to debug interactively" % (option, option))
    if getattr(config.option, "cov_source", None) and not getattr(config.option, "no_cov", False):
        return ("--cov: pytest-cov's coverage of several processes is combined and reported by pytest-xdist's"
                " controller, which ripple run does not stand in for yet; run python -m pytest for coverage,"
                " or add --no-cov to run the tests without it")
    return ""


def worker_basetemp(basetemp: str, worker: int) -> str:
    """A kernel's --basetemp when a run has several: as xdist's workers
    have it, its own directory popen-gwN under the one given, which the
    kernel's pytest clears when it is first used, as pytest clears
    --basetemp (with one directory for all, one kernel's session would
    delete the files of another's running tests). The one given is
    created if missing, as pytest creates it; what else it holds is
    left alone."""
    os.makedirs(basetemp, mode=0o700, exist_ok=True)
    return os.path.join(basetemp, "popen-gw%d" % worker)


def command_line(args: List[str]) -> List[str]:
    """sys.argv as ``python -m pytest ARGS`` has it from its start to its
    exit: pytest's __main__.py, then ARGS. A test that parses sys.argv (a
    CLI's main() called without arguments) sees pytest's arguments, as it
    does under pytest."""
    import pytest

    return [os.path.join(os.path.dirname(os.path.abspath(pytest.__file__)), "__main__.py")] + list(args)


class prog:
    """sys.argv[0] as the pytest script has it while pytest parses its
    command line: argparse names the program after it in a usage error
    ("pytest: error: unrecognized arguments")."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.saved: Optional[List[str]] = None

    def __enter__(self) -> None:
        self.saved = list(sys.argv)
        sys.argv[:1] = [self.name]

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            sys.argv[:] = self.saved
