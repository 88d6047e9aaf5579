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
        collection reports that did not pass. With "select" (node ids and
        test files, relative to rootdir) the session collects only those
        out of args' paths: the hand-over (pytest_split.selected).
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
        --watch at function granularity (watchfn.py): patches the
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

State: one session per kernel at a time (_STATE.session); a new "collect"
closes the previous one. Requests run one at a time on the kernel's main
thread, so there is no lock.

The plugin's parts: pytest_session.py (module imports for --watch, the
--junitxml and cache settings), pytest_split.py (each kernel collects its share of the
test modules), pytest_report.py (items and outcomes as the Go side reads
them), pytest_unittest.py (the path without pytest), watchfn.py (--watch's
recorder and hot path), rewrite_cache.py (pytest's assertion rewriting,
cached).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Dict, Generator, List, Optional, Tuple, Union

# Imported with this module: a pytest kernel takes the package's finder
# off sys.meta_path once this is loaded (Kernel.add_pytest).
from . import pytest_session, rewrite_cache
from .api import KernelAPI, WireObject
from .pytest_console import Console, Discard, Sink, send_listing
from .pytest_report import JUnitLogging, junit_names, outcome, scope, skip_reason, crash_message
from .pytest_split import Split, hookimpl, selected
from .noinput import restore_input
from .signals import TEST_PROCESS

if TYPE_CHECKING:
    import warnings

    import pytest
    from _pytest.fixtures import FixtureDef, SubRequest
    from pluggy._result import _Result

    from .watchfn import Recorder


@dataclass
class _PluginState:
    """What the plugin keeps between requests."""

    session: Optional[_Session] = None  # the open session, if any
    recorder: Optional[Recorder] = None  # watchfn.Recorder: --watch only


_STATE = _PluginState()
# The process state pytest's code sees (signals.PytestProcess): every
# region below where pytest's code runs is in its hidden() and signals().
_PROC = TEST_PROCESS
# Outcomes after which a test's end and the next one's start may be held.
_HOLD_AFTER = frozenset({"passed", "skipped", "xfailed", "xpassed"})


def _watchfn() -> ModuleType:
    """The recorder's module (watchfn.py), imported on first use: a plain
    run never loads it."""
    from . import watchfn

    return watchfn


def handle(api: KernelAPI, params: WireObject) -> WireObject:
    # A kernel that runs tests is the process pytest would run them in:
    # Python's input(), not the kernel's refusal (noinput.py), which code
    # binds at import and tests drive through sys.stdin.
    restore_input()
    op = params.get("op")
    session = _STATE.session
    if op == "collect":
        return _collect(api, params)
    if op == "run":
        if session is None:
            raise RuntimeError("pytest: run before collect")
        return session.run(api, params.get("indices") or [], bool(params.get("yieldWide")))
    if op == "finish":
        if session is None:
            return {}
        return session.finish(api, bool(params.get("keep")), bool(params.get("yieldWide")))
    if op == "hot":
        return _hot(params)
    if op == "unittest":
        from . import pytest_unittest

        return pytest_unittest.run(api, params)
    raise ValueError("pytest: unknown op %r" % (op,))


def _collect(api: KernelAPI, params: WireObject) -> WireObject:
    if _STATE.session is not None:
        # A session left open (its run was stopped): tear it down without
        # running its held-back test.
        _STATE.session.pending = None
        _STATE.session.close()
        _STATE.session = None
    with pytest_session.collection_gc():
        return _collect_pytest(api, params)


