"""ripple run --tests inside a warm kernel: the kernel method "pytest".

pytest does the work (configuration, collection, fixtures, marks,
unittest and xunit support, assertion rewriting, plugins); this module only
drives one pytest session per kernel in steps, as a pytest-xdist worker
does (xdist/remote.py), so that the Go side can hand out groups of tests:

    {"op": "collect", "args": [...], "worker": 0, "workers": 2, "env": {...}}
        builds the Config from args (pytest's own command line parsing, so
        ini files, addopts, -p plugins, -k, -m), configures it, starts the
        session and collects (pytest_collection: collection, deselection,
        pytest_collection_modifyitems). Answers the items (node id,
        location, loadscope key, JUnit classname and name) and the
        collection reports that did not pass.
    {"op": "run", "indices": [...]}
        runs those items (indices into the collected list) with pytest's
        runtest protocol. As in xdist, the last item is held back until
        the next "run" or "finish": its nextitem is then known, so fixtures
        that the next item shares (session, package, module, class scope)
        are not torn down in between.
    {"op": "finish", "keep": false}
        runs the held item with nextitem None (everything is torn down),
        then pytest_sessionfinish and unconfigure; with keep (--watch) the
        session stays open instead, so that "hot" and "run" can run its
        items again (as pytest's runtestprotocol allows: it resets an
        item's request after each run).
    {"op": "hot", "files": [{"path": rel, "source": text}]}
        --watch at function granularity (ripple_watchfn.py): patches the
        changed function bodies in place and answers the node ids of the
        tests that reached them, or {"fallback": why} (nothing patched),
        or {"syntaxError": "path: line N: msg"}. A "collect" with
        "watch": true starts the recording that this needs.
    {"op": "unittest"}
        without pytest: unittest's own loader (see _unittest_*).

Progress frames, one per event, tell the Go side each item's start and its
outcome: {"event": "start", "i": I} and {"event": "end", "i": I, "status":
..., ...}, where status is how pytest counts the item: passed, failed,
skipped, xfailed, xpassed, error (its setup or teardown failed).

State: one session per kernel at a time, in _SESSION; a new "collect"
closes the previous one. Requests run one at a time on the kernel's main
thread, so there is no lock.
"""

import io
import os
import sys

# Imported with this module: a pytest kernel takes the package's finder
# off sys.meta_path once this is loaded (Kernel.add_pytest).
from . import rewrite_cache

_SESSION = None
_RECORDER = None  # ripple_watchfn.Recorder: --watch only


def _watchfn():
    """The recorder's module (watchfn.py), imported on first use: a plain
    run never loads it."""
    from . import watchfn

    return watchfn


try:
    from pluggy import HookimplMarker

    _hookimpl = HookimplMarker("pytest")
except ImportError:  # no pytest (and so no pluggy): the unittest path

    def _hookimpl(**opts):
        return lambda f: f


def handle(api, params):
    op = params.get("op")
    if op == "collect":
        return _collect(api, params)
    if op == "run":
        if _SESSION is None:
            raise RuntimeError("pytest: run before collect")
        return _SESSION.run(api, params.get("indices") or [], bool(params.get("yieldWide")))
    if op == "finish":
        if _SESSION is None:
            return {}
        return _SESSION.finish(api, bool(params.get("keep")), bool(params.get("yieldWide")))
    if op == "hot":
        return _hot(params)
    if op == "unittest":
        return _unittest(api, params)
    raise ValueError("pytest: unknown op %r" % (op,))


class _Discard(io.TextIOBase):
    """pytest's terminal reporter writes here: the Go side prints the run."""

    def write(self, s):
        return len(s)

    def isatty(self):
        return False


def _collect(api, params):
    global _SESSION, _RECORDER
    if _SESSION is not None:
        # A session left open (its run was stopped): tear it down without
        # running its held-back test.
        _SESSION.pending = None
        _SESSION.close()
        _SESSION = None
    try:
        import pytest  # noqa: F401
    except ImportError as e:
        return {"noPytest": "%s: %s" % (type(e).__name__, e), "python": sys.executable,
                "needsPytest": _pytest_style_files(os.getcwd(), _arg_paths(params.get("args")))}
    args = [str(a) for a in params.get("args") or []]
    # A kernel the run did not start (a runtime agent's) is told its
    # worker variables here, as a local kernel gets them at its start.
    for name, value in (params.get("env") or {}).items():
        os.environ[str(name)] = str(value)
    import time

    started_ns = time.time_ns()
    rec = None
    if params.get("watch"):
        if _RECORDER is None:
            _RECORDER = _watchfn().Recorder(os.getcwd())
            _patch_fixture_finish()
        rec = _RECORDER
        if params.get("purge"):
            rec.forget_sources()
        if not rec.on:
            rec.start()
        rec.collecting(True)
    if params.get("purge"):
        _purge_project_modules(os.getcwd())
    try:
        return _collect_session(api, params, args, rec, started_ns)
    finally:
        if rec is not None:
            rec.collecting(False)


