"""What a Jupyter user meets, on ripple's kernel and on ipykernel: the same
requests go to both (Debian's python3-ipykernel, kernelspec python3) and
the answers are compared.

- IPython's variables: Out, _, __, ___, _N, In, _i, _ii, _iN and the
  execution count, also when a cell that reads _ runs again.
- user_expressions in execute_request, errors per expression included.
- A warning raised in a cell's last expression quotes the user's line.
- Comms: a target user code registers gets the frontend's comm_open and
  comm_msg, a comm the kernel opens reaches the frontend, comm_info lists
  the open ones, comm_close closes them.
- history_request: tail, range and search of the session's cells.
- `ripple run --notebooks` writes each cell's execute_result with every
  mime type the display formatter gives (a DataFrame's text/html, an
  image's image/png), as nbclient on ipykernel writes it; nbformat-valid.

Run by tests/jupyter_test.go (TestJupyterFidelity) with JUPYTER_DATA_DIR
holding the ripple kernelspec, RIPPLE_BIN the ripple binary and
RIPPLE_TEST_DIR a scratch directory; IPYTHONDIR is set here to a new
directory for each ipykernel, so its history database is new, as ripple's
history is.
"""

import base64
import copy
import os
import re
import subprocess
import tempfile
import unittest

from jupyter_client.manager import start_new_kernel

TIMEOUT = 60
SCRATCH = os.environ.get("RIPPLE_TEST_DIR") or tempfile.mkdtemp()
KERNELS = ("ripple", "python3")  # ripple's, ipykernel's


class Client:
    """One kernel and its client."""

    def __init__(self, name):
        self.name = name
        # A new IPython history database for each ipykernel: its session
        # is the first, as ripple's.
        os.environ["IPYTHONDIR"] = tempfile.mkdtemp(dir=SCRATCH)
        self.km, self.kc = start_new_kernel(kernel_name=name, startup_timeout=TIMEOUT)

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def iopub_until_idle(self, msg_id):
        out = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    return out
                continue
            if msg["msg_type"] != "execute_input":
                out.append(msg)

    def reply(self, msg_id):
        while True:
            reply = self.kc.get_shell_msg(timeout=TIMEOUT)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]

    def execute(self, code, **kw):
        msg_id = self.kc.execute(code, **kw)
        msgs = self.iopub_until_idle(msg_id)
        return self.reply(msg_id), msgs

    def request(self, msg_type, content):
        """A shell request: its reply (None for comm messages, which have
        none) and what it published."""
        msg = self.kc.session.msg(msg_type, content)
        self.kc.shell_channel.send(msg)
        msgs = self.iopub_until_idle(msg["header"]["msg_id"])
        reply = None if msg_type.startswith("comm_") and msg_type != "comm_info_request" else self.reply(msg["header"]["msg_id"])
        return reply, msgs


def shown(msgs):
    """What a cell showed, comparable across kernels: streams joined per
    name, execute_result and display_data by their data, errors by name
    and value."""
    out = []
    for m in msgs:
        kind, c = m["msg_type"], m["content"]
        if kind == "stream":
            if out and out[-1][0] == "stream:" + c["name"]:
                out[-1] = (out[-1][0], out[-1][1] + c["text"])
            else:
                out.append(("stream:" + c["name"], c["text"]))
        elif kind == "execute_result":
            # An object's address differs from kernel to kernel.
            data = {k: re.sub(r"0x[0-9a-f]+", "0x...", v) if k == "text/plain" else v for k, v in c["data"].items()}
            out.append((kind, c["execution_count"], data))
        elif kind == "display_data":
            out.append((kind, c["data"]))
        elif kind == "error":
            out.append((kind, c["ename"], c["evalue"]))
        else:
            out.append((kind, c))
    return out


class BothKernels(unittest.TestCase):
    """Each test runs its steps on both kernels and compares what they
    answered."""

    def on_both(self, steps):
        """steps(client) -> a list of what happened; the lists of ripple
        and ipykernel, which must be equal, and ripple's."""
        got = {}
        for name in KERNELS:
            client = Client(name)
            try:
                got[name] = steps(client)
            finally:
                client.close()
        self.maxDiff = None
        self.assertEqual(got["ripple"], got["python3"])
        return got["ripple"]