def _collect_pytest(api: KernelAPI, params: WireObject) -> WireObject:
    try:
        import importlib

        importlib.import_module("pytest")
    except ImportError as e:
        from . import pytest_unittest

        return {"noPytest": "%s: %s" % (type(e).__name__, e), "python": sys.executable,
                "needsPytest": pytest_unittest.pytest_style_files(
                    os.getcwd(), pytest_unittest.arg_paths(params.get("args")))}
    args = [str(a) for a in params.get("args") or []]
    # A kernel the run did not start (a runtime agent's) is told its
    # worker variables here, as a local kernel gets them at its start.
    for name, value in (params.get("env") or {}).items():
        os.environ[str(name)] = str(value)
    import time

    started_ns = time.time_ns()
    rec = None
    if params.get("watch"):
        if _STATE.recorder is None:
            _STATE.recorder = _watchfn().Recorder(os.getcwd())
            _patch_fixture_finish()
        rec = _STATE.recorder
        if params.get("purge"):
            rec.forget_sources()
        if not rec.on:
            rec.start()
        rec.collecting(True)
    if params.get("purge"):
        pytest_session.purge_project_modules(os.getcwd())
    try:
        return _collect_session(api, params, args, rec, started_ns)
    finally:
        if rec is not None:
            rec.collecting(False)


def _collect_session(
    api: KernelAPI, params: WireObject, args: List[str], rec: Optional[Recorder], started_ns: int
) -> WireObject:
    import pytest

    # Assertion rewriting cached where pytest cannot cache it itself.
    rewrite_cache.install()
    state = _start_session(api, params, args, rec)
    if not isinstance(state, _Session):
        return state  # pytest's usage error, or an interrupt
    config = state.config
    split = state.split
    _send_items(api, state, params.get("dist") or "loadfile")
    if params.get("deps"):
        for path, deps in pytest_session.dependencies(state.items(), str(config.rootpath)).items():
            api.emit_progress({"event": "deps", "path": path, "deps": deps})
    if rec is not None:
        rec.snapshot(started_ns)
    console = None
    header = None
    tr = config.pluginmanager.get_plugin("terminalreporter")
    deselected = len(tr.stats.get("deselected", [])) if tr is not None else 0
    if not config.option.collectonly and tr is not None:
        header = state.console.getvalue()
        tr._tw = state.con.writer(Discard()) if state.con is not None else tr._tw
    if config.option.collectonly:
        # Nothing runs: the session ends here, as pytest's does, with its
        # listing, its summary line and its status.
        state.exitstatus = 0 if state.items() else 5
        if state.collect_errors():
            state.exitstatus = 2
        state.close()
        console = state.console.getvalue()
        send_listing(api, console)
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
        "count": len(state.items()),
        "continueOnCollectionErrors": bool(config.option.continue_on_collection_errors),
        "collectOnly": bool(config.option.collectonly),
        "stopped": state.stopped,
        "stopFailed": state.stop_failed,
        "shouldfail": str(state.session.shouldfail or "") if state.session is not None else "",
        "rootdir": str(config.rootpath),
        "pytest": pytest.__version__,
        "junitxml": pytest_session.junitxml(config),
        "console": console,
        "header": header,
        "deselected": deselected,
        "verbosity": int(config.option.verbose),
        "maxfail": int(config.option.maxfail or 0),
        "consoleSettings": state.con.settings() if state.con is not None else None,
        "warnings": state.con.take_warnings() if state.con is not None else [],
        "cache": pytest_session.cache(config, int(params.get("worker", 0))),
    }


