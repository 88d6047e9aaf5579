"""Visualizations of a statement's value (PROTOCOL.md's visualizations).

A visualization is an expression the client attached to a statement of the
top frame: applied to the statement's value when it runs (or on request),
or evaluated once in the frame's namespace (oneshot). Its result, encoded,
is sent as a visualization event, or visualizationFailed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional

from . import instrument, values

if TYPE_CHECKING:
    from .api import KernelAPI, WireObject
    from .engine import Engine

Emit = Callable[["WireObject"], None]


class Visualizer:
    """Computes and sends the visualizations of one execute request."""

    def __init__(self, engine: Engine, emit: Emit) -> None:
        self.engine = engine
        self.kernel: KernelAPI = engine.kernel
        self.diagnostics = engine.diagnostics
        self.emit = emit

    def visualize(self, items: List[WireObject], value: object, ns: Dict[str, object],
                  module_dict: Dict[str, object], fresh: bool) -> None:
        """The visualizations of a statement whose value is value (fresh: it
        has just run; else it came from the cache)."""
        for vis in items:
            if vis.get("oneshot"):
                self._oneshot(vis, ns)
            elif fresh or vis.get("apply"):
                self._apply(vis, value, module_dict)

    def failed(self, vis: WireObject, message: str, diagnostic: Optional[WireObject] = None) -> None:
        event = {
            "type": "visualizationFailed",
            "visualizationId": vis["visualizationId"],
            "expressionId": vis["expressionId"],
            "message": message,
        }
        if diagnostic is not None:
            event["diagnostic"] = diagnostic
        self.emit(event)

    def _apply(self, vis: WireObject, value: object, module_dict: Dict[str, object]) -> None:
        if vis["expression"].strip() == values.DISPLAY_VISUALIZATION:
            self._deliver(vis, lambda: values.mime_bundle(value), values.DISPLAY_LIMIT)
            return

        def compute() -> object:
            func = self.engine.visualization_callable(vis["expression"], module_dict)
            args = [
                eval(instrument.compile_expression(src, "<visualization argument>"), module_dict)
                for src in vis.get("positionalArgumentsExpressions") or ()
            ]
            return func(value, *args)

        self._deliver(vis, compute)

    def _oneshot(self, vis: WireObject, ns: Dict[str, object]) -> None:
        self._deliver(vis, lambda: eval(instrument.compile_expression(vis["expression"], "<executeExpression>"), ns))

    def _deliver(self, vis: WireObject, compute: Callable[[], object], limit: int = values.VISUALIZATION_LIMIT) -> None:
        """Run compute (user code) and send its encoded result as the
        visualization's data, or visualizationFailed if it raises or the
        result cannot be encoded."""
        try:
            with self.kernel.user_code():
                data, error = values.encode_visualization(compute(), limit)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            self.failed(vis, values.exception_message(exc), self.diagnostics.for_exception(exc))
            return
        if error is not None:
            self.failed(vis, error)
            return
        self.emit({"type": "visualization", "visualizationId": vis["visualizationId"], "expressionId": vis["expressionId"], "data": data})
