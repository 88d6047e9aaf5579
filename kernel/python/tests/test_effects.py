"""Automatic runs hold external effects (PROTOCOL.md 8.2; effects.py), with
the real engine over the stub kernel.

Each test's project lives outside the temp dir the guard allows: the test
gives tempfile a temp dir of its own (tempfile.tempdir) and the user a home
of their own (HOME, so the cache dir is ~/.cache), and runs with the
project root as working directory, as a kernel does.
"""

import hashlib
import os
import shutil
import socket
import sys
import tempfile
import unittest

from enginetest import EngineTestCase, engine_module, main_stack

HELD = "main:main/#1"
DONE = "main:main/done"
IMPORTS = "import os\nimport pathlib\nimport shutil\nimport socket\nimport subprocess\nimport tempfile\nimport threading\n\n\n"


def program(*stmts):
    """main.py whose main runs x = 1, the statements, done = True."""
    return IMPORTS + "def main():\n    x = 1\n" + "".join("    %s\n" % s for s in stmts) + "    done = True\n"


def exists(root, name):
    return os.path.lexists(os.path.join(root, name))


def content(root, name):
    with open(os.path.join(root, name)) as f:
        return f.read()


# (name, files besides main.py, statement, audit event, in an argument,
# whether the effect happened; None: not visible).
CASES = [
    ("write", {}, 'with open("out.txt", "w") as f:\n        f.write("x")', "open", "out.txt", lambda d: exists(d, "out.txt")),
    ("append", {"log.txt": "a"}, 'with open("log.txt", "a") as f:\n        f.write("b")', "open", "log.txt",
     lambda d: content(d, "log.txt") == "ab"),
    ("create", {}, 'open("new.txt", "x").close()', "open", "new.txt", lambda d: exists(d, "new.txt")),
    ("os.open", {}, 'os.close(os.open("raw.txt", os.O_WRONLY | os.O_CREAT))', "open", "raw.txt",
     lambda d: exists(d, "raw.txt")),
    ("pathlib", {}, 'pathlib.Path("p.txt").write_text("p")', "open", "p.txt", lambda d: exists(d, "p.txt")),
    ("truncate", {"victim.txt": "v"}, 'os.truncate("victim.txt", 0)', "os.truncate", "victim.txt",
     lambda d: content(d, "victim.txt") == ""),
    ("remove", {"victim.txt": "v"}, 'os.remove("victim.txt")', "os.remove", "victim.txt",
     lambda d: not exists(d, "victim.txt")),
    ("rename", {"victim.txt": "v"}, 'os.rename("victim.txt", "renamed.txt")', "os.rename", "victim.txt",
     lambda d: exists(d, "renamed.txt")),
    ("replace", {"victim.txt": "v"}, 'os.replace("victim.txt", "renamed.txt")', "os.rename", "renamed.txt",
     lambda d: exists(d, "renamed.txt")),
    ("rmtree", {"out/keep.txt": "k", "out/sub/more.txt": "m"}, 'shutil.rmtree("out", ignore_errors=True)',
     "shutil.rmtree", "out", lambda d: not exists(d, "out")),
    ("move", {"victim.txt": "v"}, 'shutil.move("victim.txt", "moved.txt")', "shutil.move", "moved.txt",
     lambda d: exists(d, "moved.txt")),
    ("copy", {"victim.txt": "v"}, 'shutil.copy("victim.txt", "copied.txt")', "shutil.copyfile", "copied.txt",
     lambda d: exists(d, "copied.txt")),
    ("mkdir", {}, 'os.mkdir("made")', "os.mkdir", "made", lambda d: exists(d, "made")),
    ("chmod", {"victim.txt": "v"}, 'os.chmod("victim.txt", 0o600)', "os.chmod", "victim.txt",
     lambda d: os.stat(os.path.join(d, "victim.txt")).st_mode & 0o777 == 0o600),
    ("subprocess", {}, 'subprocess.run(["touch", "touched"], check=True)', "subprocess.Popen", "touch",
     lambda d: exists(d, "touched")),
    ("os.system", {}, 'os.system("touch touched")', "os.system", "touch", lambda d: exists(d, "touched")),
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers it.
    ("connect", {}, 'socket.create_connection(("192.0.2.1", 9), timeout=0.2)', "socket.connect", "192.0.2.1", None),
]