def _start_session(
    api: KernelAPI, params: WireObject, args: List[str], rec: Optional[Recorder]
) -> Union[_Session, WireObject]:
    """Build the Config from args, configure it, start the session and
    collect; the session, or the answer when pytest refused (usage) or was
    interrupted."""
    import pytest
    from _pytest.config import _prepareconfig
    from _pytest.main import Session

    with api.user_code(), _PROC.hidden(), _PROC.signals():
        try:
            with pytest_session.cached_distributions(), pytest_session.prog("pytest"):
                config = _prepareconfig(args, plugins=None)
        except pytest.UsageError as e:
            return {"usage": str(e)}
        refused = pytest_session.refused_option(config)
        if refused:
            config._ensure_unconfigure()  # what plugins started while parsing (pytest-cov's coverage)
            return {"usage": refused}
        # The kernel runs nothing but this run's pytest from here on: its
        # sys.argv is pytest's command line (the kernel's own [""] serves
        # the live engine's modules, which a test kernel never runs).
        sys.argv[:] = pytest_session.command_line(args)
        _as_worker(config, params, args)
        state = _Session(config)
        _STATE.session = state
        try:
            config._do_configure()
            state.configured = True
            state.xml = pytest_session.worker_xml(config)
            tr = config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                # --collect-only: pytest's own listing is the run's output;
                # else the first kernel keeps the header and the
                # "collected" line (the run prints them), then nothing.
                # The console (pytest_console.py) renders each report as
                # pytest's reporter would for the Go side's stdout.
                tty = bool(params.get("tty"))
                state.con = Console(config, tr, tty, int(params.get("columns") or 0))
                state.console.tty = tty
                tr.isatty = tty  # its "collecting ..." line, as on pytest's terminal
                first = int(params.get("worker", 0)) == 0
                sink = state.console if config.option.collectonly or first else Discard()
                tr._tw = state.con.writer(sink)
            config.pluginmanager.register(state, "ripple-kernel")
            if int(params.get("worker", 0)) == 0 and not params.get("select"):
                state.file_times = pytest_session.FileTimes()
                config.pluginmanager.register(state.file_times, "ripple-file-times")
            if state.con is not None and hasattr(config.hook, "pytest_warning_recorded"):  # pytest >= 6
                config.pluginmanager.register(_Warnings(state.con), "ripple-warnings")
            if rec is not None:
                config.pluginmanager.register(_WideFixtures(rec), "ripple-watch")
            split = params.get("split")
            if split:
                state.split = Split(config, int(split["share"]), int(split["shares"]), split.get("only"))
                config.pluginmanager.register(state.split, "ripple-split")
            session = Session.from_config(config)
            session.exitstatus = 0
            state.session = session
            config.hook.pytest_sessionstart(session=session)
            state.started = True
            # A hand-over (pytest_split.selected): the tests given, not
            # the command line's.
            with selected(config, params.get("select")):
                config.hook.pytest_collection(session=session)
        except pytest.UsageError as e:
            # As pytest's wrap_session: the session ends with status 4 (its
            # terminal reporter's last line); the first kernel's console
            # is what pytest printed on stdout.
            state.exitstatus = 4
            state.close()
            _STATE.session = None
            return {"usage": str(e), "console": state.console.getvalue()}
        except (KeyboardInterrupt, pytest.exit.Exception) as e:
            state.close()
            _STATE.session = None
            return {"interrupted": "%s: %s" % (type(e).__name__, e)}
        except (Session.Interrupted, Session.Failed) as e:
            # A -x/--maxfail stop during collection (Failed: collection
            # errors reached maxfail before the last module; pytest's
            # session then ends failed, status 1).
            state.stopped = str(e)
            state.stop_failed = isinstance(e, Session.Failed)
        except Exception as e:
            # As pytest's wrap_session: anything else is pytest's internal
            # error (a plugin's or conftest's hook raised): INTERNALERROR>
            # lines, then the session ends with status 3.
            pytest_session.internal_error(config)
            state.exitstatus = 3
            state.close()
            _STATE.session = None
            return {"internal": "%s: %s" % (type(e).__name__, e), "console": state.console.getvalue()}
    return state


def _as_worker(config: pytest.Config, params: WireObject, args: List[str]) -> None:
    """The kernels are workers of one run, as xdist's are: plugins that
    know xdist (junitxml, the last-failed cache) leave the run's reports to
    the controller, which is the Go side."""
    config.workerinput = {  # type: ignore[attr-defined]  # xdist's attribute, read by plugins
        "workerid": "gw%d" % int(params.get("worker", 0)),
        "workercount": int(params.get("workers", 1)),
        "testrunuid": str(params.get("runID", "")),
        "mainargv": ["pytest"] + args,
    }
    config.workeroutput = {}  # type: ignore[attr-defined]  # xdist's attribute, written by plugins
    if int(params.get("workers", 1)) > 1 and getattr(config.option, "basetemp", None):
        config.option.basetemp = pytest_session.worker_basetemp(str(config.option.basetemp), int(params.get("worker", 0)))
    if getattr(config.option, "dist", "no") != "no":
        config.option.dist = "no"  # xdist in a kernel: the kernels are the workers
        config.option.numprocesses = None


