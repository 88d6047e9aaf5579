"""Source text of project modules: parsing, positions and segments.

A Source is one version of one module's text together with its syntax tree.
It converts the UTF-8 byte columns that ``ast`` reports into the code-point
columns of the client protocol (PROTOCOL.md 2: Position.character counts code
points) and cuts the source segment of a statement, which is the key the
analysis caches are keyed by.

Parsing is incremental: ``parse(..., previous=old)`` re-parses only the one
statement an edit touched when the edit stays inside that statement and keeps
the line count, which is what typing inside a line of a large function does.
Everything else falls back to a full ``ast.parse``. Trees are never modified in
place: a re-parse builds a new spine (module body, enclosing definitions) that
shares the untouched statement nodes with the previous tree, so a plan or
cache holding the previous Source stays valid.
"""

from __future__ import annotations

import ast
import copy
from typing import Dict, List, Optional, Tuple, Union

from .api import WireObject

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_Def = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]


class Source:
    """One parsed version of a module's text. Immutable once built.

    name: dotted module name; path: POSIX path relative to the project root;
    filename: absolute file name used for code objects and tracebacks.
    """

    __slots__ = ("name", "path", "filename", "text", "lines", "tree", "generation", "defs")

    def __init__(self, name: str, path: str, filename: str, text: str, lines: List[str], tree: ast.Module,
                 generation: int) -> None:
        self.name = name
        self.path = path
        self.filename = filename
        self.text = text
        self.lines = lines  # list of lines without their line breaks
        self.tree = tree
        self.generation = generation
        self.defs: Optional[Dict[str, _Def]] = None  # top-level def/class nodes by name, built on first lookup

    def char_col(self, lineno: int, byte_col: int) -> int:
        """Code-point column of the UTF-8 byte column byte_col on 1-based lineno."""
        if lineno < 1 or lineno > len(self.lines):
            return byte_col
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def node_range(self, node: ast.stmt) -> WireObject:
        """The protocol Range of node, 0-based lines, code-point columns."""
        start_line = _first_line(node)
        start_col = node.col_offset if start_line == node.lineno else self._indent_bytes(start_line)
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else 0
        return {
            "start": {"line": start_line - 1, "character": self.char_col(start_line, start_col)},
            "end": {"line": end_line - 1, "character": self.char_col(end_line, end_col)},
        }

    def line_range(self, lineno: Optional[int], byte_col: Optional[int] = None, end_lineno: Optional[int] = None,
                   end_byte_col: Optional[int] = None) -> Optional[WireObject]:
        """A Range for a traceback position; whole line when columns are unknown."""
        if lineno is None or lineno < 1:
            return None
        line = self.lines[lineno - 1] if lineno <= len(self.lines) else ""
        if byte_col is None:
            stripped = len(line) - len(line.lstrip())
            return {
                "start": {"line": lineno - 1, "character": stripped},
                "end": {"line": lineno - 1, "character": len(line)},
            }
        end_lineno = end_lineno or lineno
        if end_byte_col is None:
            end_byte_col = byte_col
        return {
            "start": {"line": lineno - 1, "character": self.char_col(lineno, byte_col)},
            "end": {"line": end_lineno - 1, "character": self.char_col(end_lineno, end_byte_col)},
        }

    def segment(self, node: ast.stmt) -> str:
        """The exact source text of a statement (decorators included)."""
        start_line = _first_line(node)
        end_line = node.end_lineno or node.lineno  # always set by ast.parse
        if start_line == node.lineno:
            start = node.col_offset
        else:
            start = self._indent_bytes(start_line)
        if start_line == end_line:
            return _byte_slice(self.lines[start_line - 1], start, node.end_col_offset)
        first = _byte_slice(self.lines[start_line - 1], start, None)
        last = _byte_slice(self.lines[end_line - 1], 0, node.end_col_offset)
        return "\n".join([first] + self.lines[start_line:end_line - 1] + [last])

    def _indent_bytes(self, lineno: int) -> int:
        line = self.lines[lineno - 1]
        return len(line) - len(line.lstrip())


def _byte_slice(line: str, start: int, end: Optional[int]) -> str:
    if line.isascii():
        return line[start:end]
    raw = line.encode("utf-8")
    return raw[start:end].decode("utf-8", "replace")


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        return min(d.lineno for d in decorators)
    return node.lineno


def split_lines(text: str) -> List[str]:
    """Lines of text without line breaks, as the tokenizer counts them."""
    # str.splitlines also splits on \x0c, \x1c... which Python's tokenizer does
    # not treat as line ends; only \r\n, \r and \n count.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse(name: str, path: str, filename: str, text: str, generation: int,
          previous: Optional[Source] = None) -> Source:
    """Parse text into a Source; raises SyntaxError (with filename set).

    With previous (the Source of the same module before the edit) only the
    statement the edit touched is re-parsed when that is provably equivalent
    to a full parse.
    """
    lines = split_lines(text)
    if previous is not None and previous.filename == filename:
        tree = _reparse_incremental(previous, lines, filename)
        if tree is not None:
            return Source(name, path, filename, text, lines, tree, generation)
    tree = ast.parse(text, filename, "exec")
    return Source(name, path, filename, text, lines, tree, generation)


