"""Test helpers: load the engine by path and drive it like the Go side does.

Session(files) makes a temporary project, an Engine over a StubKernel, and
compiles the files. ``run()`` executes a stack and returns a Run: the
result, the progress events, and views of the updates by depth and id.
Latest (the view a client keeps) accumulates the newest update per id and
depth across runs, as the Go side's context store does.
"""

import contextlib
import importlib.util
import io
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_DIR = os.path.dirname(HERE)
# ENGINE_PATH: an engine.py of the flat layout before the ripple_kernel
# package (bench/engine/reruns.py compares an older engine with this one);
# None loads ripple_kernel from KERNEL_DIR.
ENGINE_PATH = None
sys.path.insert(0, HERE)

from stubkernel import StubKernel  # noqa: E402

_engine_module = None


def engine_module():
    """The ripple_kernel.engine module, imported through the package's own
    loader as the kernel does (the kernel's directory stays off sys.path)."""
    global _engine_module
    if _engine_module is None and ENGINE_PATH is not None:
        spec = importlib.util.spec_from_file_location("ripple_engine_under_test", ENGINE_PATH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _engine_module = module
    if _engine_module is None:
        path = os.path.join(KERNEL_DIR, "ripple_kernel", "loader.py")
        spec = importlib.util.spec_from_file_location("ripple_kernel_bootstrap", path)
        loader = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loader)
        loader.install(KERNEL_DIR)
        import ripple_kernel.engine

        _engine_module = ripple_kernel.engine
    return _engine_module


def path_of(name):
    return name.replace(".", "/") + ".py"


def main_stack(module="main", name="main", args=(), owner="", this=None):
    item = {
        "type": "ExplicitCall",
        "module": module,
        "definedOnType": owner,
        "name": name,
        "positionalArgumentsExpressions": list(args),
    }
    if this is not None:
        item["thisArgumentExpression"] = this
    return [item]


class Run:
    def __init__(self, result, events, output):
        self.result = result
        self.events = events
        self.output = output

    def updates(self, depth=None):
        out = []
        for ev in self.events:
            if ev["type"] == "updates" and (depth is None or ev["depth"] == depth):
                out.extend(ev["updates"])
        return out

    def top_depth(self):
        depths = [ev["depth"] for ev in self.events if ev["type"] == "updates"]
        return max(depths) if depths else 0

    def pending(self, depth=0):
        return [u["expressionId"] for u in self.updates(depth) if u["payload"]["type"] == "Pending" and "message" not in u["payload"]]

    def computed(self, depth=0):
        """Ids of statements that ran (fresh values or panics), in order."""
        return [
            u["expressionId"]
            for u in self.updates(depth)
            if u["payload"]["type"] in ("Value", "Panic") and not u["fromCache"] and u["profilingInfo"]
        ]

    def values(self, depth=0):
        out = {}
        for u in self.updates(depth):
            out[u["expressionId"]] = describe(u)
        return out

    def reasons(self, depth=0):
        """{id: (reason kind, expressionId)} of the statements a run
        reported Pending with a reason (not reached, held: PROTOCOL.md 8)."""
        out = {}
        for u in self.updates(depth):
            reason = u["payload"].get("reason")
            if u["payload"]["type"] == "Pending" and reason is not None:
                out[u["expressionId"]] = (reason["kind"], reason.get("expressionId"))
        return out

    def diagnostics(self):
        return [ev["diagnostic"] for ev in self.events if ev["type"] == "diagnostic"]

    def visualizations(self):
        return [ev for ev in self.events if ev["type"] in ("visualization", "visualizationFailed")]


def describe(update):
    payload = update["payload"]
    kind = payload["type"]
    if kind == "Value":
        return payload.get("preview")
    if kind == "Panic":
        return ("Panic", payload["message"], tuple(payload["trace"]))
    if kind == "Pending":
        return ("Pending", payload.get("message"))
    return (kind,)


