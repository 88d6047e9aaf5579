"""Tables for statement analysis, labels, positions, previews and JSON."""

import ast
import json
import math
import random
import time
import unittest

from enginetest import engine_module

engine_module()  # installs the package's loader
from ripple_kernel import analysis, text, values  # noqa: E402


def info(src):
    return analysis.analyze(ast.parse(src).body[0])


class Analysis(unittest.TestCase):
    def test_uses_defines_mutates(self):
        table = [
            # source, uses, defines, mutates
            ("x = foo(x, 5)", {"foo", "x"}, {"x"}, set()),
            ("xs.append(1)", {"xs"}, {"xs"}, {"xs"}),
            ("y = xs.pop()", {"xs"}, {"xs", "y"}, {"xs"}),
            ("for i in r:\n    xs.append(i)", {"i", "r", "xs"}, {"i", "xs"}, {"xs"}),
            ("a[0] = 1", {"a"}, {"a"}, {"a"}),
            ("a.x = 2", {"a"}, {"a"}, {"a"}),
            ("del a[k]", {"a", "k"}, {"a"}, {"a"}),
            ("del a", {"a"}, {"a"}, set()),  # del reads: it fails when a is unbound
            ("x += 1", {"x"}, {"x"}, {"x"}),
            ("a.b += 1", {"a"}, {"a"}, {"a"}),
            ("f = lambda v: v + k", {"k"}, {"f"}, set()),
            ("y = [a * k for a in xs if (w := a)]", {"k", "xs"}, {"w", "y"}, set()),
            ("g = (v * k for v in xs)", {"k", "xs"}, {"g"}, set()),
            ("def h(a=b):\n    return a + c", {"b", "c"}, {"h"}, set()),
            ("class C(B):\n    z = q\n    def m(self):\n        return t", {"B", "q", "t"}, {"C"}, set()),
            ("with open(p) as f:\n    data = f.read()", {"open", "p", "f"}, {"f", "data"}, {"f"}),
            ("try:\n    v = 1\nexcept E as e:\n    pass", {"E"}, {"v", "e"}, set()),
            ("import os.path", set(), {"os"}, set()),
            ("import numpy as np", set(), {"np"}, set()),
            ("from m import a as b, c", set(), {"b", "c"}, set()),
            ("x: int = y", {"int", "y"}, {"x"}, set()),
            ("print(x)", {"print", "x"}, set(), set()),
            # 5.3 counts method calls at a statement's base only.
            ("[xs.append(i) for i in r]", {"xs", "r"}, set(), set()),
            ("df.dropna(inplace=True)", {"df"}, {"df"}, {"df"}),
            ("d['k'].append(v)", {"d", "v"}, {"d"}, {"d"}),
            ("if c:\n    return x", {"c", "x"}, set(), set()),
            ("n = len(s.split())", {"len", "s"}, {"n"}, set()),
            ("f = lambda: xs.append(1)", {"xs"}, {"f"}, set()),
        ]
        for src, uses, defines, mutates in table:
            with self.subTest(src=src):
                got = info(src)
                self.assertEqual(set(got.uses), uses)
                self.assertEqual(set(got.defines), defines)
                self.assertEqual(set(got.mutates), mutates)

    def test_lazy_and_flags(self):
        self.assertEqual(set(info("f = lambda v: v + k").lazy), {"k"})
        self.assertEqual(set(info("g = (v * k for v in xs)").lazy), {"k"})
        self.assertEqual(set(info("y = [v * k for v in xs]").lazy), set())
        self.assertEqual(set(info("fs = [lambda: k for _ in r]").lazy), {"k"})
        self.assertTrue(info("if c:\n    x = 1").compound)
        self.assertFalse(info("x = 1").compound)
        self.assertTrue(info("for v in r:\n    return v").returns)
        self.assertFalse(info("f = lambda: 1").returns)
        self.assertFalse(info("def g():\n    return 1").returns)
        self.assertTrue(info("y = yield 1").yields)

    def test_key_ignores_positions_and_comments_between(self):
        a = ast.parse("x = 1 + y").body[0]
        b = ast.parse("\n\n    x = 1 + y".strip()).body[0]
        self.assertEqual(analysis.analyze(a).key, analysis.analyze(b).key)
        self.assertNotEqual(info("x = 1 + y").key, info("x = 2 + y").key)

    def test_labels(self):
        body = [
            "x = 6",
            "y = foo(x, 5)",
            "x = 7",
            "x += 1",
            "a, b = 1, 2",
            "a, b = b, a",
            "print(x)",
            "for i in r:\n    pass",
            "x: int = 3",
            "z: int",
            "xs[0] = 1",
            "p = q = 1",
            "(c, [d, *e]) = f",
            "return x",
        ]
        infos = [info(src) for src in body]
        self.assertEqual(
            analysis.labels(infos),
            ["x", "y", "x#2", "x#3", "a,b", "a,b#2", "#1", "#2", "x#4", "#3", "#4", "p,q", "c,d,e", "return"],
        )


