"""The kernel: one object that owns the process's state and serves the
requests of kernel/PROTOCOL.md one at a time on the main thread.

``Kernel`` holds the request state (signals.State), the connection and
output capture (capture.Output), the signal handlers (signals.Interrupts),
the process group (group.ProcessGroup), the method table, and the user's
``__main__`` namespace. It is also what the engine and pytest's plugin are
given (api.KernelAPI): root, at_exit, set_idle, log, user_code,
stop_requested, emit_progress, set_expression, flush_output.

main.py builds it and calls its phases; a request goes serve -> handle ->
a method -> finish.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from types import CodeType, ModuleType
from typing import BinaryIO, Callable, ContextManager, Dict, List, Optional, TextIO, Tuple, cast

from .api import WireObject
from .capture import HOLD_SECONDS, Output
from .group import ProcessGroup
from .signals import Critical, Interrupts, Nested, State, UserCode
from .wire import (
    PROTOCOL_VERSION,
    InvalidParams,
    MethodNotFound,
    Payload,
    ProtocolError,
    capped,
    describe,
    dumps,
    frame_head,
    loads,
    message,
    read_frame,
)

SPIN_BEFORE_BLOCKING = 50e-6  # seconds the main loop watches for the next request before blocking
CODE_CACHE_MAX = 4096  # compiled `eval` sources kept
DISCONNECT_GRACE = 0.8  # seconds between a lost connection and a hard exit

# A method: params -> the result's value (a WireObject, or any JSON value).
Handler = Callable[[WireObject], object]
# set_idle's arguments: has_work(), work(arrived), seconds.
Idle = Tuple[Callable[[], bool], Callable[[Callable[[], bool]], object], float]

_EMPTY: WireObject = {}
_OK_EMPTY = b'{"status":"ok","value":{}}'


def _never() -> bool:
    return False


def write_log(out: Optional[TextIO], text: str) -> None:
    """A line in the kernel's log (out: the startup log, else stderr)."""
    try:
        f = out if out is not None else sys.stderr
        f.write("ripple kernel: %s\n" % text)
        f.flush()
    except Exception:
        pass