def _collect_session(api, params, args, rec, started_ns):
    global _SESSION
    import pytest
    from _pytest.config import _prepareconfig
    from _pytest.main import Session

    # Assertion rewriting cached where pytest cannot cache it itself.
    rewrite_cache.install()

    with api.user_code():
        try:
            with _cached_distributions():
                config = _prepareconfig(args, plugins=None)
        except pytest.UsageError as e:
            return {"usage": str(e)}
        # The kernels are workers of one run, as xdist's are: plugins that
        # know xdist (junitxml, the last-failed cache) leave the run's
        # reports to the controller, which is the Go side.
        config.workerinput = {
            "workerid": "gw%d" % int(params.get("worker", 0)),
            "workercount": int(params.get("workers", 1)),
            "testrunuid": str(params.get("runID", "")),
            "mainargv": ["pytest"] + args,
        }
        config.workeroutput = {}
        if getattr(config.option, "dist", "no") != "no":
            config.option.dist = "no"  # xdist in a kernel: the kernels are the workers
            config.option.numprocesses = None
        state = _Session(config)
        _SESSION = state
        try:
            config._do_configure()
            state.configured = True
            tr = config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                from _pytest.terminal import TerminalWriter

                tr._tw = TerminalWriter(_Discard())
            config.pluginmanager.register(state, "ripple-kernel")
            if rec is not None:
                config.pluginmanager.register(_WideFixtures(rec), "ripple-watch")
            split = params.get("split")
            if split:
                state.split = _Split(config, int(split["share"]), int(split["shares"]), split.get("only"))
                config.pluginmanager.register(state.split, "ripple-split")
            session = Session.from_config(config)
            session.exitstatus = 0
            state.session = session
            config.hook.pytest_sessionstart(session=session)
            state.started = True
            config.hook.pytest_collection(session=session)
        except pytest.UsageError as e:
            state.close()
            _SESSION = None
            return {"usage": str(e)}
        except (KeyboardInterrupt, pytest.exit.Exception) as e:
            state.close()
            _SESSION = None
            return {"interrupted": "%s: %s" % (type(e).__name__, e)}
        except session.Interrupted as e:
            # A -x/--maxfail stop during collection.
            state.stopped = str(e)
    # The items go as progress frames, a chunk at a time: a result is
    # capped at 64 KiB, a collection of thousands of tests is not.
    split = state.split
    dist = params.get("dist") or "loadfile"
    chunk = []
    for item in state.session.items:
        path, line, domain = item.location
        entry = {
            "nodeid": item.nodeid,
            "path": path.replace(os.sep, "/"),
            "line": line if line is not None else -1,
            "scope": _scope(item, dist),
            "junit": _junit_names(item.nodeid),
        }
        if split is not None and split.share >= 0:
            entry["file"] = split.rank_of_item(item)
        chunk.append(entry)
        if len(chunk) == 200:
            api.emit_progress({"event": "items", "items": chunk})
            chunk = []
    if chunk:
        api.emit_progress({"event": "items", "items": chunk})
    for rep in state.collect_reports:
        api.emit_progress({"event": "collectReport", "report": rep})
    if params.get("deps"):
        for path, deps in _dependencies(state.session.items, str(config.rootpath)).items():
            api.emit_progress({"event": "deps", "path": path, "deps": deps})
    if rec is not None:
        rec.snapshot(started_ns)
    answer_split = None
    if split is not None:
        answer_split = split.answer()
        if split.share >= 0:
            # The visit order can be long (a file per test module): it
            # goes as progress frames too.
            for i in range(0, len(split.files), 500):
                api.emit_progress({"event": "files", "files": split.files[i:i + 500],
                                   "owners": split.owners[i:i + 500]})
    return {
        "split": answer_split,
        "count": len(state.session.items),
        "continueOnCollectionErrors": bool(config.option.continue_on_collection_errors),
        "collectOnly": bool(config.option.collectonly),
        "stopped": state.stopped,
        "rootdir": str(config.rootpath),
        "pytest": pytest.__version__,
    }


_DISTRIBUTIONS = []