def _send_items(api: KernelAPI, state: _Session, dist: str) -> None:
    """The items go as progress frames, a chunk at a time: a result is
    capped at 64 KiB, a collection of thousands of tests is not. The
    collection reports that did not pass follow."""
    split = state.split
    chunk: List[WireObject] = []
    for item in state.items():
        path, line, domain = item.location
        entry: WireObject = {
            "nodeid": item.nodeid,
            "path": path.replace(os.sep, "/"),
            "line": line if line is not None else -1,
            "scope": scope(item, dist),
            "junit": junit_names(item.nodeid),
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
    if state.file_times is not None:
        state.file_times.send(api.emit_progress)


class _Session:
    """One pytest session in this kernel; also the plugin that records the
    reports of the item running (registered as "ripple-kernel")."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.session: Optional[pytest.Session] = None
        self.configured = False
        self.started = False
        self.collect_reports: List[WireObject] = []
        self.pending: Optional[pytest.Item] = None  # the item held back until its nextitem is known
        # ended: the outcome of the item run last, not yet sent: it goes
        # with the next item's start, or when run or finish returns.
        self.ended: Optional[WireObject] = None
        self.reports: List[pytest.TestReport] = []
        # pass_marks: output may pass pytest's capture (-s): each report's
        # place in it is marked for the Go side (pytest_runtest_logreport).
        self.pass_marks = str(getattr(config.option, "capture", "fd")) in ("no", "sys", "tee-sys")
        self.stopped = ""
        self.stop_failed = False  # collection raised pytest's Session.Failed (-x, --maxfail)
        self.console = Sink()  # what pytest's terminal reporter wrote (the header, --collect-only)
        self.con: Optional[Console] = None  # renders reports for the Go side's console
        self.exitstatus: Optional[int] = None  # set: the session's end status (close)
        self.api: Optional[KernelAPI] = None
        self.split: Optional[Split] = None  # this session collects one share of the test modules
        self.file_times: Optional[pytest_session.FileTimes] = None  # the first kernel's: each file's collect time
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
        self.wide: Dict[int, Tuple[BaseException, str]] = {}
        self.setup_clash = ""
        self.clash = ""
        # How pytest's junitxml would write captured output (ini options).
        self.junit_logging = JUnitLogging(str(config.getini("junit_logging")), bool(config.getini("junit_log_passing_tests")))
        self.xml: Optional[pytest_session.WorkerXML] = None  # with --junitxml: what tests record for the file

    def stop_interrupts(self) -> bool:
        """pytest stopped the session as interrupted (shouldstop: --sw;
        exit status 2), not as failed (shouldfail: -x, --maxfail)."""
        s = self.session
        return s is not None and bool(s.shouldstop) and not s.shouldfail

    def collect_errors(self) -> int:
        return sum(1 for r in self.collect_reports if r["status"] == "error")

    def items(self) -> List[pytest.Item]:
        """The collected items (once the session started)."""
        return self.session.items if self.session is not None else []

    # ---- hooks

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.passed:
            return
        path = report.nodeid.split("::", 1)[0]
        entry: WireObject = {"nodeid": report.nodeid, "path": path, "junit": junit_names(report.nodeid)}
        if self.split is not None and self.split.share >= 0:
            entry["file"], entry["pos"] = self.split.rank_of_report(report.nodeid)
        if self.con is not None:
            digest = self.con.collect_report(report)
            if digest is not None:
                entry["console"] = digest
        if report.failed:
            entry["status"] = "error"
            entry["message"] = crash_message(report)
            entry["longrepr"] = report.longreprtext
        else:
            entry["status"] = "skipped"
            entry["message"] = skip_reason(report)
            entry["junitText"] = str(report.longrepr)
        self.collect_reports.append(entry)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)
        if self.pass_marks and self.api is not None:
            self.api.flush_output()  # what passed the capture so far, then the mark
            self.api.emit_progress({"event": "passMark", "when": report.when})

    @hookimpl(hookwrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: FixtureDef[object], request: SubRequest
    ) -> Generator[None, _Result, None]:
        result = yield
        if result.excinfo is None or fixturedef.scope not in ("session", "package"):
            return
        exc = result.excinfo[1]
        import pytest

        if isinstance(exc, (pytest.skip.Exception, pytest.xfail.Exception)):
            return
        if id(exc) not in self.wide:
            self.wide[id(exc)] = (exc, "%s (%s-scoped) raised %s: %s" % (fixturedef.argname, fixturedef.scope, type(exc).__name__, exc))

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        if call.when == "setup" and call.excinfo is not None:
            hit = self.wide.get(id(call.excinfo.value))
            if hit is not None and hit[0] is call.excinfo.value:
                self.setup_clash = hit[1]

    # ---- steps

    def run(self, api: KernelAPI, indices: List[int], yield_wide: bool = False) -> WireObject:
        self.api = api
        self.clash = ""
        items = self.items()
        queue = [items[i] for i in indices]
        if self.pending is not None:
            queue.insert(0, self.pending)
            self.pending = None
        index = {id(it): i for i, it in enumerate(items)}
        try:
            with api.user_code(), _PROC.hidden(), _PROC.tests():
                while len(queue) > 1:
                    item = queue.pop(0)
                    if not self._run_one(item, queue[0], index[id(item)], yield_wide):
                        if self.clash:
                            # Neither this item nor the queue is reported:
                            # the Go side runs them elsewhere, or here again
                            # (yieldWide off) when no other session is left.
                            return {"clash": self.clash}
                        return {"stopped": self.stopped, "interrupted": self.stop_interrupts(),
                                "notRun": [index[id(it)] for it in queue]}
        finally:
            self._send_ended()
        self.pending = queue[0] if queue else None
        return {}

    def finish(self, api: KernelAPI, keep: bool = False, yield_wide: bool = False) -> WireObject:
        self.api = api
        self.clash = ""
        answer: WireObject = {}
        close = True
        try:
            try:
                with api.user_code(), _PROC.hidden(), _PROC.tests():
                    if self.pending is not None and not self.stopped:
                        item, self.pending = self.pending, None
                        index = self.items().index(item)
                        if not self._run_one(item, None, index, yield_wide):
                            if self.clash:
                                close = False  # the Go side decides (run)
                                return {"clash": self.clash}
                            answer = {"stopped": self.stopped, "interrupted": self.stop_interrupts()}
            finally:
                self._send_ended()
        finally:
            if close and (not keep or self.stopped):
                self.close()
            elif close and _STATE.recorder is not None and _STATE.recorder.on:
                # Modules the tests imported: their sources, for the hot path.
                _STATE.recorder.snapshot()
        return answer

    def _send_ended(self) -> None:
        """Send the held outcome of the last item run (see _run_one)."""
        if self.ended is not None:
            ended, self.ended = self.ended, None
            if self.api is not None:
                self.api.emit_progress(ended)

    def _run_one(self, item: pytest.Item, nextitem: Optional[pytest.Item], i: int, yield_wide: bool = False) -> bool:
        api = self.api
        assert api is not None and self.session is not None  # set by run and finish
        # The previous item's outcome goes in one write with this start:
        # nothing runs between them. run and finish send a held outcome
        # before they return, whatever ends them.
        # Both may be held (Output.hold_locked) after a test that passed or
        # was skipped: the Go side learns of them with the next frame, or
        # from the pump within HOLD_SECONDS, or from the held journal if
        # this kernel dies; after any other outcome they go now (-x,
        # --maxfail and the run's --fail-fast act on it at once).
        start = {"event": "start", "i": i}
        if self.ended is not None:
            ended, self.ended = self.ended, None
            api.emit_progress(ended, start, hold=ended.get("status") in _HOLD_AFTER)
        else:
            api.emit_progress(start)
        self.reports = []
        self.setup_clash = ""
        # An interrupt (KeyboardInterrupt out of the protocol) sends no
        # outcome: the Go side knows which item was running.
        rec = _STATE.recorder if _STATE.recorder is not None and _STATE.recorder.on else None
        if rec is not None:
            rec.begin_test(item.nodeid)
        try:
            with _PROC.test():
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        except KeyboardInterrupt:
            self._keyboard_interrupt(api)
            raise
        finally:
            if rec is not None:
                rec.end_test()
        reports, self.reports = self.reports, []
        api.flush_output()
        if yield_wide and self.setup_clash:
            self.clash = self.setup_clash
            return False
        self.ended = outcome(i, reports, self.junit_logging, self.xml.take(item.nodeid) if self.xml is not None else ())
        if self.con is not None:
            digest = self.con.item(item, reports)
            if digest is not None:
                self.ended["console"] = digest
        s = self.session
        if s.shouldfail or s.shouldstop:
            self.stopped = str(s.shouldfail or s.shouldstop)
            return False
        return True

    def _keyboard_interrupt(self, api: KernelAPI) -> None:
        """A KeyboardInterrupt ends the test and the session: the Go side
        gets what pytest's terminal would show of it."""
        text = pytest_session.keyboard_interrupt(self.config, self.con.keyboard_interrupt if self.con is not None else None)
        if text:
            api.emit_progress({"event": "keyboardInterrupt", "text": text})

    def close(self) -> None:
        with _PROC.hidden(), _PROC.signals():
            self._close()

    def _close(self) -> None:
        config, session = self.config, self.session
        try:
            if self.started and session is not None:
                self.started = False
                exitstatus = 1 if session.testsfailed else 0
                if self.exitstatus is not None:
                    exitstatus = self.exitstatus
                session.exitstatus = exitstatus
                config.hook.pytest_sessionfinish(session=session, exitstatus=exitstatus)
        finally:
            if self.configured:
                self.configured = False
                config._ensure_unconfigure()
            if _STATE.session is self:
                _STATE.session = None


class _Warnings:
    """Hands the warnings pytest records to the console (pytest_console.py)."""

    def __init__(self, con: Console) -> None:
        self.con = con

    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage, nodeid: str) -> None:
        self.con.record_warning(warning_message, nodeid)