class Kernel:
    """The kernel process's state and its request loop (see the module doc)."""

    def __init__(self, root: str, log_file: Optional[TextIO]) -> None:
        self.root = root  # the project root: sys.path[0] and the cwd
        self.log_file = log_file  # the process's original stderr: the startup log
        self.state = State()
        self.interrupts = Interrupts(self.state)
        self.output = Output(self.state)
        self.group = ProcessGroup(self.state, self.log)
        self.user_ns: Dict[str, object] = {}  # globals of the user's __main__ (become_script)
        self.methods: Dict[str, Handler] = {"ping": _ping, "eval": self._eval, "shutdown": self._shutdown,
                                            "complete": self._completion("complete"),
                                            "inspect": self._completion("inspect"),
                                            "jupyterCell": _jupyter_cell}
        # The names the engine added to methods (load_engine); a kernel that
        # runs pytest drops them.
        self.engine_methods: List[str] = []
        self.engine: Optional[ModuleType] = None
        self.exit_hooks: List[Callable[[], object]] = []  # at_exit
        # The kernel ran pytest (add_pytest): its exit skips the collector's
        # last walks of the heap (_freeze_heap).
        self.ran_pytest = False
        # set_idle: work done only while no request waits, after the last
        # result was sent; None: none.
        self.idle: Optional[Idle] = None
        self.evaluator = _Evaluator()
        self._region: ContextManager[None] = UserCode(self.state)
        self._nested: ContextManager[None] = Nested()

    # ------------------------------------------------------------ the API (api.KernelAPI)

    def at_exit(self, fn: Callable[[], object]) -> None:
        """Call fn when the kernel exits, after the user's atexit handlers
        and before the user namespace is released (release_user_state)."""
        self.exit_hooks.append(fn)

    def set_idle(
        self, has_work: Callable[[], bool], work: Callable[[Callable[[], bool]], object], seconds: float
    ) -> None:
        """Call work(arrived) between requests while has_work() says so,
        once no request has come for `seconds` after a result was sent (0:
        right after it), one call at a time, as long as no request arrives;
        arrived() tells work that one did (it should stop soon). The
        engine's value journal is written there, off the path of a run."""
        self.idle = (has_work, work, seconds)

    def tee_output(self, fn: Callable[[bytes, Optional[str], Payload], object]) -> None:
        """Call fn(kind, expression, data) for each output frame (kind b"out"
        or b"err") before it is sent, with the statement it is attributed
        to: the engine keeps a statement's output with its value
        (keptoutput.py). fn runs under the connection's send lock, on the
        pump thread or the main thread: it must be quick."""
        output, state = self.output, self.state
        send = output.send_frame

        def send_frame(kind: bytes, rid: int, payload: Payload) -> None:
            if kind == b"out" or kind == b"err":
                fn(kind, state.expression, payload)
            send(kind, rid, payload)

        output.send_frame = send_frame  # type: ignore[assignment]  # the tee, on this instance only

    def log(self, message: str) -> None:
        """A line in the kernel's log (not the output of any request)."""
        write_log(self.log_file, message)

    def user_code(self) -> ContextManager[None]:
        """Context manager around user code: SIGINT raises KeyboardInterrupt
        only inside it; an interrupt of this request that arrived outside
        raises on entry. Regions nest (the engine opens one for a statement
        and another for a module the statement imports)."""
        return self._nested if self.state.in_user else self._region

    def stop_requested(self) -> bool:
        """Whether the Go side asked the running request to stop at its
        next statement boundary (the cell's second word names it)."""
        return self.interrupts.stop_requested()

    def emit_progress(self, obj: WireObject, *more: WireObject, hold: bool = False) -> None:
        """Send a `prog` frame for the current request, one per object,
        in one write (a test's end and the next one's start go together:
        a write to the Go side is a syscall and a wake-up there). hold:
        they may wait (Output.hold_locked) up to HOLD_SECONDS, sent with
        the next frame or the pump; else they go now, after held ones."""
        frames: List[bytes] = []
        rid = self.state.request
        for o in (obj,) + more:
            data = dumps(o)
            frames += (frame_head(b"prog", rid, data), data)
        output = self.output
        if hold and output.journal_fd < 0:
            hold = output.enable_hold()
        with Critical(self.state):
            with output.send_lock:
                if hold:
                    output.hold_locked(b"".join(frames))
                    if output.held and time.perf_counter() - output.held_at >= HOLD_SECONDS:
                        output.release_locked()
                elif output.held:
                    output.release_locked(*frames)
                else:
                    output.sock.sendall(b"".join(frames))

    def set_expression(self, expression_id: Optional[str]) -> None:
        """Attribute output from now on to statement expression_id (None:
        to no statement). Output written before is attributed to the
        previous one as far as it was forwarded: the engine calls
        flush_output first where that matters (a statement's end)."""
        with self.output.send_lock:
            self.state.expression = expression_id

    def flush_output(self) -> None:
        """Forward output written so far before whatever is sent next."""
        output = self.output
        output.flush_python_streams()
        with Critical(self.state):
            with output.send_lock:
                output.drain_locked(self.state.request)

    # ------------------------------------------------------------ start-up phases

    def become_script(self) -> None:
        """User code sees the project as a script run from its root would:
        sys.path[0] and the cwd are the root, sys.argv is [""], and
        __main__ is a fresh module of the user's (the kernel's own modules
        live in the ripple_kernel package, out of its sight)."""
        import builtins

        root = self.root
        sys.path[0] = root
        if os.getcwd() != root:
            os.chdir(root)
        sys.argv = [""]
        user_main = ModuleType("__main__")
        user_main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = user_main
        self.user_ns = user_main.__dict__

    def preload(self, names: str) -> None:
        """Import the modules of RIPPLE_PRELOAD (kernel.Config.Preload) at
        start, so that the first request finds them warm. A module that fails
        is logged and skipped: whoever imports it later gets the error."""
        import importlib

        for name in [n.strip() for n in names.split(",") if n.strip()]:
            try:
                importlib.import_module(name)
            except BaseException as e:  # SystemExit too: a module must not end the kernel
                self.log("preload %s: %s: %s" % (name, type(e).__name__, e))

    def load_engine(self) -> None:
        """Add the execution engine's methods (engine.register)."""
        if not os.path.exists(os.path.join(os.path.dirname(__file__), "engine.py")):
            return  # a kernel without the engine (tests of the kernel alone)
        from . import engine

        self.engine = engine
        methods = engine.register(self)
        if not isinstance(methods, dict):
            raise TypeError("engine.register returned %s, want a dict of handlers" % type(methods).__name__)
        for name, fn in methods.items():
            if name in self.methods:
                raise ValueError("engine method %r collides with a kernel method" % (name,))
            if not callable(fn):
                raise TypeError("engine method %r is not callable" % (name,))
            self.methods[name] = fn
            self.engine_methods.append(name)

    def add_pytest(self) -> None:
        """The kernel method "pytest" (ripple run --tests): pytest_plugin,
        loaded on its first call, runs pytest's session in this kernel."""
        loaded: List[ModuleType] = []

        def method(params: WireObject) -> object:
            if not loaded:
                # A pytest kernel is a plain interpreter: the engine leaves
                # it (its import hooks, display finder and matplotlib
                # backend; see engine.detach) and its methods go with it.
                if self.engine is not None:
                    self.engine.detach()
                for name in self.engine_methods:
                    self.methods.pop(name, None)
                from . import loader, pytest_plugin

                loader.uninstall()
                loaded.append(pytest_plugin)
                self.ran_pytest = True
            return loaded[0].handle(self, params)

        self.methods["pytest"] = method

    def start_helpers(self) -> None:
        """Capture fd 1 and 2, route background threads' output, and start
        the pump with the signal handlers installed."""
        output = self.output
        output.capture_fds()
        output.route_streams()
        self.interrupts.install(lambda: output.start_pump(self.interrupts, self.on_disconnect))

    def register_exit(self) -> None:
        """The exit steps, in atexit's reverse order."""
        import atexit

        atexit.register(self._freeze_heap)  # registered first: runs last
        atexit.register(self.output.stop_pump, self.interrupts)
        atexit.register(self.group.kill_members)
        atexit.register(self.release_user_state)  # after every handler of user code

    def send_ready(self) -> None:
        """The `ready` frame: the kernel serves from now on."""
        info = {
            "pid": os.getpid(),
            "pgid": os.getpgrp(),
            "python": sys.version,
            "executable": sys.executable,
            "protocol": PROTOCOL_VERSION,
        }
        with self.output.send_lock:
            self.output.send_frame(b"ready", 0, dumps(info))

    # ------------------------------------------------------------ requests

    def serve(self) -> None:
        """Serve requests until EOF, shutdown or SIGTERM."""
        state = self.state
        sock = self.output.sock
        rfile = cast(BinaryIO, sock.makefile("rb", buffering=65536))
        ready = select.poll()
        ready.register(sock.fileno(), select.POLLIN)
        clock = time.perf_counter
        try:
            while not state.terminating:
                # The Go side sends the next request as soon as it has read
                # the result: watch the socket for a few microseconds before
                # blocking, so a quick follow-up request does not pay for a
                # wake-up of this process (the request is never pipelined,
                # so nothing waits in rfile's buffer here).
                deadline = clock() + SPIN_BEFORE_BLOCKING
                while not ready.poll(0) and clock() < deadline:
                    pass
                if self.idle is not None and self.idle[0]():
                    self._idle_work(self.idle, ready)
                frame = read_frame(rfile)
                if frame is None:
                    break  # EOF: the Go side is gone
                kind, rid, payload = frame
                if kind != b"req" or rid == 0:
                    raise ProtocolError("unexpected %r frame with id %d" % (kind, rid))
                self.handle(rid, payload)
        except ProtocolError as e:
            self.log("protocol error: %s" % e)
            sys.exit(3)
        except SystemExit:
            if not state.terminating:
                raise
        state.terminating = True

    def handle(self, rid: int, payload: bytes) -> None:
        """Run one request and send its result."""
        # An interrupt recorded before this point is kept: if it names rid
        # (SIGINT beat the kernel to this frame), user code raises on entry.
        self.state.request = rid
        try:
            try:
                req = loads(payload)
                method = req["method"]  # type: ignore[index]  # a TypeError when req is no object
                params = req.get("params")  # type: ignore[attr-defined]  # req is a dict here
            except (ValueError, TypeError, KeyError) as e:
                raise InvalidParams("request %d is not {method, params} JSON: %s" % (rid, e))
            fn = self.methods.get(method)
            if fn is None:
                raise MethodNotFound("unknown method %r" % (method,))
            if params is None:
                params = _EMPTY
            elif type(params) is not dict:
                raise InvalidParams("%s: params must be an object" % method)
            value = fn(params)
            if type(value) is dict and not value:
                out = _OK_EMPTY
            else:
                out = capped({"status": "ok", "value": value})
        except KeyboardInterrupt as e:
            out = capped({"status": "int", "error": describe(e)})
        except SystemExit as e:
            if self.state.terminating:
                raise
            out = capped({"status": "err", "error": describe(e)})
        except BaseException as e:
            out = capped({"status": "err", "error": describe(e)})
        self.finish(rid, out)

    def finish(self, rid: int, payload: bytes) -> None:
        """The result hand-off: forward the request's remaining output, then
        its `res`. SIGINT only records from here on (in_user is False)."""
        state, output = self.state, self.output
        state.in_user = False
        if state.forked:
            # User code forked and the child came back here: the request and
            # the connection are the parent's.
            output.flush_python_streams()
            os._exit(0)
        output.flush_python_streams()
        with output.send_lock:
            output.drain_locked(rid)
            output.send_frame(b"res", rid, payload)
            state.request = 0
            state.expression = state.told = None

    def _idle_work(self, idle: Idle, ready: select.poll) -> None:
        """Run the idle work until it is done or a request arrives (with 0
        seconds, until it is done: tests know it is when the next request is
        answered)."""
        has_work, work, seconds = idle
        wait = max(0, int(seconds * 1000))
        while has_work():
            if seconds <= 0:
                arrived = _never  # 0 s: done before the next request, whatever comes
            elif ready.poll(wait):
                return  # a request: it comes first
            else:
                arrived = lambda: bool(ready.poll(0))  # noqa: E731
            wait = 0
            try:
                work(arrived)
            except Exception as e:
                self.log("idle work failed: %s: %s" % (type(e).__name__, e))
                return

    # ------------------------------------------------------------ methods

    def _eval(self, params: WireObject) -> WireObject:
        code = params.get("code")
        if type(code) is not str:
            raise InvalidParams("eval: params.code must be a string, got %s" % type(code).__name__)
        mode = params.get("mode", "exec")
        co = self.evaluator.compiled(code, mode)
        if mode == "exec":
            with self._region:
                exec(co, self.user_ns)
            return _EMPTY
        with self._region:
            text = self.evaluator.repr(eval(co, self.user_ns))
        return {"repr": text}

    def _completion(self, method: str) -> Handler:
        """complete or inspect (complete.py, imported on the first call: it
        imports inspect, which a kernel's start does not pay for)."""

        def handler(params: WireObject) -> object:
            from . import complete

            return complete.methods(self._namespaces)[method](params)

        return handler

    def _namespaces(self, context_id: Optional[str]) -> Optional[Tuple[Dict[str, object], Dict[str, object]]]:
        """(locals, globals) completion looks in: a context's top frame
        (engine.context_namespaces), else __main__; None: no such context."""
        if context_id is None:
            return self.user_ns, self.user_ns
        if self.engine is None:
            return None
        found: Optional[Tuple[Dict[str, object], Dict[str, object]]] = self.engine.context_namespaces(context_id)
        return found

    def _shutdown(self, params: WireObject) -> WireObject:
        self.state.terminating = True
        return _EMPTY

    # ------------------------------------------------------------ exit

    def on_disconnect(self) -> None:
        """The Go side is gone (called by the pump): ask the main thread to
        exit gracefully, and exit hard if it has not done so within
        DISCONNECT_GRACE seconds."""
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except OSError:
            pass
        # The pump thread is a daemon: if the main thread exits first, the
        # interpreter stops this sleep with it.
        threading.Event().wait(DISCONNECT_GRACE)
        self.group.kill_members()
        os._exit(1)

    def _freeze_heap(self) -> None:
        """The last exit step of a kernel that ran pytest: freeze what is
        left (gc.freeze), so the interpreter's teardown frees it by
        reference count but its final collections do not walk it. A
        session of 20,000 items leaves ~300,000 objects, and those walks
        took ~0.3 s of the process's end (a third of a run of that size
        that selects 1,000 tests), the same under pytest, where nothing of
        a test can see them: every atexit handler has run (this one runs
        last), non-daemon threads were joined, files and streams are
        flushed as their last reference goes. What it gives up is what
        Python never promises at exit: __del__ of objects that are garbage
        only as a cycle (the reference manual's note on object.__del__)."""
        if self.ran_pytest and not self.state.forked:
            import gc

            gc.freeze()

    def release_user_state(self) -> None:
        """Drop what user code left in the kernel, as IPython does at exit,
        so its objects are finalized as at the end of a script: an unclosed
        buffered file is flushed. The interpreter's teardown does not do it
        for the user __main__ (the kernel's user_ns keeps its dict alive
        past the module cleanup). Runs after the user's atexit handlers,
        which may still use those globals."""
        if self.state.forked:
            return
        for fn in reversed(self.exit_hooks):
            try:
                fn()
            except BaseException as e:
                self.log("exit hook %r failed: %s" % (fn, e))
        # Objects only the namespace held go now; cycles go with the
        # interpreter's last collection.
        self.user_ns.clear()