class _cached_distributions:
    """While pytest builds a Config, importlib.metadata.distributions()
    (pytest's search for plugins by entry point, and for their files to
    rewrite) answers what it answered for this kernel's first session:
    listing the installed packages is most of a warm kernel's start of a
    session (--watch), and they do not change under a running kernel."""

    def __enter__(self):
        import importlib.metadata as md

        self.md, self.orig = md, md.distributions
        if not _DISTRIBUTIONS:
            _DISTRIBUTIONS.append(list(self.orig()))
        cached = _DISTRIBUTIONS[0]

        def distributions(**kwargs):
            if kwargs:
                return self.orig(**kwargs)
            return iter(cached)

        md.distributions = distributions

    def __exit__(self, *exc):
        self.md.distributions = self.orig


def _project_file(mod, root):
    """The project file of a module: under root and not in an installed
    location (a virtualenv inside the project), else None."""
    f = getattr(mod, "__file__", None)
    if not f:
        return None
    f = os.path.abspath(f)
    if not f.startswith(root + os.sep) or "site-packages" in f or "dist-packages" in f:
        return None
    return f


def _purge_project_modules(root):
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


def _dependencies(items, rootdir):
    """For each test module of the session (by path relative to the
    project root), the project files it imports, directly or through other
    project modules (import statements read with ast), conftest.py files
    included: what --watch re-runs the module's tests for."""
    import ast

    root = os.getcwd()
    files = {}  # module name -> project file
    for name, mod in list(sys.modules.items()):
        f = _project_file(mod, root)
        if f is not None:
            files[name] = f
    edges = {}

    def imports_of(name, path):
        if path in edges:
            return edges[path]
        out = set()
        edges[path] = out
        try:
            with open(path, "rb") as fh:
                tree = ast.parse(fh.read(), path)
        except (OSError, SyntaxError, ValueError):
            return out
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets = []
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
    result = {}
    seen_modules = set()
    for item in items:
        mod = getattr(item, "module", None)
        path = _project_file(mod, root) if mod is not None else None
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


# ---------------------------------------------------------------- split collection
#
# Each kernel collects (imports) only its share of the test modules. Which
# share a module is in is decided before anything is imported, the same
# way on every kernel of the run:
#
#   - a pre-pass (_plan) lists the candidate test files as pytest would
#     find them (config.args: the command line's paths or the ini's
#     testpaths; python_files; norecursedirs, --ignore, dot directories)
#     and deals them out by size, largest first to the least loaded share;
#   - a test module the pre-pass did not foresee goes to the share its
#     relative path hashes to (FNV-1a), as the Go side's Shard does.
#
# pytest's own collection does the rest: the hook pytest_pycollect_makemodule
# answers, for a test module of another share, a Module that collects
# nothing (_Elsewhere), so it is never imported; directories, packages'
# __init__.py and conftest.py are collected by every kernel as before (the
# conftest chain, fixtures and hooks are the same everywhere). Every kernel
# still walks the whole tree, so each one sees the same File collectors in
# the same order: that order (files, with each file's owning share, -1
# when every kernel collects it) is what the Go side merges the kernels'
# items by, and what it checks the kernels agree on.
#
# The split is off (the kernel collects everything, answer "off") when an
# option needs the whole collection (_split_unsafe). A collection the Go
# side cannot merge in pytest's order (a hook that reordered items, answer
# "unsafe") makes it collect everything again.


def _fnv1a(text):
    """FNV-1a 64 of text's UTF-8 bytes: the Go side's Shard hash."""
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


# Plugins that reorder or select items across modules (so one kernel's
# share cannot tell where its items go in the whole), or that make a
# test's outcome depend on tests of other modules run in the same session.
_REORDERING_PLUGINS = ("randomly", "pytest_randomly", "random_order", "pytest_random_order",
                       "order", "pytest_order", "ordering", "pytest_ordering",
                       "dependency", "pytest_dependency", "reverse", "pytest_reverse")


def _split_unsafe(config):
    """Why this session must collect every test module, or ""."""
    if config.pluginmanager.is_blocked("ripple-split"):
        # The user's way to turn it off: -p no:ripple-split (on the
        # command line after --, or in the ini file's addopts).
        return "-p no:ripple-split"
    opt = config.option
    if getattr(opt, "collectonly", False):
        return "--collect-only lists the whole collection"
    if getattr(opt, "doctestmodules", False):
        return "--doctest-modules imports every module"
    if getattr(opt, "keepduplicates", False):
        return "--keep-duplicates"
    for name, flag in (("lf", "--last-failed"), ("failedfirst", "--failed-first"), ("newfirst", "--new-first"),
                       ("stepwise", "--stepwise"), ("stepwise_skip", "--stepwise-skip")):
        if getattr(opt, name, False):
            # They select or reorder by what the whole last run did (and
            # --lf runs everything when none of the selection failed).
            return flag + " needs the whole collection"
    if getattr(opt, "pyargs", False):
        return "--pyargs: the paths are module names"
    for name in _REORDERING_PLUGINS:
        if config.pluginmanager.hasplugin(name):
            return "plugin %s reorders the whole collection" % name
    return ""


