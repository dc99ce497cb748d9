"""Fixes as data: text edits, the fix that carries them, and the context a rewrite function works in.

A rewrite is one small pure function `rewrite(ctx: RewriteContext) -> list[Edit] | None`: it reads the source
and the region's facts and returns edits (absolute byte offsets into the same text version) or None when the
region, as written, is outside what the rewrite handles exactly. Edits keep the user's names and formatting;
`apply_edits` refuses overlapping edits.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.model import FileModel, Function, Span
from warpwise.skills.model import Applicability
from warpwise.skills.regions import Region


@dataclass(frozen=True, slots=True, order=True)
class Edit:
    """Replace bytes `start..end` of the text with `text`."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A card's fix for one region: sorted, non-overlapping edits and how safe they are."""

    card_id: str
    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability


class EditConflict(ValueError):
    """Two edits overlap."""


def apply_edits(data: bytes, edits: list[Edit] | tuple[Edit, ...]) -> bytes:
    """Apply non-overlapping edits to a text and return the new text."""
    ordered = sorted(edits)
    for a, b in itertools.pairwise(ordered):
        if b.start < a.end or (b.start == a.start and a.start == a.end and b.start == b.end):
            raise EditConflict(f"edits at bytes {a.start}..{a.end} and {b.start}..{b.end} overlap")
    out = bytearray()
    pos = 0
    for e in ordered:
        if e.start < pos or e.end < e.start or e.end > len(data):
            raise EditConflict(f"edit {e.start}..{e.end} is outside the text or out of order")
        out += data[pos : e.start]
        out += e.text.encode("utf-8")
        pos = e.end
    out += data[pos:]
    return bytes(out)


@dataclass(frozen=True)
class RewriteContext:
    """What a rewrite function works with: the file, the function, the region, and syntax-tree access."""

    model: FileModel
    function: Function
    region: Region
    args: dict[str, Any]

    @property
    def data(self) -> bytes:
        """Return the whole text (bytes)."""
        return self.model.text

    def text(self, span: Span) -> str:
        """Return the text of an absolute span."""
        return self.model.text[span[0] : span[1]].decode("utf-8", "replace")

    def abs(self, rel: Span) -> Span:
        """Return the absolute span of a span relative to the function."""
        return self.function.span(rel)

    def fact(self, name: str, default: Any = None) -> Any:
        """Return one fact of the region."""
        return self.region.facts.get(name, default)

    @property
    def tree(self) -> Any:
        """Return a copy of the syntax tree the model was built from (a rewrite may edit its copy)."""
        return self.model.tree.copy()

    def node(self, span: Span, type_: str | None = None) -> Any:
        """Return the smallest node covering an absolute span (optionally the nearest ancestor of a type)."""
        node = self.tree.root_node.descendant_for_byte_range(span[0], span[1])
        if type_ is None:
            return node
        while node is not None and node.type != type_:
            node = node.parent
        return node

    def line_start(self, offset: int) -> int:
        """Return the offset of the first byte of the line holding `offset`."""
        return self.model.text.rfind(b"\n", 0, offset) + 1

    def indent_at(self, offset: int) -> str:
        """Return the leading white space of the line holding `offset`."""
        start = self.line_start(offset)
        end = start
        data = self.model.text
        while end < len(data) and data[end : end + 1] in (b" ", b"\t"):
            end += 1
        return data[start:end].decode()

    def indent_unit(self) -> str:
        """Return the file's indentation step (two spaces unless the function body says otherwise)."""
        body = self.function.body_span
        if body is None:
            return "  "
        start = self.function.base + body[0]
        nl = self.model.text.find(b"\n", start)
        if nl < 0:
            return "  "
        inner = self.indent_at(nl + 1)
        outer = self.indent_at(self.function.base)
        if len(inner) > len(outer):
            return inner[len(outer) :]
        return "  "