class Session:
    def __init__(self, files=None, compile_files=True, scripts=()):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="ripple-engine-test-"))
        self.kernel = StubKernel(self.root)
        self.engine = engine_module().Engine(self.kernel)
        self.latest = {}  # depth -> {id: update}
        self.files = {}
        self.scripts = list(scripts)  # modules compiled as scripts (run as __main__)
        if files and compile_files:
            self.compile(files)

    def close(self):
        self.engine.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def write(self, relpath, text):
        full = os.path.join(self.root, relpath)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)

    def compile(self, files, removed=()):
        mods = []
        for name, source in files.items():
            self.files[name] = source
            mods.append({"name": name, "path": path_of(name), "source": source})
        request = {"modules": mods, "removed": list(removed)}
        if self.scripts:
            request["scripts"] = self.scripts
        return self.engine.compile(request)

    def run(self, stack=None, invalidate=None, wanted=None, visualizations=None, context="ctx", generation=0, drop=None,
            stop_at_skip=None, run_once=None, effects=None):
        stack = stack or main_stack()
        self.kernel.events = []
        out = io.StringIO()
        params = {
            "contextId": context,
            "generation": generation,
            "stack": stack,
            "invalidate": invalidate,
            "wanted": wanted,
            "visualizations": visualizations or [],
        }
        if drop is not None:
            params["drop"] = drop
        if stop_at_skip is not None:
            params["stopAtSkip"] = stop_at_skip
        if run_once is not None:
            params["runOnce"] = run_once
        if effects is not None:
            params["effects"] = effects
        with contextlib.redirect_stdout(out):
            try:
                result = self.engine.execute(params)
            except KeyboardInterrupt:
                result = "interrupted"
        run = Run(result, self.kernel.events, out.getvalue())
        top = len(stack) - 1
        # Like the Go side: a stack change drops deeper frames' updates.
        for depth in [d for d in self.latest if d > top]:
            del self.latest[depth]
        for ev in run.events:
            if ev["type"] == "updates":
                view = self.latest.setdefault(ev["depth"], {})
                for u in ev["updates"]:
                    view[u["expressionId"]] = u
        return run

    def view(self, depth=0):
        return {k: describe(u) for k, u in self.latest.get(depth, {}).items()}


class EngineTestCase(unittest.TestCase):
    def session(self, files=None, **kw):
        s = Session(files, **kw)
        self.addCleanup(s.close)
        return s


@contextlib.contextmanager
def own_journal(prefix="ripple-journal-"):
    """A value journal of one's own for the block: RIPPLE_VALUES_DB names
    a file in a new temporary directory (the value), then is as it was,
    and the directory is gone."""
    saved = os.environ.get("RIPPLE_VALUES_DB")
    d = tempfile.mkdtemp(prefix=prefix)
    os.environ["RIPPLE_VALUES_DB"] = os.path.join(d, ".ripple", "values.db")
    try:
        yield d
    finally:
        if saved is None:
            os.environ.pop("RIPPLE_VALUES_DB", None)
        else:
            os.environ["RIPPLE_VALUES_DB"] = saved
        shutil.rmtree(d, ignore_errors=True)


class JournalTestCase(unittest.TestCase):
    """Engines that share one value journal, as a kernel and the kernels
    after its restarts do: self.dir is a temporary directory, self.path the
    journal file in it (RIPPLE_VALUES_DB), self.sessions the engine that
    is up (session)."""

    def setUp(self):
        journal = own_journal("ripple-%s-" % type(self).__name__.lower())
        self.dir = journal.__enter__()
        self.addCleanup(journal.__exit__, None, None, None)
        self.path = os.environ["RIPPLE_VALUES_DB"]
        self.sessions = []

    def tearDown(self):
        for s in self.sessions:
            s.close()

    def session(self, files, scripts=(), flush=True):
        """A new engine (a new kernel) on the journal, after the previous
        one wrote its frames (flush, as its idle time would) or was killed
        (not flush)."""
        for s in self.sessions:
            if flush:
                s.engine.journal_flush()
            s.close()
        self.sessions = []
        for name in files:
            sys.modules.pop(name, None)
        s = Session(files, scripts=scripts)
        self.sessions.append(s)
        return s