class IPythonVariables(BothKernels):
    CELLS = [
        "",  # empty: not counted
        "1 + 1",
        "_ + 1",
        "print(_, __, _1, _2, _i, _ii, _i1, In[1], In[2], Out)",
        "x = 5",
        "x",
        "print(len(In), sorted(Out), _, __, ___, _5)",
        "print(type(Out).__name__, type(In).__name__, _oh is Out, _ih is In)",
        "x;",  # silenced: no result, _ unchanged
        "_ * 10",
        "'another'",
        "_ * 10",  # the same cell again: it reads the new _
        "print(_, Out[9], Out[11], _i9, _ii)",
        "!echo shell",
        "print(repr(In[13]), repr(_i13))",
        # IPython's pretty printer: a long list over several lines, an
        # object with the default repr without "object".
        "list(range(40))",
        "class Plain:\n    pass\n[Plain(), Plain.__module__]",
    ]

    def test_out_in_and_the_execution_count(self):
        def steps(client):
            return [(reply["status"], reply["execution_count"], shown(msgs))
                    for reply, msgs in (client.execute(code) for code in self.CELLS)]

        got = self.on_both(steps)
        # Not all nothing: the values are IPython's.
        self.assertEqual(got[0], ("ok", 0, []))
        self.assertEqual(got[3][2], [("stream:stdout", "3 2 2 3 _ + 1 1 + 1 1 + 1 1 + 1 _ + 1 {1: 2, 2: 3}\n")])
        self.assertEqual(got[-1][2], [("execute_result", 16, {"text/plain": "[<__main__.Plain at 0x...>, '__main__']"})])
        self.assertEqual(got[11][2], [("execute_result", 11, {"text/plain": "'anotheranotheranotheranotheranotheranotheranotheranotheranotheranother'"})])


class UserExpressions(BothKernels):
    def test_evaluated_after_the_cell_errors_per_expression(self):
        exprs = {"double": "y * 2", "html": "__import__('IPython').display.HTML('<b>b</b>')", "zero": "1 / 0",
                 "missing": "undefined_name", "syntax": "1 +"}

        def steps(client):
            out = []
            for code, silent in (("y = 3", False), ("y = 4", True), ("1 / 0", False)):
                reply, _ = client.execute(code, silent=silent, user_expressions=exprs)
                ue = reply.get("user_expressions", {})
                # The traceback's form is IPython's (colored) on ipykernel.
                out.append((reply["status"], {k: {f: v[f] for f in ("status", "data", "ename", "evalue") if f in v}
                                              for k, v in ue.items()}))
            return out

        got = self.on_both(steps)
        self.assertEqual(got[0][1]["double"], {"status": "ok", "data": {"text/plain": "6"}})
        self.assertEqual(got[1][1]["double"]["data"], {"text/plain": "8"})
        self.assertEqual(got[0][1]["zero"]["ename"], "ZeroDivisionError")
        self.assertEqual(got[2], ("error", {}))


class Warnings(BothKernels):
    def test_a_warning_in_the_last_expression_quotes_the_users_line(self):
        def steps(client):
            out = []
            for code in ("import warnings\nwarnings.warn('careful')", "warnings.warn('again',\n              stacklevel=1)"):
                _, msgs = client.execute(code)
                text = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
                # The file is the kernel's own (a file per cell on
                # ipykernel, the notebook's script on ripple): the warning
                # and the quoted line are compared.
                out.append(re.sub(r"^\S+:\d+: ", "FILE:LINE: ", text))
            return out

        got = self.on_both(steps)
        self.assertEqual(got[0], "FILE:LINE: UserWarning: careful\n  warnings.warn('careful')\n")


COMM_TARGET = """got = []
def target(comm, msg):
    got.append(msg['content']['data'])
    @comm.on_msg
    def _(m):
        got.append(m['content']['data'])
        print('kernel got', m['content']['data'])
        comm.send({'echo': m['content']['data']['n'] * 2})
    @comm.on_close
    def _(m):
        got.append('closed')
    comm.send({'ready': True})
get_ipython().kernel.comm_manager.register_target('echo', target)"""

KERNEL_COMM = """try:
    from comm import create_comm
except ImportError:
    from ipykernel.comm import Comm as create_comm
k = create_comm(target_name='frontend-side', data={'a': 1})
k.send({'b': 2})
opened = k.comm_id"""


class Comms(BothKernels):
    def test_comms_reach_a_target_user_code_registered(self):
        def steps(client):
            ids = {}

            def norm(value):
                # Comm ids the kernel makes differ: named by order.
                if isinstance(value, dict):
                    return {k: norm(v) for k, v in value.items() if k != "comm_id"} | (
                        {"comm_id": ids.setdefault(value["comm_id"], "id%d" % len(ids))} if "comm_id" in value else {})
                return value

            def info(target=None):
                reply, _ = client.request("comm_info_request", {} if target is None else {"target_name": target})
                return sorted((ids.setdefault(k, "id%d" % len(ids)), v["target_name"]) for k, v in reply["comms"].items())

            out = []
            _, msgs = client.request("comm_open", {"comm_id": "nobody-1", "target_name": "nobody", "data": {}})
            out.append(("unknown target", [(m["msg_type"], norm(m["content"])) for m in msgs]))
            out.append(("no comms", info()))
            # A comm the kernel opens first, before any code asked for the
            # comm manager.
            reply, msgs = client.execute(KERNEL_COMM)
            out.append(("kernel opens", reply["status"], [(m["msg_type"], norm(m["content"])) for m in msgs]))
            reply, _ = client.execute(COMM_TARGET)
            out.append(reply["status"])
            _, msgs = client.request("comm_open", {"comm_id": "echo-1", "target_name": "echo", "data": {"hello": 1}})
            out.append(("opened", [(m["msg_type"], norm(m["content"])) for m in msgs]))
            out.append(("info", info(), info("echo"), info("other")))
            _, msgs = client.request("comm_msg", {"comm_id": "echo-1", "data": {"n": 21}})
            out.append(("msg", [(m["msg_type"], norm(m["content"])) for m in msgs]))
            out.append(("both", info()))
            _, msgs = client.execute("print(opened)")
            kernel_id = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream").strip()
            for comm_id in ("echo-1", kernel_id):
                _, msgs = client.request("comm_close", {"comm_id": comm_id, "data": {}})
                out.append(("close", [(m["msg_type"], norm(m["content"])) for m in msgs]))
            out.append(("none left", info()))
            _, msgs = client.execute("print('what the target saw:', got)")
            out.append(shown(msgs))
            return out

        steps_seen = self.on_both(steps)
        got = dict((step[0], step[1:]) for step in steps_seen[:-1] if isinstance(step, tuple))
        self.assertEqual([kind for kind, _ in got["kernel opens"][1]], ["comm_open", "comm_msg"])
        self.assertEqual([(kind, c["data"]) for kind, c in got["opened"][0]], [("comm_msg", {"ready": True})])
        self.assertEqual((got["msg"][0][0][0], got["msg"][0][0][1]["data"]), ("comm_msg", {"echo": 42}))
        self.assertEqual(len(got["both"][0]), 2)  # the kernel's comm and the frontend's
        self.assertEqual(got["none left"][0], [])
        self.assertEqual(steps_seen[-1], [("stream:stdout", "what the target saw: [{'hello': 1}, {'n': 21}, 'closed']\n")])


