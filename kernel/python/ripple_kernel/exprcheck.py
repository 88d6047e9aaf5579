"""Is a visualization expression valid Python? (PROTOCOL.md 6: 2007)

The engine asks this (a short process, run by the kernels' interpreter,
like labels and affected) before it accepts a visualization expression,
so a syntax error is refused when the client sends it instead of failing
at the next run. Nothing runs: the text is compiled, not evaluated.

stdin: {"expression": text}
stdout: {"error": "SyntaxError: ... (line L, column C)"} or {}
"""

from __future__ import annotations

import json
import sys


def check(expression: str) -> str:
    """The error compiling expression as an expression raises, or ""."""
    try:
        compile(expression, "<visualization>", "eval", dont_inherit=True)
    except SyntaxError as exc:
        where = ""
        if exc.lineno:
            where = " (line %d, column %d)" % (exc.lineno, exc.offset or 0)
        return "%s: %s%s" % (type(exc).__name__, exc.msg, where)
    except (ValueError, OverflowError) as exc:  # a NUL byte, a literal too large
        return "%s: %s" % (type(exc).__name__, exc)
    return ""


def main() -> None:
    req = json.load(sys.stdin)
    error = check(req["expression"])
    json.dump({"error": error} if error else {}, sys.stdout)
