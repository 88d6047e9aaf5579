"""The kernel methods complete and inspect (ripple_kernel/complete.py):
jedi when importable, rlcompleter without it, dict keys and DataFrame
columns, inspection text, and the errors of bad params."""

import importlib.util
import sys
import unittest
from unittest import mock

from enginetest import EngineTestCase, engine_module

engine_module()  # installs the package's loader
from ripple_kernel import complete  # noqa: E402
from ripple_kernel.wire import InvalidParams  # noqa: E402


class Frame:
    """A value with an attribute, to complete after a dot."""

    def __init__(self) -> None:
        self.columns = ["alpha", "beta", "gamma"]
        self.attribute_one = 1


def area(width: float, height: float = 2.0) -> float:
    """The area of a rectangle."""
    return width * height


NS = {"frame": Frame(), "table": {"key_a": 1, "key_b": 2, 3: "int key"}, "area": area, "counter_value": 41}


def methods(ns=None, contexts=None):
    def resolve(context_id):
        if context_id is None:
            return (ns or NS), (ns or NS)
        return (contexts or {}).get(context_id)

    return complete.methods(resolve)


def texts(result):
    return [m["text"] for m in result["matches"]]


class Completion(unittest.TestCase):
    def check_common(self, without_jedi: bool) -> None:
        patch = mock.patch.dict(sys.modules, {"jedi": None}) if without_jedi else mock.patch.dict(sys.modules, {})
        with patch:
            m = methods()
            res = m["complete"]({"code": "x = counter_", "cursor": 12})
            self.assertEqual(texts(res), ["counter_value"])
            self.assertEqual((res["cursorStart"], res["cursorEnd"]), (4, 12))
            res = m["complete"]({"code": "zi"})  # the cursor defaults to the end
            self.assertIn("zip", texts(res))
            res = m["complete"]({"code": "frame.attribute_", "cursor": 16})
            self.assertTrue(any(t.endswith("attribute_one") for t in texts(res)), texts(res))
            self.assertEqual(res["cursorEnd"], 16)
            res = m["complete"]({"code": "ar"})
            area_match = [x for x in res["matches"] if x["text"] == "area"]
            self.assertEqual(area_match[0]["type"], "function")

    def test_jedi(self) -> None:
        if importlib.util.find_spec("jedi") is None:
            self.skipTest("jedi is not installed (Debian's python3-jedi)")
        self.check_common(without_jedi=False)
        res = methods()["complete"]({"code": "area(1).", "cursor": 8})
        self.assertIn("as_integer_ratio", texts(res))  # jedi infers the return annotation
        res = methods()["complete"]({"code": "ar"})
        self.assertEqual([x.get("signature") for x in res["matches"] if x["text"] == "area"],
                         ["area(width: float, height: float=2.0)"])

    def test_rlcompleter_without_jedi(self) -> None:
        self.check_common(without_jedi=True)
        with mock.patch.dict(sys.modules, {"jedi": None}):
            res = methods()["complete"]({"code": "impo"})
            self.assertIn({"text": "import", "type": "keyword"}, res["matches"])

    def test_keys_and_columns(self) -> None:
        m = methods()
        code = 'frame["b'
        res = m["complete"]({"code": code, "cursor": len(code)})
        self.assertEqual(texts(res), ['beta"]'])
        self.assertEqual((res["cursorStart"], res["cursorEnd"]), (7, 8))
        code = "table['key_']"
        res = m["complete"]({"code": code, "cursor": 11})  # the closing quote is there already
        self.assertEqual(texts(res), ["key_a", "key_b"])

    def test_offsets_are_code_points(self) -> None:
        code = "s = '\U0001f600'; counter_"
        res = methods()["complete"]({"code": code, "cursor": len(code)})
        self.assertEqual(texts(res), ["counter_value"])
        self.assertEqual(res["cursorStart"], len(code) - len("counter_"))

    def test_context_namespace(self) -> None:
        ctx = ({"local_only": 1}, {"global_only": 2})
        m = methods(contexts={"c1": ctx})
        self.assertEqual(texts(m["complete"]({"code": "local_", "contextId": "c1"})), ["local_only"])
        self.assertEqual(texts(m["complete"]({"code": "global_", "contextId": "c1"})), ["global_only"])
        # A context that has not run here completes in __main__.
        self.assertEqual(texts(m["complete"]({"code": "counter_", "contextId": "c2"})), ["counter_value"])

    def test_bad_params(self) -> None:
        m = methods()
        with self.assertRaisesRegex(InvalidParams, "complete: code must be a string, got int"):
            m["complete"]({"code": 3})
        with self.assertRaisesRegex(InvalidParams, r"complete: cursor must be an integer from 0 to 2 .*got 5"):
            m["complete"]({"code": "ab", "cursor": 5})
        with self.assertRaisesRegex(InvalidParams, "inspect: detailLevel must be 0 or 1, got 2"):
            m["inspect"]({"code": "ab", "cursor": 1, "detailLevel": 2})
        with self.assertRaisesRegex(InvalidParams, "inspect: contextId must be a string, got int"):
            m["inspect"]({"code": "ab", "contextId": 7})


class ContextNamespaces(EngineTestCase):
    """engine.context_namespaces: the top frame of a context's last run."""

    def test_script_frame(self) -> None:
        s = self.session({"main": "import os\nfirst_value = 1\nsecond = first_value + 1\n"})
        run = s.run([{"type": "ExplicitCall", "module": "main", "definedOnType": "", "name": "__main__",
                      "positionalArgumentsExpressions": []}])
        self.assertEqual(run.result, {"status": "complete"})
        engine = engine_module()
        registered, engine._REGISTERED.engine = engine._REGISTERED.engine, s.engine
        try:
            ns = engine.context_namespaces("ctx")
            self.assertIsNotNone(ns)
            self.assertEqual(ns[0]["second"], 2)
            m = complete.methods(lambda c: engine.context_namespaces(c) if c else None)
            self.assertEqual(texts(m["complete"]({"code": "first_", "contextId": "ctx"})), ["first_value"])
            self.assertIsNone(engine.context_namespaces("nope"))
        finally:
            engine._REGISTERED.engine = registered


class Inspection(unittest.TestCase):
    def test_function(self) -> None:
        res = methods()["inspect"]({"code": "area(3, ", "cursor": 8, "detailLevel": 0})
        self.assertTrue(res["found"])
        self.assertEqual(res["name"], "area")
        self.assertEqual(res["signature"], "area(width: float, height: float = 2.0) -> float")
        self.assertEqual(res["doc"], "The area of a rectangle.")
        self.assertIn("Signature: area(width", res["text"])
        self.assertIn("Docstring:\nThe area of a rectangle.", res["text"])
        self.assertNotIn("return width * height", res["text"])

    def test_source_at_detail_1(self) -> None:
        res = methods()["inspect"]({"code": "area", "cursor": 2, "detailLevel": 1})
        self.assertIn("return width * height", res["text"])

    def test_value_and_builtin(self) -> None:
        res = methods()["inspect"]({"code": "counter_value + 1", "cursor": 3})
        self.assertIn("Value: 41", res["text"])
        self.assertIn("Type: int", res["text"])
        self.assertTrue(methods()["inspect"]({"code": "zip", "cursor": 3})["found"])

    def test_not_found(self) -> None:
        res = methods()["inspect"]({"code": "1 + 2", "cursor": 5})
        self.assertEqual(res, {"found": False, "text": ""})


if __name__ == "__main__":
    unittest.main()