class _WideFixtures:
    """--watch: while a fixture of a wider scope than function sets up,
    what runs is not the test's own (its value is shared by later tests):
    the recorder counts it apart. Its teardown: _patch_fixture_finish."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    @hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: FixtureDef[object], request: SubRequest) -> Generator[None, object, None]:
        wide = getattr(fixturedef, "scope", "function") != "function"
        if wide:
            self.rec.wide(1)
        try:
            yield
        finally:
            if wide:
                self.rec.wide(-1)


def _patch_fixture_finish() -> None:
    """The teardown of a wider-scoped fixture (FixtureDef.finish, which
    runs its finalizers) counts as wide too: pytest has no hook around it.
    Patched once per kernel, and only by a watch."""
    from _pytest.fixtures import FixtureDef

    orig = FixtureDef.finish

    def finish(self: FixtureDef[object], request: SubRequest) -> None:
        rec = _STATE.recorder
        wide = rec if rec is not None and rec.on and getattr(self, "scope", "function") != "function" else None
        if wide is not None:
            wide.wide(1)
        try:
            return orig(self, request)
        finally:
            if wide is not None:
                wide.wide(-1)

    FixtureDef.finish = finish  # type: ignore[assignment]  # mypy forbids assigning to a method


def _hot(params: WireObject) -> WireObject:
    """The "hot" op: see the module doc and watchfn.py."""
    rec, state = _STATE.recorder, _STATE.session
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