SOURCE = 'def main():\n    s = "héllo wörld"\n    t = s + "🎉"; u = 1\n    v = {"ü": 1}\n'


class NodeKeys(unittest.TestCase):
    def test_equal_exactly_when_ast_dump_is(self):
        # Every statement of the engine's own sources, plus constants whose
        # reprs could be mistaken for structure.
        import glob
        import os

        sources = [
            "x = (1+2j)", "x = 1", "x = 1.0", "x = True", "x = -0.0", "x = 0.0",
            "x = '(a, b)'", "x = b'[1,]'", "x = f(a)(b)", "x = f(a(b))", "x = [1, [2]]",
            "x = [[1], 2]", "x = ...", "x = None", "x: int = 1", "x = 1  # comment",
            "x   =   1", "del x", "x = y = 1", "x, y = 1, 2", "x = u'a'", "x = 'a'",
        ]
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for path in glob.glob(os.path.join(here, "*.py")):
            with open(path) as f:
                sources.append(f.read())
        by_key = {}
        for src in sources:
            for node in ast.walk(ast.parse(src)):
                if isinstance(node, (ast.stmt, ast.arguments)):
                    by_key.setdefault(analysis.node_key(node), set()).add(ast.dump(node))
        dumps = set()
        for key, group in by_key.items():
            self.assertEqual(len(group), 1, "one key for different trees: %s" % key)
            dumps |= group
        self.assertEqual(len(by_key), len(dumps), "different keys for equal trees")
        self.assertEqual(analysis.node_key(ast.parse("x   =   1").body[0]), analysis.node_key(ast.parse("x = 1").body[0]))


class Positions(unittest.TestCase):
    def parse(self, src):
        return text.parse("m", "m.py", "/r/m.py", src, 1)

    def test_ranges_in_code_points(self):
        src = self.parse(SOURCE)
        body = src.tree.body[0].body
        self.assertEqual(src.node_range(body[0]), {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 21}})
        # Byte columns would say 18 for the end of t's statement ("🎉" is 4 bytes).
        self.assertEqual(src.node_range(body[1]), {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 15}})
        self.assertEqual(src.node_range(body[2]), {"start": {"line": 2, "character": 17}, "end": {"line": 2, "character": 22}})
        self.assertEqual(src.segment(body[1]), 't = s + "🎉"')
        self.assertEqual(src.segment(body[3]), 'v = {"ü": 1}')

    def test_incremental_parse_matches_full_parse(self):
        rng = random.Random(7)
        lines = ["import os", "", "", "def main(a, b=2):"]
        for i in range(60):
            if i % 10 == 3:
                lines += ["    if a > %d:" % i, "        b = b + %d" % i, "    else:", "        b -= 1"]
            else:
                lines.append("    v%d = a + %d  # é" % (i, i))
        lines += ["    return a + 1", "", "", "class C:", "    def m(self):", "        return 1 + 2", ""]
        previous = self.parse("\n".join(lines))
        for step in range(200):
            new_lines = list(text.split_lines(previous.text))
            i = rng.randrange(len(new_lines))
            line = new_lines[i]
            choice = rng.random()
            if choice < 0.5:
                new_lines[i] = line.replace("+", "-") if "+" in line else line + "  # x"
            elif choice < 0.7:
                new_lines[i] = line + " +"  # a syntax error, or a continuation
            elif choice < 0.8:
                new_lines[i] = "    " + line
            elif choice < 0.85:
                new_lines[i] = "# " + line
            elif choice < 0.9:
                new_lines[i] = line.replace("1", "123")
            else:
                new_lines[i] = line.replace("a", "ä")
            new_text = "\n".join(new_lines) + "\n"
            try:
                full = ast.parse(new_text)
            except SyntaxError:
                with self.assertRaises(SyntaxError):
                    text.parse("m", "m.py", "/r/m.py", new_text, step + 2, previous)
                continue
            inc = text.parse("m", "m.py", "/r/m.py", new_text, step + 2, previous)
            self.assertEqual(
                ast.dump(inc.tree, include_attributes=True), ast.dump(full, include_attributes=True), msg=new_text
            )
            previous = inc
        # The previous tree is never modified by a later incremental parse.
        first = self.parse("def f():\n    x = 1\n    y = 2\n")
        before = ast.dump(first.tree, include_attributes=True)
        text.parse("m", "m.py", "/r/m.py", "def f():\n    x = 5\n    y = 2\n", 2, first)
        self.assertEqual(ast.dump(first.tree, include_attributes=True), before)