def snapshot(root):
    """Every file and directory of the project: mode and content's hash
    (bytecode caches left out)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [n for n in dirnames if n != "__pycache__"]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            digest = ""
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(path, root)] = (st.st_mode, digest)
    return out


class EffectsCase(EngineTestCase):
    """A project outside the allowed dirs, run from its root."""

    def setUp(self):
        base = os.path.realpath(tempfile.mkdtemp(prefix="ripple-effects-"))
        self.addCleanup(shutil.rmtree, base, True)
        self.tmp = os.path.join(base, "tmp")
        self.home = os.path.join(base, "home")
        os.makedirs(self.tmp)
        os.makedirs(self.home)
        self.system_tempdir = tempfile.tempdir
        self.addCleanup(setattr, tempfile, "tempdir", tempfile.tempdir)
        for name, value in (("HOME", self.home), ("XDG_CACHE_HOME", None)):
            self.addCleanup(self.restore_env, name, os.environ.get(name))
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        cwd = os.getcwd()
        self.addCleanup(os.chdir, cwd)

    @staticmethod
    def restore_env(name, value):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

    def project(self, main, files=None):
        tempfile.tempdir = self.system_tempdir
        s = self.session({"main": main})  # under the system's temp dir
        for name, text in (files or {}).items():
            s.write(name, text)
        os.chdir(s.root)
        tempfile.tempdir = self.tmp  # the project is outside it
        return s

    def assert_held(self, run, event, arg, held=HELD, after=(DONE,), depth=0):
        update = [u for u in run.updates(depth) if u["expressionId"] == held][-1]
        payload = update["payload"]
        self.assertEqual(payload["type"], "Pending", payload)
        self.assertTrue(payload["message"].startswith("held: ") and arg in payload["message"], payload)
        reason = payload["reason"]
        self.assertEqual((reason["kind"], reason["event"]), ("held", event), reason)
        self.assertTrue(any(arg in a for a in reason["args"]), reason)
        self.assertTrue(all(isinstance(a, str) and len(a) <= 200 for a in reason["args"]), reason)
        for later in after:
            self.assertEqual(run.values(depth)[later], ("Pending", "not reached"))
            self.assertEqual(run.reasons(depth)[later], ("held", held))
        self.assertEqual(run.result, {"status": "complete"})


class HeldEffects(EffectsCase):
    def test_each_effect_is_held_in_hold_mode_and_runs_in_allow_mode(self):
        for name, files, stmt, event, arg, happened in CASES:
            with self.subTest(name):
                s = self.project(program(stmt), files)
                before = snapshot(s.root)
                run = s.run(effects="hold")
                self.assert_held(run, event, arg)
                self.assertEqual(snapshot(s.root), before, "the held run changed the project")
                self.assertEqual(run.diagnostics(), [])  # held is not a failure
                # Nothing was cached for it: the next automatic run holds it again.
                self.assert_held(s.run(effects="hold"), event, arg)
                # An explicit run (effects "allow", as a recompute's) runs it.
                run = s.run(effects="allow")
                values = run.values()
                if happened is None:
                    self.assertEqual(values[HELD][0], "Panic")  # nothing answers
                    self.assertNotIn("held", values[HELD][1])
                else:
                    self.assertTrue(happened(s.root), "the effect of %s did not happen" % stmt)
                    self.assertEqual(values[DONE], "True")
                    effects = [u for u in run.updates() if u["expressionId"] == HELD][-1]["payload"]["effects"]
                    self.assertTrue(any(arg in e for e in effects), effects)

    def test_execute_without_effects_allows(self):
        # Batch runs and older callers send no effects: explicit.
        s = self.project(program('open("out.txt", "w").close()'))
        self.assertEqual(s.run().values()[DONE], "True")
        self.assertTrue(exists(s.root, "out.txt"))

    def test_bad_effects_is_refused_naming_the_field(self):
        s = self.project(program())
        with self.assertRaisesRegex(ValueError, 'execute: effects must be "hold" or "allow", got \'live\''):
            s.run(effects="live")

    def test_a_caught_refusal_is_held_all_the_same(self):
        s = self.project(program('try:\n        open("out.txt", "w")\n    except PermissionError as e:\n'
                                 '        caught = e', 'after = 2'))
        run = s.run(effects="hold")
        self.assert_held(run, "open", "out.txt", after=("main:main/after", DONE))
        self.assertFalse(exists(s.root, "out.txt"))

    def test_the_refusal_is_a_permission_error(self):
        s = self.project(program('try:\n        open("out.txt", "w")\n    except PermissionError as e:\n'
                                 '        caught = e', 'after = 2'))
        s.run(effects="hold")
        caught = s.engine.contexts["ctx"].frames[0].namespace["caught"]
        self.assertIsInstance(caught, engine_module().effects.HeldEffect)
        self.assertIn("open('out.txt', 'w')", str(caught))

    def test_an_effect_in_a_called_function_holds_the_statement(self):
        main = IMPORTS + "def save(p):\n    with open(p, 'w') as f:\n        f.write('x')\n\n\n" + \
            "def main():\n    x = 1\n    save('out.txt')\n    done = True\n"
        s = self.project(main)
        self.assert_held(s.run(effects="hold"), "open", "out.txt")
        self.assertFalse(exists(s.root, "out.txt"))

    def test_a_thread_the_statement_starts_is_held_too(self):
        s = self.project(program("t = threading.Thread(target=lambda: open('t.txt', 'w'))",
                                 "t.start() or t.join()"))
        stderr = sys.stderr
        sys.stderr = open(os.devnull, "w")  # the thread's HeldEffect goes to threading.excepthook
        try:
            run = s.run(effects="hold")
        finally:
            sys.stderr.close()
            sys.stderr = stderr
        self.assert_held(run, "open", "t.txt", held="main:main/#1")
        self.assertFalse(exists(s.root, "t.txt"))

    def test_held_in_a_script_and_a_local_call_frame(self):
        s = self.project("")
        source = "import shutil\nx = 1\nshutil.rmtree('out')\ndone = True\n"
        s.engine.compile({"modules": [{"name": "main", "path": "main.py", "source": source}], "removed": [],
                          "scripts": ["main"]})
        s.write("out/keep.txt", "k")
        run = s.run(main_stack(name="__main__"), effects="hold")
        self.assert_held(run, "shutil.rmtree", "out", held="main:__main__/#1", after=("main:__main__/done",))
        self.assertTrue(exists(s.root, "out/keep.txt"))

        s = self.project(IMPORTS + "def clean(d):\n    n = 1\n    shutil.rmtree(d)\n    m = 2\n\n\n"
                                   "def main():\n    y = clean('out')\n", {"out/keep.txt": "k"})
        self.assert_held(s.run(effects="hold"), "shutil.rmtree", "out", held="main:main/y", after=())
        self.assertTrue(exists(s.root, "out/keep.txt"))
        s.run(effects="allow")  # y runs: its call can be entered
        self.assertFalse(exists(s.root, "out"))
        os.makedirs(os.path.join(s.root, "out"))
        stack = main_stack() + [{"type": "LocalCall", "expressionId": "main:main/y"}]
        run = s.run(stack, effects="hold")
        self.assert_held(run, "shutil.rmtree", "out", held="main:clean/#1", after=("main:clean/m",), depth=1)
        self.assertTrue(exists(s.root, "out"))
        self.assertEqual(s.run(stack, effects="allow").values(1)["main:clean/m"], "2")
        self.assertFalse(exists(s.root, "out"))

    def test_a_symlink_into_the_temp_dir_is_the_project_s(self):
        # Removing the link removes a file of the project, wherever it points.
        s = self.project(program('os.remove("link")'))
        target = os.path.join(self.tmp, "target.txt")
        open(target, "w").close()
        os.symlink(target, os.path.join(s.root, "link"))
        self.assert_held(s.run(effects="hold"), "os.remove", "link")
        self.assertTrue(exists(s.root, "link"))

    def test_a_project_in_the_temp_dir_is_still_the_user_s(self):
        # ripple tried in /tmp/demo: the temp dir is allowed, the project in
        # it is not.
        s = self.project(program('shutil.rmtree("out")'), {"out/keep.txt": "k"})
        tempfile.tempdir = os.path.dirname(s.root)
        self.assert_held(s.run(effects="hold"), "shutil.rmtree", "out")
        self.assertTrue(exists(s.root, "out/keep.txt"))


class AllowedEffects(EffectsCase):
    def test_temp_and_cache_writes_pass(self):
        s = self.project(program(
            'open(os.path.join(tempfile.gettempdir(), "t.txt"), "w").close()',
            'os.makedirs(os.path.expanduser("~/.cache/ripple-test"), exist_ok=True)',
            'open(os.path.expanduser("~/.cache/ripple-test/c.txt"), "w").close()',
            'd = tempfile.mkdtemp()',
            'shutil.rmtree(d)',  # its removals name entries relative to a dir_fd
            'with tempfile.TemporaryDirectory() as t:\n        open(os.path.join(t, "f"), "w").close()',
            'fd, name = tempfile.mkstemp()',
            'os.close(fd) or os.remove(name)',
        ))
        run = s.run(effects="hold")
        self.assertEqual(run.reasons(), {})
        self.assertEqual(run.values()[DONE], "True")
        self.assertTrue(exists(self.tmp, "t.txt"))
        self.assertTrue(exists(self.home, ".cache/ripple-test/c.txt"))
        # Allowed writes are not external effects: nothing is recorded.
        self.assertFalse(any("effects" in u["payload"] for u in run.updates()))

    def test_xdg_cache_home_is_the_cache_dir_when_set(self):
        xdg = os.path.join(os.path.dirname(self.home), "xdg")
        os.makedirs(xdg)
        os.environ["XDG_CACHE_HOME"] = xdg
        s = self.project(program('open(os.path.join(os.environ["XDG_CACHE_HOME"], "x.txt"), "w").close()',
                                 'open(os.path.expanduser("~/.cache-not.txt"), "w").close()'))
        run = s.run(effects="hold")
        self.assert_held(run, "open", ".cache-not.txt", held="main:main/#2")
        self.assertTrue(exists(xdg, "x.txt"))

    def test_reads_pass(self):
        s = self.project(program(
            'with open("data.txt") as f:\n        a = f.read()',
            'with open("data.txt", "rb") as f:\n        b = f.read()',
            'fd = os.open("data.txt", os.O_RDONLY)',
            'c = os.read(fd, 10)',
            'os.close(fd)',
            'e = pathlib.Path("data.txt").read_text()',
            'f = sorted(os.listdir("."))',
            'g = os.path.exists("missing")',
        ), {"data.txt": "hello"})
        run = s.run(effects="hold")
        self.assertEqual(run.reasons(), {})
        self.assertEqual(run.values()["main:main/e"], "'hello'")
        self.assertEqual(run.values()["main:main/c"], "b'hello'")
        self.assertEqual(run.values()[DONE], "True")

    def test_bytecode_caches_devnull_and_existing_dirs_pass(self):
        s = self.project(program(
            'os.makedirs("__pycache__", exist_ok=True)',
            'open("__pycache__/x.cpython.pyc", "wb").close()',
            'open(os.devnull, "w").close()',
            'os.makedirs("existing", exist_ok=True)',
        ), {"existing/keep.txt": "k"})
        run = s.run(effects="hold")
        self.assertEqual(run.reasons(), {})
        self.assertEqual(run.values()[DONE], "True")

    def test_local_sockets_pass(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        self.addCleanup(listener.close)
        unix_path = os.path.join(self.tmp, "s.sock")
        unix = socket.socket(socket.AF_UNIX)
        unix.bind(unix_path)
        unix.listen(1)
        self.addCleanup(unix.close)
        s = self.project(program(
            'a = socket.create_connection(("127.0.0.1", %d)).close()' % listener.getsockname()[1],
            'u = socket.socket(socket.AF_UNIX)',
            'u.connect(%r)' % unix_path,
            'u.close()',
        ))
        run = s.run(effects="hold")
        self.assertEqual(run.reasons(), {})
        self.assertEqual(run.values()[DONE], "True")


class RecordedEffects(EffectsCase):
    def test_a_value_carries_its_effects_in_order_at_most_ten(self):
        s = self.project(program(
            'open("a.txt", "w").close()',
            'os.rename("a.txt", "b.txt") or os.remove("b.txt")',
            '[open("f%d.txt" % i, "w").close() for i in range(12)]',
            'y = 2',
        ))
        run = s.run()
        effects = {u["expressionId"]: u["payload"].get("effects") for u in run.updates() if u["payload"]["type"] == "Value"}
        self.assertEqual(effects["main:main/#1"], ["open('a.txt', 'w')"])
        self.assertEqual(effects["main:main/#2"], ["os.rename('a.txt', 'b.txt')", "os.remove('b.txt')"])
        self.assertEqual(len(effects["main:main/#3"]), 10)
        self.assertEqual(effects["main:main/#3"][0], "open('f0.txt', 'w')")
        self.assertIsNone(effects["main:main/y"])
        # The cached value keeps them.
        cached = s.run(invalidate=["main:main/y"]).updates()
        self.assertEqual(cached, [u for u in cached if u["expressionId"] in ("main:main/y",)])
        self.assertEqual(s.latest[0]["main:main/#1"]["payload"]["effects"], ["open('a.txt', 'w')"])

    def test_the_hook_is_off_outside_user_statements(self):
        effects = engine_module().effects
        s = self.project(program('open("out.txt", "w").close()'))
        s.run(effects="hold")
        self.assertEqual(effects.GUARD.mode, effects.OFF)
        # The kernel's own writes (here the test's, between runs) pass.
        with open(os.path.join(s.root, "kernel.txt"), "w") as f:
            f.write("k")


class EffectCalls(unittest.TestCase):
    """How an effect is written (the held message, the recorded effects)."""

    def test_calls(self):
        effects = engine_module().effects
        guard = effects.Guard()
        guard.roots = ("/allowed",)
        cases = [
            ("open", ("/p/a.txt", "w", 0), "open('/p/a.txt', 'w')"),
            ("open", ("/p/a.txt", None, os.O_WRONLY | os.O_CREAT), "open('/p/a.txt', os.O_WRONLY|os.O_CREAT)"),
            ("open", ("/p/a.txt", "r", 0), None),
            ("open", ("/allowed/a.txt", "w", 0), None),
            ("open", (3, "w", 0), None),
            ("os.chmod", ("/p/a", 0o600, -1), "os.chmod('/p/a', 0o600)"),
            ("os.system", (b"ls -l",), "os.system('ls -l')"),
            ("subprocess.Popen", ("ls", ["ls", "-l"], None, None), "subprocess.Popen(['ls', '-l'])"),
            ("os.fork", (), "os.fork()"),
            ("shutil.rmtree", ("/p/out", None), "shutil.rmtree('/p/out')"),
            ("sqlite3.connect", (":memory:",), None),
        ]
        for event, args, want in cases:
            with self.subTest(event=event, args=args):
                guard.effects = None
                guard.mode = effects.RECORD
                try:
                    guard.see(event, args, effects.EVENTS[event])
                finally:
                    guard.mode = effects.OFF
                self.assertEqual(guard.effects, None if want is None else [want])

    def test_socket_addresses(self):
        effects = engine_module().effects
        guard = effects.Guard()
        with socket.socket() as tcp, socket.socket(socket.AF_UNIX) as unix:
            for sock, address, held in [(tcp, ("192.0.2.1", 80), True), (tcp, ("127.0.0.1", 80), False),
                                        (tcp, ("localhost", 80), False), (tcp, ("example.com", 80), True),
                                        (unix, "/tmp/x.sock", False)]:
                with self.subTest(address=address):
                    guard.effects = guard.held = None
                    guard.mode = effects.HOLD
                    try:
                        if held:
                            with self.assertRaises(effects.HeldEffect):
                                guard.see("socket.connect", (sock, address), effects.EVENTS["socket.connect"])
                            self.assertEqual(guard.held.call, "socket.connect(%r)" % (address,))
                        else:
                            guard.see("socket.connect", (sock, address), effects.EVENTS["socket.connect"])
                            self.assertIsNone(guard.held)
                    finally:
                        guard.mode = effects.OFF

    def test_a_long_argument_is_cut(self):
        effects = engine_module().effects
        guard = effects.Guard()
        guard.mode = effects.HOLD
        try:
            with self.assertRaises(effects.HeldEffect):
                guard.see("os.system", ("x" * 1000,), effects.EVENTS["os.system"])
        finally:
            guard.mode = effects.OFF
        self.assertEqual(len(guard.held.args[0]), 200)
        self.assertTrue(guard.held.args[0].endswith("..."))


if __name__ == "__main__":
    unittest.main()