def _rel(path, root):
    return os.path.relpath(str(path), root).replace(os.sep, "/")


def _plan(config, shares):
    """The pre-pass: {path relative to rootdir: share} for the candidate
    test files pytest would collect from config.args, dealt out by size."""
    from fnmatch import fnmatch

    root = str(config.rootpath)
    invocation = str(config.invocation_params.dir)
    patterns = config.getini("python_files")
    norecurse = config.getini("norecursedirs")
    ignore = {os.path.abspath(os.path.join(invocation, p)) for p in (config.getoption("ignore", None) or [])}
    ignore_glob = [os.path.abspath(os.path.join(invocation, p)) for p in (config.getoption("ignore_glob", None) or [])]

    def matches(path, pats):
        name = os.path.basename(path)
        return any(fnmatch(path if os.sep in p else name, p) for p in pats)

    def ignored(path):
        return path in ignore or any(fnmatch(path, g) for g in ignore_glob)

    found, seen = [], set()

    def add(path):
        if path not in seen and path.endswith(".py"):
            seen.add(path)
            try:
                found.append((_rel(path, root), os.path.getsize(path)))
            except OSError:
                pass

    for arg in config.args:
        top = os.path.abspath(os.path.join(invocation, str(arg).split("::", 1)[0]))
        if os.path.isfile(top):
            add(top)  # a file named on the command line is collected whatever its name
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not matches(os.path.join(dirpath, d), norecurse)
                                 and not ignored(os.path.join(dirpath, d)) and d != "__pycache__")
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if name not in ("__init__.py", "conftest.py") and matches(path, patterns) and not ignored(path):
                    add(path)
    plan, load = {}, [0] * shares
    for rel, size in sorted(found, key=lambda f: (-f[1], f[0])):
        share = min(range(shares), key=lambda i: (load[i], i))
        plan[rel] = share
        load[share] += size
    return plan


def _elsewhere_class():
    import pytest

    global _ELSEWHERE
    if _ELSEWHERE is None:
        class Elsewhere(pytest.Module):
            """A test module of another kernel's share: never imported,
            it collects nothing here."""

            def collect(self):
                return []

        _ELSEWHERE = Elsewhere
    return _ELSEWHERE


_ELSEWHERE = None