def _jupyter_cell(params: WireObject) -> object:
    """jupyterCell (jupyter_cells.py, imported on the first call)."""
    from . import jupyter_cells

    return jupyter_cells.cell(params)


def _ping(params: WireObject) -> WireObject:
    return _EMPTY


class _Evaluator:
    """The `eval` method's compiled sources and repr."""

    def __init__(self) -> None:
        self.cache: Dict[Tuple[str, object], CodeType] = {}  # (code, mode) -> code object
        self.names: List[str] = []  # linecache names of the cached sources
        self._repr: Optional[Callable[[object], str]] = None

    def compiled(self, code: str, mode: object) -> CodeType:
        co = self.cache.get((code, mode))
        if co is not None:
            return co
        if mode not in ("exec", "eval"):
            raise InvalidParams('eval: params.mode must be "exec" or "eval", got %r' % (mode,))
        import linecache

        if len(self.cache) >= CODE_CACHE_MAX:
            for name in self.names:
                linecache.cache.pop(name, None)
            self.cache.clear()
            del self.names[:]
        name = "<ripple-eval-%d>" % (len(self.names) + 1)
        co = compile(code, name, str(mode), dont_inherit=True)
        # Keep the source so tracebacks show the offending line.
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        self.names.append(name)
        self.cache[(code, mode)] = co
        return co

    def repr(self, value: object) -> str:
        if self._repr is None:
            import reprlib

            r = reprlib.Repr()
            r.maxstring = 200
            r.maxother = 200
            r.maxlong = 200
            self._repr = r.repr
        try:
            return self._repr(value)
        except Exception as e:
            return "<repr failed: %s: %s>" % (type(e).__name__, message(e))
