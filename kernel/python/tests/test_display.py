"""Rich values (PROTOCOL.md 7.2) without third-party packages: mimeTypes
from IPython's display protocol, the ripple:display bundle, ripple.display."""

import unittest

from enginetest import EngineTestCase, engine_module

PROTOCOL = """
class Html:
    def _repr_html_(self):
        return "<b>x</b>"

class Png:
    def _repr_png_(self):
        return b"\\x89PNG..."

class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/markdown": "*m*"}, {}

class Claims:
    def __getattr__(self, name):
        return lambda *a: "anything"

class Big:
    def _repr_html_(self):
        return "x" * (9 << 20)
"""


class Display(EngineTestCase):
    def test_mime_types_and_bundles(self):
        s = self.session({"main": PROTOCOL + "\ndef main():\n    h = Html()\n    p = Png()\n    b = Bundle()\n    c = Claims()\n    n = 1\n    import ripple\n    ripple.display(h, b)\n"})
        run = s.run()
        self.assertEqual(run.result, {"status": "complete"})
        mimes = {u["expressionId"]: u["payload"].get("mimeTypes") for u in run.updates() if u["payload"]["type"] == "Value"}
        self.assertEqual(mimes["main:main/h"], ["text/html"])
        self.assertEqual(mimes["main:main/p"], ["image/png"])
        self.assertIsNone(mimes["main:main/b"])  # known only by calling it
        self.assertIsNone(mimes["main:main/c"])  # an instance __getattr__ claims nothing
        self.assertIsNone(mimes["main:main/n"])
        shown = [ev for ev in run.events if ev["type"] == "displayData"]
        self.assertEqual([ev["expressionId"] for ev in shown], ["main:main/#2", "main:main/#2"])
        self.assertEqual(shown[0]["data"]["text/html"], "<b>x</b>")
        self.assertEqual(shown[1]["data"]["text/markdown"], "*m*")
        vis = [{"visualizationId": v, "expressionId": e, "expression": "ripple:display", "apply": True}
               for v, e in (("v1", "main:main/p"), ("v2", "main:main/n"))]
        got = {ev["visualizationId"]: ev for ev in s.run(visualizations=vis).visualizations()}
        self.assertEqual(got["v1"]["data"]["image/png"], "iVBORy4uLg==")  # base64
        self.assertEqual(got["v2"]["data"], {"text/plain": "1"})

    def test_a_bundle_over_the_limit_fails_naming_its_size(self):
        s = self.session({"main": PROTOCOL + "\ndef main():\n    big = Big()\n"})
        vis = [{"visualizationId": "v", "expressionId": "main:main/big", "expression": "ripple:display", "apply": True}]
        failed = s.run(visualizations=vis).visualizations()
        self.assertEqual(failed[0]["type"], "visualizationFailed")
        self.assertIn("over the 8388608 byte limit", failed[0]["message"])

    def test_mime_detection_is_cached_per_type(self):
        values = engine_module().values
        self.assertEqual(values.mime_types(1), ())
        self.assertIn(int, values._TYPE_MIMES)

    def test_a_tuple_holding_a_figure_offers_the_figure(self):
        # fig, ax = plt.subplots(): the pair shows the figure (classes named
        # as matplotlib's, so matplotlib is not needed).
        values = engine_module().values

        class Figure:
            def savefig(self, buf, format=None, bbox_inches=None):
                buf.write(b"<svg/>" if format == "svg" else b"PNG")

        class Axes:
            def __init__(self, fig):
                self.figure = fig

        Figure.__module__, Figure.__qualname__ = "matplotlib.figure", "Figure"
        Axes.__module__, Axes.__qualname__ = "matplotlib.axes._base", "_AxesBase"
        fig = Figure()
        for held in ((fig, Axes(fig)), [Axes(fig)]):
            self.assertEqual(values.mime_types(held), ("image/png", "image/svg+xml"))
            bundle = values.mime_bundle(held)
            self.assertEqual(bundle["image/png"], "UE5H")  # base64 of PNG
            self.assertEqual(bundle["image/svg+xml"], "<svg/>")
        self.assertEqual(values.mime_types((1, "a")), ())
        self.assertEqual(values.mime_types(tuple(range(20)) + (fig,)), ())  # too long to look into


if __name__ == "__main__":
    unittest.main()