class _Split:
    """The plugin ("ripple-split") that makes a session collect one share
    of the test modules (share, of shares), and records the File
    collectors in the order collection reached them."""

    def __init__(self, config, share, shares, only=None):
        self.shares = max(1, shares)
        self.off = _split_unsafe(config)
        self.share = -1 if self.off else share
        self.root = str(config.rootpath)
        # only: the node ids of the test modules to collect, instead of
        # the share's (a kernel that takes a module of another kernel's
        # share: work stealing).
        self.only = None if only is None else set(only)
        self.plan = {} if self.off or self.only is not None else _plan(config, self.shares)
        self.decided = {}  # str(module path) -> its share
        self.files = []  # File collectors' node ids, in collection order
        self.owners = []  # each one's share; -1: every kernel collects it
        self.rank = {}  # file node id -> its index in files
        self.unsafe = ""
        # Files named with a node (path::name) on the command line: every
        # kernel collects them (the Go side reports their items once), as
        # pytest fails the run when it does not find a named node.
        invocation = str(config.invocation_params.dir)
        self.everywhere = {os.path.abspath(os.path.join(invocation, str(a).split("::", 1)[0]))
                           for a in config.args if "::" in str(a)}

    def answer(self):
        if self.off:
            return {"off": self.off}
        return {"share": self.share, "shares": self.shares, "planned": len(self.plan), "unsafe": self.unsafe}

    def owner(self, module_path):
        key = str(module_path)
        share = self.decided.get(key)
        if share is None:
            rel = _rel(module_path, self.root)
            share = self.plan.get(rel)
            if share is None:
                share = _fnv1a(rel) % self.shares
            self.decided[key] = share
        return share

    def rank_of_item(self, item):
        import pytest

        f = item.getparent(pytest.File)
        return -1 if f is None else self.rank.get(f.nodeid, -1)

    def rank_of_report(self, nodeid):
        """The file a collection report is about (-1: a directory's, or
        the session's) and how many files collection had reached then."""
        r = self.rank.get(nodeid)
        if r is None:
            r = self.rank.get(nodeid.split("::", 1)[0], -1) if "::" in nodeid else -1
        return r, len(self.files)

    # ---- hooks (registered only when the Go side asked for a split)

    @_hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path, parent):
        # A package's __init__.py and a conftest.py (when python_files
        # makes it a test module) are every kernel's: they hold fixtures
        # and hooks, and a package's set-up.
        if self.share < 0 or module_path.name in ("__init__.py", "conftest.py") or str(module_path) in self.everywhere:
            return None
        if self.only is not None:
            # A Module is not imported until collected: this one only
            # tells the node id.
            stub = _elsewhere_class().from_parent(parent, path=module_path)
            return None if stub.nodeid in self.only else stub
        if self.owner(module_path) == self.share:
            return None
        return _elsewhere_class().from_parent(parent, path=module_path)

    def pytest_collectstart(self, collector):
        import pytest

        if self.share < 0 or not isinstance(collector, pytest.File) or collector.nodeid in self.rank:
            return
        self.rank[collector.nodeid] = len(self.files)
        self.files.append(collector.nodeid)
        owner = -1
        if isinstance(collector, pytest.Module) and not isinstance(collector, pytest.Package):
            owner = self.decided.get(str(collector.path), -1)
        self.owners.append(owner)

    @_hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        before = {id(it): i for i, it in enumerate(items)} if self.share >= 0 else None
        yield
        if before is None:
            return
        # The Go side puts the kernels' items in pytest's order by file
        # (the collection order above), then by each kernel's order: right
        # when the hooks only deselected. A hook that reordered may have
        # done it by the whole collection (a session-scoped parametrized
        # fixture's grouping, a sort): only one kernel with everything can
        # tell that order.
        last = -1
        for it in items:
            i = before.get(id(it))
            if i is None or i < last:
                self.unsafe = "a pytest_collection_modifyitems hook reordered the items"
                return
            last = i
        for it in items:
            if self.rank_of_item(it) < 0:
                self.unsafe = "item %s is in no file" % it.nodeid
                return


def _scope(item, dist="loadfile"):
    """The group a test runs in. loadfile (the default): its module (its
    file's part of the node id, as xdist's loadfile groups), so that a
    module's and its classes' tests run on one kernel, in pytest's order,
    sharing module state and module- and class-scoped fixtures as they do
    under pytest. loadscope (ripple run --dist loadscope, as xdist's): its
    outermost class, else its module, taken from the collection tree, not
    the node id's text (a parametrize id may hold "::")."""
    module = item.nodeid.split("::", 1)[0]
    if dist != "loadscope":
        return module
    import pytest

    outer = None
    node = item.parent
    while node is not None:
        if isinstance(node, pytest.Class):
            outer = node
        elif isinstance(node, pytest.Module):
            break
        node = node.parent
    return outer.nodeid if outer is not None else module


def _junit_names(nodeid):
    """classname and name as pytest's junitxml writes them."""
    from _pytest.junitxml import mangle_test_address

    names = mangle_test_address(nodeid)
    return [".".join(names[:-1]), names[-1]]