class History(BothKernels):
    CELLS = ["1+2+3", "%time y = 1", "x = 'a'", "x", "1/0", "x = 'a'", "10*2"]
    QUERIES = [
        dict(hist_access_type="tail", n=3), dict(hist_access_type="tail", n=3, output=True, raw=False),
        dict(hist_access_type="range", session=0, start=0, stop=3),
        dict(hist_access_type="range", session=0, start=2, output=True),
        dict(hist_access_type="range", session=0, start=-2, raw=False, output=True),
        dict(hist_access_type="range", session=0, start=1, stop=-2),
        dict(hist_access_type="search", pattern="x*"), dict(hist_access_type="search", pattern="x*", unique=True),
        dict(hist_access_type="search", pattern="*", n=2, output=True),
        dict(hist_access_type="search", pattern="[x1]*", unique=True, n=5),
        dict(hist_access_type="search", pattern="%time*", raw=False),
    ]

    def test_tail_range_and_search_of_the_session(self):
        def steps(client):
            for code in self.CELLS:
                # stop_on_error=False: ipykernel aborts requests that come
                # right after a failed one (1/0) for a moment otherwise.
                client.execute(code, stop_on_error=False)
            client.execute("quiet = 1", silent=True)  # not in the history
            client.execute("unstored = 1", store_history=False)  # nor this
            out = []
            for q in self.QUERIES:
                msg_id = client.kc.history(**q)
                out.append((q, client.reply(msg_id)["history"]))
            return out

        got = self.on_both(steps)
        self.assertEqual(got[0][1], [[1, 5, "1/0"], [1, 6, "x = 'a'"], [1, 7, "10*2"]])
        self.assertEqual(got[4][1], [[0, 6, ["x = 'a'", None]], [0, 7, ["10*2", "20"]]])


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


class NotebookResults(unittest.TestCase):
    CELLS = [
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\ndf",
        "from IPython.display import HTML, Image\nImage(data=%r)" % PNG,
        "HTML('<b>bold</b>')",
        "{'k': list(range(3))}",
        "n = 1\nn;",
        "print('printed')\nn + 1",
    ]

    def test_run_notebooks_writes_every_mime_type(self):
        import nbclient
        import nbformat

        project = tempfile.mkdtemp(dir=SCRATCH)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in self.CELLS])
        path = os.path.join(project, "results.ipynb")
        nbformat.write(nb, path)
        ipy = copy.deepcopy(nb)
        nbclient.NotebookClient(ipy, kernel_name="python3", timeout=TIMEOUT).execute()
        run = subprocess.run([os.environ["RIPPLE_BIN"], "run", "--notebooks", "results.ipynb", "--python", "/usr/bin/python3"],
                             cwd=project, capture_output=True, text=True, timeout=5 * TIMEOUT)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        ran = nbformat.read(path, 4)
        nbformat.validate(ran)

        def outputs(book):
            # Base64 is compared decoded: how its lines are cut differs.
            return [[(o["output_type"], o.get("execution_count"), o.get("text"),
                      {k: base64.b64decode(v) if k == "image/png" else v for k, v in o.get("data", {}).items()})
                     for o in c.outputs] for c in book.cells]

        self.maxDiff = None
        self.assertEqual(outputs(ran), outputs(ipy))
        result = ran.cells[0].outputs[0]
        self.assertEqual(result["output_type"], "execute_result")
        self.assertIn("<table", result["data"]["text/html"])
        self.assertEqual(base64.b64decode(ran.cells[1].outputs[0]["data"]["image/png"]), PNG)


if __name__ == "__main__":
    unittest.main()
