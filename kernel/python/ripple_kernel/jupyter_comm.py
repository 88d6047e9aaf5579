"""Comms for ``ripple jupyter kernel``: the frontend's comm_open, comm_msg
and comm_close reach a comm manager in the kernel, and the comms user code
opens reach the frontend, with the comm machinery Jupyter's libraries use:

- the ``comm`` package (what ipykernel 6.18+ and ipywidgets 8 use) when it
  is importable: its ``create_comm`` and ``get_comm_manager`` are this
  kernel's (install(), at the kernel's start), as ipykernel sets them;
- else ipykernel's own (``ipykernel.comm``, ipykernel up to 6.17): a
  stand-in of ipykernel's Kernel, made on first use, holds its
  CommManager, and its session sends what its comms publish.

User code finds the manager where it does under ipykernel:
``get_ipython().kernel.comm_manager`` (notebook.NotebookShell asks
kernel() for ``kernel``) or ``comm.get_comm_manager()``.

A comm message the kernel sends goes out as a displayData bundle of
COMM_MIME while a cell runs (the Go side, jupyter/run.go, publishes it on
iopub and does not keep it as the statement's output), or in the answer
of the ``comm`` mode while a frontend's comm message is handled
(jupyter/comm.go publishes it). Binary buffers are not carried.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import sys
from typing import Any, Dict, List, Optional

from . import display
from .api import WireObject
from .wire import InvalidParams

COMM_MIME = "application/vnd.ripple.comm+json"
_COMM_TYPES = ("comm_open", "comm_msg", "comm_close")


class _Comms:
    """This kernel's comm machinery (one per process, made on first use)."""

    def __init__(self) -> None:
        self.kernel: Any = None  # the comm machinery's kernel: has comm_manager
        self.manager: Any = None
        self.making = False  # kernel() runs (it imports ipykernel.comm: the hook waits)
        # The messages sent while a frontend's message is handled (None:
        # none is): they go in the handler's answer.
        self.captured: Optional[List[WireObject]] = None


COMMS = _Comms()


def publish(msg_type: str, content: Dict[str, Any], metadata: Optional[Dict[str, Any]]) -> None:
    """Send a comm message to the frontend (see the module doc)."""
    msg: WireObject = json.loads(json.dumps({"msg_type": msg_type, "content": content, "metadata": metadata or {}},
                                            default=str))
    if COMMS.captured is not None:
        COMMS.captured.append(msg)
        return
    shows = display.current()
    if shows is not None:
        shows.display_bundle({COMM_MIME: msg})


def install() -> None:
    """Make the ``comm`` package's comms this kernel's, when it is
    importable; else make ipykernel's stand-in when ipykernel.comm is first
    imported, so that its Comm finds a kernel (cheap: nothing of ipykernel
    is imported before user code does)."""
    if importlib.util.find_spec("comm") is None:
        sys.meta_path.insert(0, _IPykernelCommHook())
        return
    comm = importlib.import_module("comm")  # untyped, and absent where ipykernel is older
    setattr(comm, "create_comm", _create_comm)
    setattr(comm, "get_comm_manager", _manager)