class _Session:
    """One pytest session in this kernel; also the plugin that records the
    reports of the item running (registered as "ripple-kernel")."""

    def __init__(self, config):
        self.config = config
        self.session = None
        self.configured = False
        self.started = False
        self.collect_reports = []
        self.pending = None  # the item held back until its nextitem is known
        # ended: the outcome of the item run last, not yet sent: it goes
        # with the next item's start, or when run or finish returns.
        self.ended = None
        self.reports = []
        self.stopped = ""
        self.api = None
        self.split = None  # _Split: this session collects one share of the test modules
        # wide: the exceptions of session- or package-scoped fixtures whose
        # setup raised in this session, by id, with what to say of them
        # ("name (scope): error"); pytest keeps such an exception for the
        # fixture's scope and raises the same object in every test that
        # needs it. setup_clash: the running item's setup raised one of
        # them. When other sessions run beside this one (yieldWide), such
        # a failure is most often theirs colliding with this one (a fixed
        # directory, a port): the run stops without reporting the item,
        # and the Go side runs this session's tests elsewhere
        # (batch/tests.go, clash).
        self.wide = {}
        self.setup_clash = ""
        self.clash = ""

    # ---- hooks

    def pytest_collectreport(self, report):
        if report.passed:
            return
        path = report.nodeid.split("::", 1)[0]
        entry = {"nodeid": report.nodeid, "path": path, "junit": _junit_names(report.nodeid)}
        if self.split is not None and self.split.share >= 0:
            entry["file"], entry["pos"] = self.split.rank_of_report(report.nodeid)
        if report.failed:
            entry["status"] = "error"
            entry["message"] = _crash_message(report)
            entry["longrepr"] = report.longreprtext
        else:
            entry["status"] = "skipped"
            entry["message"] = _skip_reason(report)
        self.collect_reports.append(entry)

    def pytest_runtest_logreport(self, report):
        self.reports.append(report)

    @_hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        outcome = yield
        if outcome.excinfo is None or fixturedef.scope not in ("session", "package"):
            return
        exc = outcome.excinfo[1]
        import pytest

        if isinstance(exc, (pytest.skip.Exception, pytest.xfail.Exception)):
            return
        if id(exc) not in self.wide:
            self.wide[id(exc)] = (exc, "%s (%s-scoped) raised %s: %s" % (fixturedef.argname, fixturedef.scope, type(exc).__name__, exc))

    def pytest_runtest_makereport(self, item, call):
        if call.when == "setup" and call.excinfo is not None:
            hit = self.wide.get(id(call.excinfo.value))
            if hit is not None and hit[0] is call.excinfo.value:
                self.setup_clash = hit[1]

    # ---- steps

    def run(self, api, indices, yield_wide=False):
        self.api = api
        self.clash = ""
        items = self.session.items
        queue = [items[i] for i in indices]
        if self.pending is not None:
            queue.insert(0, self.pending)
            self.pending = None
        index = {id(it): i for i, it in enumerate(items)}
        try:
            with api.user_code():
                while len(queue) > 1:
                    item = queue.pop(0)
                    if not self._run_one(item, queue[0], index[id(item)], yield_wide):
                        if self.clash:
                            # Neither this item nor the queue is reported:
                            # the Go side runs them elsewhere, or here again
                            # (yieldWide off) when no other session is left.
                            return {"clash": self.clash}
                        return {"stopped": self.stopped, "notRun": [index[id(it)] for it in queue]}
        finally:
            self._send_ended()
        self.pending = queue[0] if queue else None
        return {}

    def finish(self, api, keep=False, yield_wide=False):
        self.api = api
        self.clash = ""
        answer = {}
        close = True
        try:
            try:
                with api.user_code():
                    if self.pending is not None and not self.stopped:
                        item, self.pending = self.pending, None
                        index = self.session.items.index(item)
                        if not self._run_one(item, None, index, yield_wide):
                            if self.clash:
                                close = False  # the Go side decides (run)
                                return {"clash": self.clash}
                            answer = {"stopped": self.stopped}
            finally:
                self._send_ended()
        finally:
            if close and (not keep or self.stopped):
                self.close()
            elif close and _RECORDER is not None and _RECORDER.on:
                # Modules the tests imported: their sources, for the hot path.
                _RECORDER.snapshot()
        return answer

    def _send_ended(self):
        """Send the held outcome of the last item run (see _run_one)."""
        if self.ended is not None:
            ended, self.ended = self.ended, None
            self.api.emit_progress(ended)

    def _run_one(self, item, nextitem, i, yield_wide=False):
        api = self.api
        # The previous item's outcome goes in one write with this start:
        # nothing runs between them. run and finish send a held outcome
        # before they return, whatever ends them.
        start = {"event": "start", "i": i}
        if self.ended is not None:
            ended, self.ended = self.ended, None
            api.emit_progress(ended, start)
        else:
            api.emit_progress(start)
        self.reports = []
        self.setup_clash = ""
        # An interrupt (KeyboardInterrupt out of the protocol) sends no
        # outcome: the Go side knows which item was running.
        rec = _RECORDER if _RECORDER is not None and _RECORDER.on else None
        if rec is not None:
            rec.begin_test(item.nodeid)
        try:
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        finally:
            if rec is not None:
                rec.end_test()
        reports, self.reports = self.reports, []
        api.flush_output()
        if yield_wide and self.setup_clash:
            self.clash = self.setup_clash
            return False
        self.ended = _outcome(i, reports)
        s = self.session
        if s.shouldfail or s.shouldstop:
            self.stopped = str(s.shouldfail or s.shouldstop)
            return False
        return True

    def close(self):
        global _SESSION
        config, session = self.config, self.session
        try:
            if self.started:
                self.started = False
                exitstatus = 1 if session.testsfailed else 0
                session.exitstatus = exitstatus
                config.hook.pytest_sessionfinish(session=session, exitstatus=exitstatus)
        finally:
            if self.configured:
                self.configured = False
                config._ensure_unconfigure()
            if _SESSION is self:
                _SESSION = None


