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

import ast
import copy

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Source:
    """One parsed version of a module's text. Immutable once built.

    name: dotted module name; path: POSIX path relative to the project root;
    filename: absolute file name used for code objects and tracebacks.
    """

    __slots__ = ("name", "path", "filename", "text", "lines", "tree", "generation", "defs")

    def __init__(self, name, path, filename, text, lines, tree, generation):
        self.name = name
        self.path = path
        self.filename = filename
        self.text = text
        self.lines = lines  # list of lines without their line breaks
        self.tree = tree
        self.generation = generation
        self.defs = None  # top-level def/class nodes by name, built on first lookup

    def char_col(self, lineno, byte_col):
        """Code-point column of the UTF-8 byte column byte_col on 1-based lineno."""
        if lineno < 1 or lineno > len(self.lines):
            return byte_col
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def node_range(self, node):
        """The protocol Range of node, 0-based lines, code-point columns."""
        start_line = _first_line(node)
        start_col = node.col_offset if start_line == node.lineno else self._indent_bytes(start_line)
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else 0
        return {
            "start": {"line": start_line - 1, "character": self.char_col(start_line, start_col)},
            "end": {"line": end_line - 1, "character": self.char_col(end_line, end_col)},
        }

    def line_range(self, lineno, byte_col=None, end_lineno=None, end_byte_col=None):
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

    def segment(self, node):
        """The exact source text of a statement (decorators included)."""
        start_line = _first_line(node)
        end_line = node.end_lineno
        if start_line == node.lineno:
            start = node.col_offset
        else:
            start = self._indent_bytes(start_line)
        if start_line == end_line:
            return _byte_slice(self.lines[start_line - 1], start, node.end_col_offset)
        first = _byte_slice(self.lines[start_line - 1], start, None)
        last = _byte_slice(self.lines[end_line - 1], 0, node.end_col_offset)
        return "\n".join([first] + self.lines[start_line:end_line - 1] + [last])

    def _indent_bytes(self, lineno):
        line = self.lines[lineno - 1]
        return len(line) - len(line.lstrip())


def _byte_slice(line, start, end):
    if line.isascii():
        return line[start:end]
    raw = line.encode("utf-8")
    return raw[start:end].decode("utf-8", "replace")


def _first_line(node):
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        return min(d.lineno for d in decorators)
    return node.lineno


def split_lines(text):
    """Lines of text without line breaks, as the tokenizer counts them."""
    # str.splitlines also splits on \x0c, \x1c... which Python's tokenizer does
    # not treat as line ends; only \r\n, \r and \n count.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse(name, path, filename, text, generation, previous=None):
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


def _reparse_incremental(previous, lines, filename):
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
    # Changed lines are first..last (0-based). Find the innermost statement of
    # a module or definition body that covers them all.
    lo, hi = first + 1, last + 1
    path = []  # (owner node or None for the module, body list, index)
    body = previous.tree.body
    owner = None
    while True:
        index = _covering(body, lo, hi)
        if index is None:
            # Between statements only comments and blank lines can change
            # without changing the tree.
            if _only_comments(old, lines, first, last):
                return previous.tree
            return None
        node = body[index]
        path.append((owner, body, index))
        if isinstance(node, _DEFS) and node.body and node.body[0].lineno <= lo and not _header_touched(node, lo):
            owner = node
            body = node.body
            continue
        break
    owner, body, index = path[-1]
    node = body[index]
    if getattr(node, "decorator_list", None) or _header_of_owner_touched(owner, lo):
        return None
    if index > 0 and body[index - 1].end_lineno >= node.lineno:
        return None
    if index + 1 < len(body) and body[index + 1].lineno <= node.end_lineno:
        return None
    start, end = node.lineno, node.end_lineno
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
    stmts = parsed.body if indent == 0 else (parsed.body[0].body if parsed.body else [])
    if len(stmts) != 1:
        return None
    new = stmts[0]
    if new.col_offset != indent or new.lineno + offset != start or new.end_lineno + offset != end:
        return None
    if getattr(new, "decorator_list", None):
        return None
    if isinstance(new, ast.ImportFrom) and new.module == "__future__":
        return None
    ast.increment_lineno(new, offset)
    # Rebuild the spine: each enclosing body is copied, the nodes themselves
    # are shallow-copied so the previous tree is left untouched.
    replacement = new
    for owner_node, body_list, idx in reversed(path):
        new_body = list(body_list)
        new_body[idx] = replacement
        if owner_node is None:
            module = copy.copy(previous.tree)
            module.body = new_body
            return module
        clone = copy.copy(owner_node)
        clone.body = new_body
        if idx == len(body_list) - 1:
            # A definition ends where its last statement ends.
            clone.end_lineno = replacement.end_lineno
            clone.end_col_offset = replacement.end_col_offset
        replacement = clone
    return None


def _covering(body, lo, hi):
    """Index of the statement of body whose line span covers lo..hi, or None."""
    left, right = 0, len(body) - 1
    while left <= right:
        mid = (left + right) // 2
        node = body[mid]
        start = _first_line(node)
        if node.end_lineno < lo:
            left = mid + 1
        elif start > lo:
            right = mid - 1
        else:
            return mid if node.end_lineno >= hi else None
    return None


def _header_touched(node, lo):
    return lo < node.body[0].lineno and lo >= _first_line(node)


def _header_of_owner_touched(owner, lo):
    return owner is not None and lo < owner.body[0].lineno


def _only_comments(old, new, first, last):
    for lines in (old, new):
        for i in range(first, last + 1):
            stripped = lines[i].strip()
            if stripped and not stripped.startswith("#"):
                return False
    return True
