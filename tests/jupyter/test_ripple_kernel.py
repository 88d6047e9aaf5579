"""ripple as a Jupyter kernel, driven by Jupyter's own clients.

- RippleKernelTests: every test of Debian's jupyter_kernel_test (the
  conformance suite kernels are checked with) for a Python kernel.
- ZeroMQLayer, Interrupts, Stdin, Shutdown, Notebook: what that suite
  does not cover, with jupyter_client as the frontend: heartbeat,
  signatures, comm_info, interrupts by signal and by message, input()
  over stdin, shutdown, per-statement caching of re-run cells, and a
  restart that gets the values back from the value journal.

Run by tests/jupyter_test.go with JUPYTER_DATA_DIR holding the ripple
kernelspec and XDG_CACHE_HOME a temp dir; RIPPLE_TEST_DIR is a scratch
directory for side-effect files.
"""

import os
import time
import unittest
import uuid
from queue import Empty

import jupyter_kernel_test
from jupyter_client.manager import start_new_kernel

TIMEOUT = 60
SCRATCH = os.environ.get("RIPPLE_TEST_DIR") or "/tmp"


class RippleKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "ripple"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('oops', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise"
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    ]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))", "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))", "mime": "text/latex"},
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"


def collect(kc, msg_id, timeout=TIMEOUT):
    """The iopub messages of one request up to its idle status, then its
    shell reply."""
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status":
            if msg["content"]["execution_state"] == "idle":
                break
            continue
        out.append(msg)
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply, out


def stdout_of(msgs):
    return "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


class KernelCase(unittest.TestCase):
    """A fresh ripple kernel per test."""

    def setUp(self):
        self.km, self.kc = start_new_kernel(kernel_name="ripple", startup_timeout=TIMEOUT)

    def tearDown(self):
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=False)

    def run_cell(self, code, **kw):
        reply, msgs = collect(self.kc, self.kc.execute(code, **kw))
        return reply["content"], msgs

    def run_cell_id(self, cell_id, code):
        """An execute_request with metadata.cellId, as JupyterLab sends."""
        msg = self.kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                                      "user_expressions": {}, "allow_stdin": False,
                                                      "stop_on_error": True}, metadata={"cellId": cell_id})
        self.kc.shell_channel.send(msg)
        reply, msgs = collect(self.kc, msg["header"]["msg_id"])
        return reply["content"], msgs


class ZeroMQLayer(KernelCase):
    def test_heartbeat_and_kernel_info(self):
        self.assertTrue(self.kc.hb_channel.is_alive())
        self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["content"]["protocol_version"], "5.3")
        self.assertEqual(reply["content"]["implementation"], "ripple")
        self.assertEqual(reply["header"]["msg_type"], "kernel_info_reply")
        self.assertTrue(self.km.is_alive())

    def test_status_busy_then_idle(self):
        msg_id = self.kc.execute("x = 1")
        states = []
        while len(states) < 2:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
                states.append(msg["content"]["execution_state"])
        self.assertEqual(states, ["busy", "idle"])

    def test_comm_info(self):
        msg = self.kc.session.msg("comm_info_request", {})
        self.kc.shell_channel.send(msg)
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["header"]["msg_type"], "comm_info_reply")
        self.assertEqual(reply["content"], {"status": "ok", "comms": {}})

    def test_bad_signature_is_dropped(self):
        good_key = self.kc.session.key
        self.kc.session.key = b"not-the-key"
        self.kc.session.auth = None
        from jupyter_client.session import Session

        forged = Session(key=b"not-the-key")
        self.kc.shell_channel.send(forged.msg("kernel_info_request", {}))
        with self.assertRaises(Empty):
            self.kc.get_shell_msg(timeout=2)
        self.kc.session.key = good_key
        self.kc.session.auth = None
        self.kc.session._new_auth()
        self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["header"]["msg_type"], "kernel_info_reply")