class _WideFixtures:
    """--watch: while a fixture of a wider scope than function sets up,
    what runs is not the test's own (its value is shared by later tests):
    the recorder counts it apart. Its teardown: _patch_fixture_finish."""

    def __init__(self, rec):
        self.rec = rec

    @_hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        wide = getattr(fixturedef, "scope", "function") != "function"
        if wide:
            self.rec.wide(1)
        try:
            yield
        finally:
            if wide:
                self.rec.wide(-1)


def _patch_fixture_finish():
    """The teardown of a wider-scoped fixture (FixtureDef.finish, which
    runs its finalizers) counts as wide too: pytest has no hook around it.
    Patched once per kernel, and only by a watch."""
    from _pytest.fixtures import FixtureDef

    orig = FixtureDef.finish

    def finish(self, request):
        rec = _RECORDER
        wide = rec is not None and rec.on and getattr(self, "scope", "function") != "function"
        if wide:
            rec.wide(1)
        try:
            return orig(self, request)
        finally:
            if wide:
                rec.wide(-1)

    FixtureDef.finish = finish


def _hot(params):
    """The "hot" op: see the module doc and ripple_watchfn.py."""
    rec, state = _RECORDER, _SESSION
    if rec is None or not rec.on or state is None or state.session is None or not state.started:
        return {"fallback": "no open watch session in this kernel"}
    wf = _watchfn()
    files = [(str(f["path"]), str(f["source"])) for f in params.get("files") or []]
    try:
        patches, changed, moved = rec.plan(files)
    except SyntaxError as e:
        return {"syntaxError": "%s: line %s: %s" % (e.filename, e.lineno, e.msg)}
    except wf.Fallback as e:
        return {"fallback": str(e)}
    rec.apply(files, patches)
    s = state.session
    s.testsfailed = 0
    s.shouldfail = s.shouldstop = False
    state.stopped = ""
    return {"changed": changed, "moved": moved, "tests": sorted(rec.affected(changed))}


def _crash_message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    return str(report.longrepr).strip().split("\n")[-1]


def _skip_reason(report):
    if isinstance(report.longrepr, tuple):
        reason = report.longrepr[2]
        if reason.startswith("Skipped: "):
            reason = reason[len("Skipped: "):]
        return reason
    return str(report.longrepr or "")


_PHASE_WORD = {"setup": "at setup", "teardown": "at teardown"}


def _outcome(i, reports):
    """An item's reports (setup, call, teardown) as pytest counts them:
    the outcome of the call, error when the setup or the teardown failed,
    skipped/xfailed when the setup skipped."""
    status, message = "", ""
    texts, out, err, sections = [], [], [], []
    duration = 0.0
    for rep in reports:
        duration += rep.duration or 0.0
        xfail = hasattr(rep, "wasxfail")
        if rep.failed:
            if rep.when == "call":
                status = "failed" if status != "error" else status
                message = message or _crash_message(rep)
                texts.append(rep.longreprtext)
            else:
                status = "error"
                message = message or "%s: %s" % (_PHASE_WORD[rep.when], _crash_message(rep))
                texts.append("%s of %s\n%s" % (_PHASE_WORD[rep.when].upper(), rep.nodeid, rep.longreprtext))
        elif rep.skipped:
            if rep.when != "teardown" and status != "error":
                status = "xfailed" if xfail else "skipped"
                message = rep.wasxfail if xfail else _skip_reason(rep)
        elif rep.when == "call" and status in ("", "passed"):
            status = "xpassed" if xfail else "passed"
            if xfail:
                message = rep.wasxfail
        elif rep.when == "setup" and status == "":
            status = "passed"  # until the call says otherwise
    if reports:
        last = reports[-1]
        for title, content in last.sections:
            sections.append([title, content])
            if "stdout" in title:
                out.append(content)
            elif "stderr" in title:
                err.append(content)
    if not reports:
        status, message = "interrupted", "no report"
    ev = {"event": "end", "i": i, "status": status, "duration": duration}
    if status not in ("passed",):
        ev["message"] = message
        if texts:
            ev["longrepr"] = "\n".join(texts)
        if sections:
            ev["sections"] = sections
            ev["stdout"] = "".join(out)
            ev["stderr"] = "".join(err)
    return ev


# ---------------------------------------------------------------- no pytest


def _arg_paths(args):
    """The paths among pytest's arguments (PATH or PATH::NODE; options and
    their values are not: the Go side refuses them without pytest)."""
    return [str(a).split("::", 1)[0] for a in args or [] if not str(a).startswith("-")]


