"""jupyter_comm with the comm package (ipykernel 6.18+, ipywidgets 8): the
package is not installed here (Debian's ipykernel is 6.17, whose own comm
machinery tests/jupyter/test_ripple_fidelity.py drives), so a stand-in with
the package's API (comm.create_comm, comm.get_comm_manager,
comm.base_comm.BaseComm and CommManager) checks how the kernel hooks in."""

import importlib.util
import os
import subprocess
import sys
import types
import unittest
from unittest import mock

from enginetest import engine_module

engine_module()  # installs the package's loader
from ripple_kernel import jupyter_comm  # noqa: E402


def fake_comm_package():
    """Modules comm and comm.base_comm with the API the kernel uses."""
    pkg = types.ModuleType("comm")
    pkg.__path__ = []
    base = types.ModuleType("comm.base_comm")

    class BaseComm:
        def __init__(self, target_name="comm", data=None, metadata=None, buffers=None, comm_id=None, primary=True, **kw):
            self.comm_id, self.target_name, self._msg, self._closed = comm_id or "kernel-made", target_name, None, True
            if primary:
                pkg.get_comm_manager().register_comm(self)
                self.publish_msg("comm_open", data=data, metadata=metadata, target_name=target_name, target_module=None)
            self._closed = False

        def send(self, data=None, metadata=None, buffers=None):
            self.publish_msg("comm_msg", data=data, metadata=metadata)

        def on_msg(self, cb):
            self._msg = cb

        def handle_msg(self, msg):
            if self._msg:
                self._msg(msg)

        def handle_close(self, msg):
            pass

    class CommManager:
        def __init__(self):
            self.comms, self.targets = {}, {}

        def register_target(self, name, f):
            self.targets[name] = f

        def register_comm(self, c):
            self.comms[c.comm_id] = c

        def comm_open(self, stream, ident, msg):
            c = pkg.create_comm(comm_id=msg["content"]["comm_id"], primary=False, target_name=msg["content"]["target_name"])
            self.register_comm(c)
            self.targets[c.target_name](c, msg)

        def comm_msg(self, stream, ident, msg):
            self.comms[msg["content"]["comm_id"]].handle_msg(msg)

        def comm_close(self, stream, ident, msg):
            self.comms.pop(msg["content"]["comm_id"]).handle_close(msg)

    base.BaseComm, base.CommManager = BaseComm, CommManager
    pkg.base_comm = base
    pkg.create_comm = pkg.get_comm_manager = None  # the kernel sets them
    return {"comm": pkg, "comm.base_comm": base}


class CommPackage(unittest.TestCase):
    def setUp(self):
        self.modules = mock.patch.dict(sys.modules, fake_comm_package())
        self.modules.start()
        self.addCleanup(self.modules.stop)
        self.find = mock.patch.object(jupyter_comm.importlib.util, "find_spec", lambda name: object() if name == "comm" else None)
        self.find.start()
        self.addCleanup(self.find.stop)
        self.comms = mock.patch.object(jupyter_comm, "COMMS", jupyter_comm._Comms())
        self.comms.start()
        self.addCleanup(self.comms.stop)

    def test_frontend_messages_reach_a_registered_target(self):
        # Without code asking for comms, a comm_open is refused as an
        # unknown target is.
        answer = jupyter_comm.handle({"type": "comm_open", "content": {"comm_id": "f1", "target_name": "t", "data": {}}})
        self.assertEqual(answer["messages"], [{"msg_type": "comm_close", "content": {"comm_id": "f1", "data": {}}, "metadata": {}}])
        manager = jupyter_comm.kernel().comm_manager
        self.assertIs(sys.modules["comm"].get_comm_manager(), manager)

        def target(c, msg):
            c.on_msg(lambda m: (print("got", m["content"]["data"]), c.send({"echo": m["content"]["data"]})))
            c.send({"ready": msg["content"]["data"]})

        manager.register_target("t", target)
        answer = jupyter_comm.handle({"type": "comm_open", "content": {"comm_id": "f2", "target_name": "t", "data": {"x": 1}}})
        self.assertEqual(answer["messages"], [{"msg_type": "comm_msg", "content": {"data": {"ready": {"x": 1}}, "comm_id": "f2"},
                                               "metadata": {}}])
        answer = jupyter_comm.handle({"type": "comm_msg", "content": {"comm_id": "f2", "data": {"n": 1}}})
        self.assertEqual(answer["stdout"], "got {'n': 1}\n")
        self.assertEqual(answer["messages"][0]["content"]["data"], {"echo": {"n": 1}})
        self.assertEqual(jupyter_comm.info({}), {"comms": {"f2": {"target_name": "t"}}})
        self.assertEqual(jupyter_comm.info({"target_name": "other"}), {"comms": {}})

    def test_a_comm_user_code_opens_is_published(self):
        jupyter_comm.install()  # as the kernel's start does (jupyter_boot.py)
        shows = mock.Mock()
        with mock.patch.object(jupyter_comm.display, "current", lambda: shows):
            made = sys.modules["comm"].create_comm(target_name="w", data={"a": 1})
            made.send({"b": 2})
        sent = [c.args[0][jupyter_comm.COMM_MIME] for c in shows.display_bundle.call_args_list]
        self.assertEqual([(m["msg_type"], m["content"]["data"]) for m in sent], [("comm_open", {"a": 1}), ("comm_msg", {"b": 2})])
        self.assertEqual(sent[0]["content"]["target_name"], "w")
        self.assertEqual(jupyter_comm.info({}), {"comms": {"kernel-made": {"target_name": "w"}}})

    def test_bad_params(self):
        with self.assertRaisesRegex(jupyter_comm.InvalidParams, "jupyterCell comm: type must be one of"):
            jupyter_comm.handle({"type": "comm_open", "content": []})


IPYKERNEL_CHECK = """
from ripple_kernel import jupyter_comm
jupyter_comm.install()
proxy = jupyter_comm.KernelProxy()
print(hasattr(proxy, "__class__"), jupyter_comm.COMMS.kernel)  # asking made nothing
manager = proxy.comm_manager  # makes it, importing ipykernel.comm on the way (the hook must wait)
from ipykernel.comm import Comm
print(type(manager).__name__, Comm(target_name="t", data={}).kernel is jupyter_comm.COMMS.kernel)
"""

IPYKERNEL_FIRST = """
from ripple_kernel import jupyter_comm
jupyter_comm.install()
from ipykernel.comm import Comm  # the hook makes the stand-in, so that Comm finds a kernel
made = Comm(target_name="t", data={})
print(type(made.kernel).__name__, list(jupyter_comm.COMMS.manager.comms) == [made.comm_id])
"""


@unittest.skipUnless(importlib.util.find_spec("ipykernel"), "ipykernel is not installed (Debian's python3-ipykernel)")
class IPykernelMachinery(unittest.TestCase):
    """ipykernel's own comms (up to 6.17), in a process of their own: the
    stand-in kernel is ipykernel's singleton."""

    def run_check(self, code):
        package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ, PYTHONPATH=package)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_the_kernel_is_made_when_used_once(self):
        self.assertEqual(self.run_check(IPYKERNEL_CHECK), "True None\nCommManager True\n")

    def test_a_comm_made_before_the_manager_finds_the_kernel(self):
        self.assertEqual(self.run_check(IPYKERNEL_FIRST), "RippleKernel True\n")


if __name__ == "__main__":
    unittest.main()