class Interrupts(KernelCase):
    def check_interrupt(self, interrupt):
        marker = os.path.join(SCRATCH, "started-" + uuid.uuid4().hex)
        msg_id = self.kc.execute("import time, pathlib\npathlib.Path(%r).write_text('x')\ntime.sleep(60)\nafter = 1" % marker)
        deadline = time.time() + TIMEOUT
        while not os.path.exists(marker):
            self.assertLess(time.time(), deadline, "the cell did not start")
            time.sleep(0.02)
        interrupt()
        reply, msgs = collect(self.kc, msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        # The kernel survives, and what ran before the interrupt stays.
        content, msgs = self.run_cell("print(time.time() > 0, 'after' in dir())")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(stdout_of(msgs), "True False\n")

    def test_interrupt_by_signal(self):
        self.check_interrupt(self.km.interrupt_kernel)

    def test_interrupt_by_message(self):
        def by_message():
            self.kc.control_channel.send(self.kc.session.msg("interrupt_request", {}))

        self.check_interrupt(by_message)


class Stdin(KernelCase):
    def test_input_request(self):
        msg_id = self.kc.execute("name = input('who? ')\nprint('hi', name)", allow_stdin=True)
        req = self.kc.get_stdin_msg(timeout=TIMEOUT)
        self.assertEqual(req["msg_type"], "input_request")
        self.assertEqual(req["content"]["prompt"], "who? ")
        self.assertFalse(req["content"]["password"])
        self.kc.input("ripple")
        reply, msgs = collect(self.kc, msg_id)
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual(stdout_of(msgs), "hi ripple\n")

    def test_getpass_is_a_password_request(self):
        msg_id = self.kc.execute("import getpass\nsecret = getpass.getpass()", allow_stdin=True)
        req = self.kc.get_stdin_msg(timeout=TIMEOUT)
        self.assertTrue(req["content"]["password"])
        self.kc.input("s3cret")
        reply, _ = collect(self.kc, msg_id)
        self.assertEqual(reply["content"]["status"], "ok")

    def test_input_without_stdin_is_an_error(self):
        content, _ = self.run_cell("input()", allow_stdin=False)
        self.assertEqual(content["status"], "error")
        self.assertEqual(content["ename"], "StdinNotImplementedError")


class Shutdown(unittest.TestCase):
    def test_shutdown_request_ends_the_process(self):
        km, kc = start_new_kernel(kernel_name="ripple", startup_timeout=TIMEOUT)
        try:
            msg_id = kc.shutdown()
            reply = kc.get_control_msg(timeout=TIMEOUT)
            self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
            self.assertEqual(reply["content"]["status"], "ok")
            deadline = time.time() + TIMEOUT
            while km.is_alive():
                self.assertLess(time.time(), deadline, "the kernel did not exit")
                time.sleep(0.05)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


class Notebook(KernelCase):
    """ripple's own semantics behind the protocol."""

    def test_rerun_runs_only_changed_statements(self):
        log = os.path.join(SCRATCH, "runs-" + uuid.uuid4().hex)
        cell = "import pathlib\nwritten = pathlib.Path(%r).open('a').write('slow\\n')\nbase = 20\nprint(base + %d)"
        first, msgs = self.run_cell_id("cell-1", cell % (log, 1))
        self.assertEqual(first["status"], "ok")
        self.assertEqual(stdout_of(msgs), "21\n")
        again, msgs = self.run_cell_id("cell-1", cell % (log, 1))
        self.assertEqual(stdout_of(msgs), "21\n")  # the cached print's output, shown again
        edited, msgs = self.run_cell_id("cell-1", cell % (log, 2))
        self.assertEqual(stdout_of(msgs), "22\n")
        with open(log) as f:
            self.assertEqual(f.read(), "slow\n")  # the first statement ran once
        self.assertEqual(again["execution_count"], first["execution_count"] + 1)
        # Without a cell id (classic Notebook, nbclient) the same text is
        # the same cell.
        self.run_cell(cell % (log, 3))
        self.run_cell(cell % (log, 3))
        with open(log) as f:
            self.assertEqual(f.read(), "slow\nslow\n")

    def test_error_cell_does_not_block_later_cells(self):
        content, msgs = self.run_cell("a = 1\nb = a / 0\nc = 3")
        self.assertEqual((content["status"], content["ename"]), ("error", "ZeroDivisionError"))
        self.assertIn("ZeroDivisionError: division by zero", content["traceback"][-1])
        content, msgs = self.run_cell("print(a, 'b' in dir(), 'c' in dir())")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(stdout_of(msgs), "1 False False\n")

    def test_error_aborts_the_cells_sent_before_it_was_seen(self):
        first = self.kc.execute("import time\ntime.sleep(0.5)\n1/0")
        second = self.kc.execute("print('never')")
        reply, _ = collect(self.kc, first)
        self.assertEqual(reply["content"]["status"], "error")
        reply, msgs = collect(self.kc, second)
        self.assertEqual(reply["content"]["status"], "aborted")
        self.assertEqual(stdout_of(msgs), "")
        content, msgs = self.run_cell("print('later')")
        self.assertEqual(stdout_of(msgs), "later\n")

    def test_syntax_error(self):
        content, msgs = self.run_cell("def f(:\n  pass")
        self.assertEqual((content["status"], content["ename"]), ("error", "SyntaxError"))
        self.assertEqual([m["msg_type"] for m in msgs], ["execute_input", "error"])

    def test_shell_and_magics(self):
        content, msgs = self.run_cell("!echo from-the-shell")
        self.assertEqual(content["status"], "ok", content)
        self.assertIn("from-the-shell", stdout_of(msgs))
        content, msgs = self.run_cell("value = 7\n%time doubled = value * 2\nprint(doubled)")
        self.assertEqual(content["status"], "ok", content)
        self.assertIn("14\n", stdout_of(msgs))

    def test_displays_after_the_shell_is_made(self):
        # A magic makes IPython's shell (notebook.py); it is not IPython's
        # singleton, and display(), clear_output() and its own display
        # publisher still reach the frontend; a !line in a function expands
        # the function's locals, once.
        content, msgs = self.run_cell("%time made = 1")
        self.assertEqual(content["status"], "ok", content)
        code = ("from IPython import get_ipython as ipythons\n"
                "from IPython.display import HTML, clear_output, display\n"
                "print('singleton:', ipythons() is not None)\n"
                "display(HTML('<i>shown</i>'))\n"
                "clear_output(wait=True)\n"
                "get_ipython().display_pub.publish({'text/plain': 'published'})\n"
                "def shout():\n    word = 'local-word'\n    return get_ipython().getoutput('echo {word} {{word}}')\n"
                "print(shout())")
        content, msgs = self.run_cell(code)
        self.assertEqual(content["status"], "ok", content)
        self.assertIn("singleton: False\n", stdout_of(msgs))
        self.assertIn("['local-word {word}']", stdout_of(msgs))
        kinds = [(m["msg_type"], sorted(m["content"].get("data", {}))) for m in msgs if m["msg_type"] not in ("stream", "execute_input")]
        self.assertEqual(kinds, [("display_data", ["text/html", "text/plain"]), ("clear_output", []),
                                 ("display_data", ["text/plain"])], kinds)

    def test_silent_shows_nothing(self):
        content, msgs = self.run_cell("print('quiet')\n1", silent=True)
        self.assertEqual(content["status"], "ok")
        self.assertEqual([m["msg_type"] for m in msgs], [])

    def test_restart_restores_values_from_the_journal(self):
        log = os.path.join(SCRATCH, "restore-" + uuid.uuid4().hex)
        # The import comes back too (the value journal writes a module by
        # its name: journaldefs.py), so the statement using it is not run
        # again.
        setup = "import pathlib\nwritten = pathlib.Path(%r).open('a').write('ran\\n')\ntable = {'k': [i * i for i in range(5)]}\nprint('made')" % log
        content, msgs = self.run_cell(setup)
        self.assertEqual(stdout_of(msgs), "made\n")
        self.km.restart_kernel(now=False)
        self.kc.wait_for_ready(timeout=TIMEOUT)
        content, msgs = self.run_cell("%ripple_status")
        status = stdout_of(msgs)
        self.assertIn("restored from the value journal (not run again): ", status)
        restored = status.split("restored from the value journal (not run again): ")[1].split("\n")[0]
        self.assertEqual(sorted(restored.split(", ")), ["#1", "pathlib", "table", "written"])
        self.assertIn("run again at start (not in the journal): none", status)
        content, msgs = self.run_cell("print(sum(table['k']))")
        self.assertEqual(stdout_of(msgs), "30\n")
        with open(log) as f:
            self.assertEqual(f.read(), "ran\n")  # restored, not run again


if __name__ == "__main__":
    unittest.main()
