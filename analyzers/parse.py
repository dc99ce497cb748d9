"""Parsing CUDA with tree-sitter-cuda, and documents that re-parse incrementally after edits.

One `Language` and its compiled queries are shared by the whole process (they are immutable); a `Parser` is not
thread-safe, so each `CudaDocument` owns one. A document keeps its last tree so that an edit costs a
tree-sitter incremental re-parse, and its analysis cache so that functions whose text did not change are not
analysed again (see `analyzers.build`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import tree_sitter as ts
import tree_sitter_cuda as ts_cuda

from warpwise.analyzers.model import LineIndex, Position


@functools.cache
def language() -> ts.Language:
    """Return the tree-sitter language for CUDA."""
    return ts.Language(ts_cuda.language())


@functools.cache
def query(source: str) -> ts.Query:
    """Return a compiled query (compiled once per process)."""
    return ts.Query(language(), source)


def new_parser() -> ts.Parser:
    """Return a fresh parser for CUDA (parsers must not be shared between threads)."""
    return ts.Parser(language())


def captures(q: ts.Query, node: Any) -> dict[str, list[Any]]:
    """Return the captures of a query below one node, grouped by capture name."""
    return ts.QueryCursor(q).captures(node)


@dataclass(frozen=True, slots=True)
class TextEdit:
    """A change to a document in LSP terms: replace `start..end` with `text`."""

    start: Position
    end: Position
    text: str


def _point(lines: LineIndex, offset: int) -> tuple[int, int]:
    """Return tree-sitter's (row, byte column) for an absolute byte offset."""
    pos = lines.position(offset)
    return (pos.line, offset - lines.line_start(pos.line))


_LONE_CR = re.compile(rb"\r(?!\n)")


def parse_source(data: bytes) -> bytes:
    """Return the bytes tree-sitter parses: lone `\r` line ends become `\n` (same length, same offsets).

    The grammar ends comments and directives at `\n` only, while LSP (and `LineIndex`) end a line at a lone
    `\r` too; without this a file with old-Mac line ends would be one long comment after its first `//`.
    """
    return _LONE_CR.sub(b"\n", data) if b"\r" in data else data


class CudaDocument:
    """One CUDA source text with its syntax tree, re-parsed incrementally on each edit."""

    def __init__(self, path: str, text: str | bytes) -> None:
        self.path = path
        self._parser = new_parser()
        self.data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        self.lines = LineIndex(self.data)
        self.tree = self._parser.parse(parse_source(self.data))
        self.version = 0
        self.cache: dict[bytes, Any] = {}

    @property
    def text(self) -> str:
        """Return the document's text."""
        return self.data.decode("utf-8", "replace")

    def replace(self, text: str | bytes) -> None:
        """Replace the whole text (a full sync) and parse it from scratch."""
        self.data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        self.lines = LineIndex(self.data)
        self.tree = self._parser.parse(parse_source(self.data))
        self.version += 1

    def apply(self, edits: list[TextEdit]) -> None:
        """Apply LSP content changes in order, re-parsing incrementally."""
        for edit in edits:
            start = self.lines.offset(edit.start)
            end = max(start, self.lines.offset(edit.end))
            new = edit.text.encode("utf-8", "surrogatepass")
            start_point = _point(self.lines, start)
            old_end_point = _point(self.lines, end)
            data = self.data[:start] + new + self.data[end:]
            if b"\r" in self.data or b"\r" in new:
                # An edit next to a `\r` can turn it into half of a `\r\n`: parse such texts whole.
                self.data = data
                self.lines = LineIndex(data)
                self.tree = self._parser.parse(parse_source(data))
                continue
            nl = new.count(b"\n")
            if nl:
                new_end_point = (start_point[0] + nl, len(new) - new.rfind(b"\n") - 1)
            else:
                new_end_point = (start_point[0], start_point[1] + len(new))
            self.tree.edit(
                start_byte=start,
                old_end_byte=end,
                new_end_byte=start + len(new),
                start_point=start_point,
                old_end_point=old_end_point,
                new_end_point=new_end_point,
            )
            self.data = data
            self.lines = LineIndex(data)
            self.tree = self._parser.parse(data, self.tree)
        self.version += 1
