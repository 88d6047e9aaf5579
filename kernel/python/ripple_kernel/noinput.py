"""input() in a ripple kernel raises InputNotSupported, saying why.

A ripple kernel runs code again as its text is typed, and a run has no
terminal: a prompt would wait for a reply nobody can type. Before this,
input() read the kernel's empty stdin and raised a bare EOFError. The error
is an EOFError still, so code that handles end of input keeps working.
(The Jupyter kernel's preload replaces input() with one that asks the
notebook, which has a prompt.) A kernel that runs a test suite (the
pytest and unittest paths) gives the tests Python's own input() back, as
pytest's process has it (restore_input)."""

from __future__ import annotations

import builtins

MESSAGE = (
    "input() is not supported here: ripple runs this code again as you type it, "
    "with no terminal to answer a prompt. Put the value in the code (or read it "
    "from a file, an environment variable or sys.argv), or run the script in a terminal."
)


# Python's input(), kept for restore_input: code binds input at import (click:
# `visible_prompt_func = input`) and a test that sets sys.stdin expects it
# to read from there.
_BUILTIN_INPUT = builtins.input


class InputNotSupported(EOFError):
    """input() was called in a ripple kernel."""


def _input(prompt: object = "") -> str:
    raise InputNotSupported(MESSAGE)


def install_input() -> None:
    """Make input() raise InputNotSupported."""
    builtins.input = _input


def restore_input() -> None:
    """Give input() back to Python's own: the process pytest expects."""
    builtins.input = _BUILTIN_INPUT