class _IPykernelCommHook:
    """A meta path finder: once ipykernel.comm is imported, the stand-in
    kernel is made (kernel()), as ipykernel's Comm takes its kernel from
    Kernel.instance() when it is made."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "ipykernel.comm" or COMMS.kernel is not None or COMMS.making:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        plain = loader.exec_module

        def exec_module(module: Any) -> None:
            plain(module)
            try:
                kernel()
            except Exception as e:  # the import itself worked: comms will say why they do not
                sys.stderr.write("ripple: ipykernel's comms are not available: %s\n" % e)

        loader.exec_module = exec_module
        return spec


def _create_comm(*args: Any, **kwargs: Any) -> Any:
    cls = _comm_class()
    return cls(*args, **kwargs)


def _manager() -> Any:
    return kernel().comm_manager


def _comm_class() -> Any:
    base = importlib.import_module("comm.base_comm").BaseComm

    class Comm(base):  # type: ignore[misc,valid-type]  # a class of the (untyped) comm package
        def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None,
                        **keys: Any) -> None:
            publish(msg_type, dict(data=data or {}, comm_id=self.comm_id, **keys), metadata)

    return Comm


class _Kernel:
    """What ``get_ipython().kernel`` is with the comm package: its manager."""

    def __init__(self, manager: Any) -> None:
        self.comm_manager = manager


class KernelProxy:
    """What ``get_ipython().kernel`` is: the comm machinery's kernel, made
    when an attribute of it is first read. Libraries that only ask whether
    the shell has a kernel (pandas: ``hasattr(ip, "kernel")``, as it tells
    a Jupyter kernel from a terminal) do not make it: with ipykernel's
    machinery that imports ipykernel, zmq and tornado."""

    def __getattr__(self, name: str) -> Any:
        return getattr(kernel(), name)


def kernel() -> Any:
    """The kernel object of the comm machinery (made on first use);
    ModuleNotFoundError when neither comm nor ipykernel is importable."""
    if COMMS.kernel is not None:
        return COMMS.kernel
    COMMS.making = True
    try:
        return _make_kernel()
    finally:
        COMMS.making = False


def _make_kernel() -> Any:
    if importlib.util.find_spec("comm") is not None:
        install()
        COMMS.manager = importlib.import_module("comm.base_comm").CommManager()
        COMMS.kernel = _Kernel(COMMS.manager)
        return COMMS.kernel
    try:
        COMMS.kernel = _ipykernel_kernel()
    except ImportError as e:
        raise ModuleNotFoundError("comms need the comm package or ipykernel, which %s cannot import (%s): "
                                  "pip install comm, or Debian's python3-ipykernel" % (sys.executable, e)) from None
    COMMS.manager = COMMS.kernel.comm_manager
    return COMMS.kernel


def _ipykernel_kernel() -> Any:
    """A stand-in of ipykernel's Kernel singleton (ipykernel.comm.Comm finds
    it as Kernel.instance()) whose session publishes through publish()."""
    from ipykernel.comm import CommManager
    from ipykernel.kernelbase import Kernel
    from jupyter_client.session import Session

    class RippleSession(Session):
        def send(self, stream: Any, msg_or_type: Any, content: Any = None, parent: Any = None, ident: Any = None,
                 buffers: Any = None, track: bool = False, header: Any = None, metadata: Any = None) -> Any:
            publish(str(msg_or_type), dict(content or {}), metadata)
            return None

    class RippleKernel(Kernel):
        implementation = "ripple"
        implementation_version = ""
        banner = ""
        shell = None  # Comm.handle_msg triggers no IPython events

    made = RippleKernel.instance(session=RippleSession(), iopub_socket=object(), log=logging.getLogger("ripple.comm"))
    made.comm_manager = CommManager(parent=made, kernel=made, log=made.log)
    return made


def handle(params: WireObject) -> WireObject:
    """{type, content} of a frontend's comm message -> {messages, stdout,
    stderr}: what the kernel sent back and printed while handling it."""
    msg_type, content = params.get("type"), params.get("content")
    if msg_type not in _COMM_TYPES or not isinstance(content, dict):
        raise InvalidParams("jupyterCell comm: type must be one of %s and content an object, got %r"
                            % (", ".join(_COMM_TYPES), params))
    if COMMS.manager is None:
        # No code asked for comms, so no target is registered: answered as
        # ipykernel answers an unknown target.
        closing = [{"msg_type": "comm_close", "content": {"comm_id": content.get("comm_id", ""), "data": {}},
                    "metadata": {}}]
        return {"messages": closing if msg_type == "comm_open" else [], "stdout": "", "stderr": ""}
    msg = {"header": {"msg_type": msg_type}, "parent_header": {}, "metadata": params.get("metadata") or {},
           "content": content, "buffers": []}
    out, err = io.StringIO(), io.StringIO()
    COMMS.captured = []
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            getattr(COMMS.manager, msg_type)(None, None, msg)
        return {"messages": COMMS.captured, "stdout": out.getvalue(), "stderr": err.getvalue()}
    finally:
        COMMS.captured = None


def info(params: WireObject) -> WireObject:
    """{target_name?} -> {comms: {comm_id: {target_name}}}, the open comms
    (of that target)."""
    target = params.get("target_name")
    comms: Dict[str, Any] = {}
    if COMMS.manager is not None:
        for comm_id, c in dict(COMMS.manager.comms).items():
            name = getattr(c, "target_name", "")
            if not target or name == target:
                comms[str(comm_id)] = {"target_name": name}
    return {"comms": comms}
