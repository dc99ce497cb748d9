"""Parsing CUDA with tree-sitter-cuda: the `SourceFile` value, and documents that re-parse incrementally.

A `SourceFile` is one version of one text with its syntax tree and line index, parsed once; the kernel model
holds the `SourceFile` it was built from (`FileModel.source`), so facts, matchers, rewrites and the gate read
that tree and never parse the text again. `parse_tree` is the one place warpwise runs tree-sitter's parser.

One `Language` and its compiled queries are shared by the whole process (they are immutable); a `Parser` is not
thread-safe, so each `CudaDocument` owns one. A document holds the `SourceFile` of its current version; an edit
re-parses incrementally from a copy of that tree (a published tree is never edited) and yields a new
`SourceFile`. The document also keeps its analysis cache so that functions whose text did not change are not
analysed again (see `analyzers.build`).
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Any

import tree_sitter as ts
import tree_sitter_cuda as ts_cuda

from warpwise.analyzers import checkpoint
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


_CHECKPOINTED_PARSE = 16 * 1024
"""Texts longer than this offer checkpoints while they are parsed (a shorter one parses in a few milliseconds)."""

_PARSE_CHUNK = 64 * 1024


def parse_tree(data: bytes, parser: ts.Parser | None = None, old_tree: ts.Tree | None = None) -> ts.Tree:
    """Parse a text (incrementally from an edited `old_tree` when given): the one call of tree-sitter's parser."""
    p = parser if parser is not None else new_parser()
    data = parse_source(data)
    if old_tree is None and len(data) > _CHECKPOINTED_PARSE and checkpoint.installed():
        # Read in chunks so that tree-sitter calls back while it parses: each call is a checkpoint. The chunks are
        # memoryview slices, because py-tree-sitter 0.26 keeps every `bytes` chunk a read callback returns. Only
        # whole parses offer checkpoints: an incremental one re-parses what the edits touched, in milliseconds,
        # and py-tree-sitter 0.26 holds on to memory when a read callback parses from an old tree.
        view = memoryview(data)

        def read(offset: int, _point: object) -> memoryview:
            return view[offset : offset + _PARSE_CHUNK]

        def progress(*_state: object) -> bool:
            checkpoint.checkpoint(abortable=False)
            return False

        first = p.parse(read, progress_callback=progress)
        if first is not None:
            # A tree parsed from a callback has no source to give its nodes' text from (and would read the freed
            # views): parse again from the bytes, which reuses every node of `first` (a few milliseconds).
            return p.parse(data, first)
        p.reset()
    return p.parse(data, old_tree) if old_tree is not None else p.parse(data)


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


_LAZY_PARSE = threading.Lock()
_LONE_CR = re.compile(rb"\r(?!\n)")


def parse_source(data: bytes) -> bytes:
    r"""Return the bytes tree-sitter parses: lone `\r` line ends become `\n` (same length, same offsets).

    The grammar ends comments and directives at `\n` only, while LSP (and `LineIndex`) end a line at a lone
    `\r` too; without this a file with old-Mac line ends would be one long comment after its first `//`.
    """
    return _LONE_CR.sub(b"\n", data) if b"\r" in data else data


class SourceFile:
    """One version of one text: its bytes, its syntax tree and its line index (immutable; parsed once).

    `SourceFile.parse` parses at once; a `SourceFile` made from text alone (a file too large to analyse) parses
    only if someone asks for its tree, and then once. The tree must never be edited: `edited` works on a copy.
    """

    __slots__ = ("__weakref__", "_lines", "_text", "_tree")

    def __init__(self, text: bytes, tree: ts.Tree | None = None, lines: LineIndex | None = None) -> None:
        self._text = text
        self._tree = tree
        self._lines = lines if lines is not None else LineIndex(text)

    @classmethod
    def parse(cls, text: str | bytes, parser: ts.Parser | None = None) -> SourceFile:
        """Parse a text."""
        data = _bytes(text)
        return cls(data, parse_tree(data, parser))

    @property
    def text(self) -> bytes:
        """Return the text (bytes, as the tree's offsets count)."""
        return self._text

    @property
    def lines(self) -> LineIndex:
        """Return the line index of the text."""
        return self._lines

    @property
    def tree(self) -> ts.Tree:
        """Return the syntax tree of the text (parsed on first use when the file was made without one)."""
        tree = self._tree
        if tree is None:
            with _LAZY_PARSE:
                if self._tree is None:
                    # No checkpoint while the lock is held: work run at one could need the lock too.
                    with checkpoint.checkpoints(None):
                        self._tree = parse_tree(self._text)
                tree = self._tree
        return tree

    def edited(self, edits: list[TextEdit], parser: ts.Parser | None = None) -> SourceFile:
        """Return the next version after LSP content changes applied in order, re-parsed incrementally."""
        data, lines = self._text, self._lines
        tree = self.tree.copy()
        for edit in edits:
            start = lines.offset(edit.start)
            end = max(start, lines.offset(edit.end))
            new = edit.text.encode("utf-8", "surrogatepass")
            start_point = _point(lines, start)
            old_end_point = _point(lines, end)
            before = data
            data = data[:start] + new + data[end:]
            if b"\r" in before or b"\r" in new:
                # An edit next to a `\r` can turn it into half of a `\r\n`: parse such texts whole.
                lines = LineIndex(data)
                tree = parse_tree(data, parser)
                continue
            nl = new.count(b"\n")
            if nl:
                new_end_point = (start_point[0] + nl, len(new) - new.rfind(b"\n") - 1)
            else:
                new_end_point = (start_point[0], start_point[1] + len(new))
            tree.edit(
                start_byte=start,
                old_end_byte=end,
                new_end_byte=start + len(new),
                start_point=start_point,
                old_end_point=old_end_point,
                new_end_point=new_end_point,
            )
            lines = LineIndex(data)
            tree = parse_tree(data, parser, tree)
        return SourceFile(data, tree, lines)


def _bytes(text: str | bytes) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)


class CudaDocument:
    """One CUDA source text whose `SourceFile` is re-parsed incrementally on each edit."""

    def __init__(self, path: str, text: str | bytes | SourceFile) -> None:
        self.path = path
        self._parser = new_parser()
        self.source = text if isinstance(text, SourceFile) else SourceFile.parse(text, self._parser)
        self.version = 0
        self.cache: dict[bytes, Any] = {}

    @property
    def data(self) -> bytes:
        """Return the document's text (bytes)."""
        return self.source.text

    @property
    def lines(self) -> LineIndex:
        """Return the line index of the current version."""
        return self.source.lines

    @property
    def tree(self) -> ts.Tree:
        """Return the syntax tree of the current version (never edit it: it belongs to the `SourceFile`)."""
        return self.source.tree

    @property
    def text(self) -> str:
        """Return the document's text."""
        return self.data.decode("utf-8", "replace")

    def replace(self, text: str | bytes) -> None:
        """Replace the whole text (a full sync) and parse it from scratch."""
        self.source = SourceFile.parse(text, self._parser)
        self.version += 1

    def apply(self, edits: list[TextEdit]) -> None:
        """Apply LSP content changes in order, re-parsing incrementally."""
        self.source = self.source.edited(edits, self._parser)
        self.version += 1