def _test_files(root, paths=None):
    """The test files under root, or under paths (relative to root): a
    file named counts whatever its name, as pytest collects it."""
    for top in paths or [root]:
        top = os.path.join(root, top)
        if os.path.isfile(top):
            if top.endswith(".py"):
                yield top
            continue
        yield from _walk_test_files(top)


def _walk_test_files(root):
    skip = {".git", ".hg", ".tox", ".venv", "venv", "node_modules", "__pycache__", "build", "dist"}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py") and (name.startswith("test") or name.endswith("_test.py")):
                yield os.path.join(dirpath, name)


def _pytest_style_files(root, paths=None):
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


def _unittest(api, params):
    """Without pytest: unittest's loader (discover, pattern test*.py from
    the project root) and runner, one module at a time per "run"."""
    import unittest

    global _UNITTEST
    root = os.getcwd()
    op = params.get("step", "collect")
    if op == "collect":
        pattern = params.get("pattern") or "test*.py"
        tops = []  # (start directory, pattern, top-level directory)
        for arg in _arg_paths(params.get("paths")):
            path = os.path.abspath(os.path.join(root, arg))
            if not os.path.exists(path):
                # pytest's words for it (a usage error).
                return {"usage": "file or directory not found: %s" % arg}
            if os.path.isdir(path):
                tops.append((path, pattern, _unittest_top(root, path)))
            else:
                start = os.path.dirname(path)
                tops.append((start, os.path.basename(path), _unittest_top(root, start)))
        tests = []
        with api.user_code():
            for start, pat, top in tops or [(root, pattern, root)]:
                _flatten(unittest.defaultTestLoader.discover(start, pattern=pat, top_level_dir=top), tests)
        _UNITTEST = tests
        chunk = []
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
    with api.user_code():
        unittest.TestSuite(tests).run(result)
    # Tests that never started: their class or module fixture failed or
    # skipped (unittest reports that once, on a stand-in test).
    why = {"status": "error", "message": "not run"}
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


_UNITTEST = []


def _unittest_top(root, start):
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


def _flatten(suite, out):
    for t in suite:
        if hasattr(t, "__iter__"):
            _flatten(t, out)
        else:
            out.append(t)


def _unittest_node(test, root):
    """A pytest-style node id for a unittest test: path::Class::method."""
    import inspect

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


def _junit_from_id(nodeid):
    from_path, _, rest = nodeid.partition("::")
    names = [from_path[:-3].replace("/", ".") if from_path.endswith(".py") else from_path] + rest.split("::")
    return [".".join(names[:-1]), names[-1]]


class _EventResult:
    """A unittest result that sends each test's outcome as it ends."""

    def __new__(cls, api, index):
        import time
        import traceback
        import unittest

        class Result(unittest.TestResult):
            def startTest(self, test):
                super().startTest(test)
                self._t0 = time.perf_counter()
                self._ev = None
                i = index.get(id(test))
                if i is not None:
                    api.emit_progress({"event": "start", "i": i})

            def _set(self, status, message="", text=""):
                self._ev = {"status": status, "message": message, "longrepr": text}

            def addSuccess(self, test):
                self._set("passed")

            def addFailure(self, test, err):
                self._set("failed", _exc_line(err), "".join(traceback.format_exception(*err)))

            def addError(self, test, err):
                i = index.get(id(test))
                if i is None:
                    # A class or module fixture (setUpClass...) failed.
                    return super().addError(test, err)
                self._set("error", _exc_line(err), "".join(traceback.format_exception(*err)))

            def addSkip(self, test, reason):
                if index.get(id(test)) is None:
                    return super().addSkip(test, reason)
                self._set("skipped", reason)

            def addExpectedFailure(self, test, err):
                self._set("xfailed", _exc_line(err))

            def addUnexpectedSuccess(self, test):
                self._set("failed", "Unexpected success")

            def addSubTest(self, test, subtest, err):
                if err is not None and (self._ev is None or self._ev["status"] == "passed"):
                    kind = "failed" if issubclass(err[0], test.failureException) else "error"
                    self._set(kind, "%s: %s" % (subtest, _exc_line(err)), "".join(traceback.format_exception(*err)))

            def stopTest(self, test):
                super().stopTest(test)
                i = index.get(id(test))
                if i is None:
                    return
                ev = self._ev or {"status": "passed"}
                ev.update(event="end", i=i, duration=time.perf_counter() - self._t0)
                self.ended.add(i)
                api.flush_output()
                api.emit_progress(ev)

        r = Result()
        r.ended = set()
        return r


def _exc_line(err):
    import traceback

    return "".join(traceback.format_exception_only(err[0], err[1])).strip().split("\n")[-1]