class Previews(unittest.TestCase):
    def test_limits(self):
        big = list(range(10**6))
        started = time.perf_counter()
        p = values.preview(big)
        self.assertLess(len(p), 201)
        self.assertTrue(p.startswith("[0, 1, 2"))
        self.assertTrue(p.endswith("...]"))
        d = {i: str(i) for i in range(10**5)}
        pd = values.preview(d)
        self.assertTrue(pd.startswith("{0: '0', 1: '1'"))
        self.assertLessEqual(len(values.preview("x" * 10000)), 200)
        self.assertEqual(values.preview(10**5000), "<int with 16610 bits>")
        self.assertEqual(values.preview({3, 1, 2}), repr({3, 1, 2}))
        elapsed = time.perf_counter() - started
        self.assertIsInstance(elapsed, float)  # measured, not asserted (see bench_engine.py)

    def test_raising_repr(self):
        class Bad:
            def __repr__(self):
                raise ValueError("no")

        self.assertEqual(values.preview(Bad()), "<Bad object (repr raised ValueError)>")
        self.assertEqual(values.preview([Bad()]), "[<Bad object (repr raised ValueError)>]")

        class Interrupting:
            def __repr__(self):
                raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            values.preview(Interrupting())

    def test_type_names(self):
        self.assertEqual(values.type_name(1), "builtins.int")
        self.assertEqual(values.type_name(None), "builtins.NoneType")
        self.assertEqual(values.type_name(json.JSONDecoder()), "json.decoder.JSONDecoder")

    def test_messages(self):
        self.assertEqual(values.exception_message(ZeroDivisionError("division by zero")), "ZeroDivisionError: division by zero")
        self.assertEqual(values.exception_message(KeyError("k")), "KeyError: 'k'")
        self.assertEqual(values.exception_message(StopIteration()), "StopIteration")
        self.assertEqual(values.exception_message(json.JSONDecodeError("bad", "x", 0)), "json.decoder.JSONDecodeError: bad: line 1 column 1 (char 0)")

    def test_visualization_json(self):
        self.assertEqual(values.encode_visualization({"a": (1, 2)}), ({"a": [1, 2]}, None))
        self.assertEqual(values.encode_visualization(math.nan), ("nan", None))
        self.assertEqual(values.encode_visualization([1, math.inf]), ("[1, inf]", None))
        self.assertEqual(values.encode_visualization({1, 2}), ("{1, 2}", None))
        data, error = values.encode_visualization("x" * (1 << 20))
        self.assertIsNone(data)
        self.assertIn("over the 1048576 byte limit", error)
        for data in (values.encode_visualization(math.nan)[0], values.encode_visualization([1, 2])[0]):
            json.dumps(data, allow_nan=False)


if __name__ == "__main__":
    unittest.main()