# The way from the module down to a statement: (owner def or None for the
# module, the body holding the next step, its index in that body).
_Path = List[Tuple[Optional[_Def], List[ast.stmt], int]]


def _reparse_incremental(previous: Source, lines: List[str], filename: str) -> Optional[ast.Module]:
    """The tree of lines re-parsed from previous's tree, when only one
    statement of a body changed and keeps its lines; None: parse it all."""
    old = previous.lines
    if len(old) != len(lines):
        return None
    n = len(lines)
    first = 0
    while first < n and old[first] == lines[first]:
        first += 1
    if first == n:
        return previous.tree
    last = n - 1
    while last > first and old[last] == lines[last]:
        last -= 1
    # Changed lines are first..last (0-based).
    path = _innermost(previous.tree, first + 1, last + 1)
    if path is None:
        # Between statements only comments and blank lines can change
        # without changing the tree.
        return previous.tree if _only_comments(old, lines, first, last) else None
    new = _reparse_statement(path, lines, first + 1, filename)
    if new is None:
        return None
    return _rebuild(previous.tree, path, new)


def _innermost(tree: ast.Module, lo: int, hi: int) -> Optional[_Path]:
    """The path to the innermost statement of a module or definition body
    that covers lines lo..hi (1-based), or None when no statement does."""
    path: _Path = []
    body = tree.body
    owner: Optional[_Def] = None
    while True:
        index = _covering(body, lo, hi)
        if index is None:
            return None
        node = body[index]
        path.append((owner, body, index))
        if isinstance(node, _DEFS) and node.body and node.body[0].lineno <= lo and not _header_touched(node, lo):
            owner = node
            body = node.body
            continue
        return path


def _reparse_statement(path: _Path, lines: List[str], lo: int, filename: str) -> Optional[ast.stmt]:
    """The statement at the end of path parsed again from lines, when that
    equals a full parse (same place and lines, no decorators, not a future
    import); None otherwise."""
    owner, body, index = path[-1]
    node = body[index]
    if getattr(node, "decorator_list", None) or _header_of_owner_touched(owner, lo):
        return None
    if index > 0 and _end(body[index - 1]) >= node.lineno:
        return None
    if index + 1 < len(body) and body[index + 1].lineno <= _end(node):
        return None
    start, end = node.lineno, _end(node)
    indent = node.col_offset
    first_line = lines[start - 1]
    if indent == 0:
        snippet = "\n".join(lines[start - 1:end]) + "\n"
        offset = start - 1
    else:
        if len(first_line) - len(first_line.lstrip(" \t")) != indent or not first_line[:indent].strip() == "":
            return None
        snippet = "if 1:\n" + "\n".join(lines[start - 1:end]) + "\n"
        offset = start - 2
    try:
        parsed = ast.parse(snippet, filename, "exec")
    except SyntaxError:
        return None
    if indent == 0:
        stmts = parsed.body
    else:
        wrapper = parsed.body[0] if parsed.body else None
        stmts = wrapper.body if isinstance(wrapper, ast.If) else []
    if len(stmts) != 1:
        return None
    new = stmts[0]
    if new.col_offset != indent or new.lineno + offset != start or _end(new) + offset != end:
        return None
    if getattr(new, "decorator_list", None):
        return None
    if isinstance(new, ast.ImportFrom) and new.module == "__future__":
        return None
    ast.increment_lineno(new, offset)
    return new


def _rebuild(tree: ast.Module, path: _Path, new: ast.stmt) -> ast.Module:
    """tree with the statement at the end of path replaced by new: each
    enclosing body is copied and the nodes themselves shallow-copied, so
    the previous tree is left untouched."""
    replacement = new
    for owner_node, body_list, idx in reversed(path):
        new_body = list(body_list)
        new_body[idx] = replacement
        if owner_node is None:
            module = copy.copy(tree)
            module.body = new_body
            return module
        clone = copy.copy(owner_node)
        clone.body = new_body
        if idx == len(body_list) - 1:
            # A definition ends where its last statement ends.
            clone.end_lineno = replacement.end_lineno
            clone.end_col_offset = replacement.end_col_offset
        replacement = clone
    raise AssertionError("a path starts at the module")


def _end(node: ast.stmt) -> int:
    """The last line of a parsed statement (always set by ast.parse)."""
    return node.end_lineno or node.lineno


def _covering(body: List[ast.stmt], lo: int, hi: int) -> Optional[int]:
    """Index of the statement of body whose line span covers lo..hi, or None."""
    left, right = 0, len(body) - 1
    while left <= right:
        mid = (left + right) // 2
        node = body[mid]
        start = _first_line(node)
        end = node.end_lineno or node.lineno  # always set by ast.parse
        if end < lo:
            left = mid + 1
        elif start > lo:
            right = mid - 1
        else:
            return mid if end >= hi else None
    return None


def _header_touched(node: _Def, lo: int) -> bool:
    return lo < node.body[0].lineno and lo >= _first_line(node)


def _header_of_owner_touched(owner: Optional[_Def], lo: int) -> bool:
    return owner is not None and lo < owner.body[0].lineno


def _only_comments(old: List[str], new: List[str], first: int, last: int) -> bool:
    for lines in (old, new):
        for i in range(first, last + 1):
            stripped = lines[i].strip()
            if stripped and not stripped.startswith("#"):
                return False
    return True
