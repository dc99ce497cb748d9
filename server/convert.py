"""Conversions between the engine's plain values and lsprotocol types (the only place positions cross over)."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from warpwise.analyzers.findings import Severity
from warpwise.analyzers.model import LineIndex, Position, Range, Span

SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def position(pos: Position) -> types.Position:
    """Return an LSP position."""
    return types.Position(line=pos.line, character=pos.character)


def lsp_range(rng: Range) -> types.Range:
    """Return an LSP range."""
    return types.Range(start=position(rng.start), end=position(rng.end))


def span_range(lines: LineIndex, span: Span) -> types.Range:
    """Return the LSP range of an absolute byte span."""
    return lsp_range(lines.range(span[0], span[1]))


def plain_position(pos: types.Position) -> Position:
    """Return the engine's position for an LSP position (negative values clamp to zero)."""
    return Position(max(0, pos.line), max(0, pos.character))


def offset(lines: LineIndex, pos: types.Position) -> int:
    """Return the byte offset of an LSP position (clamped to the text)."""
    return lines.offset(plain_position(pos))


def position_json(lines: LineIndex, offset: int) -> dict[str, int]:
    """Return the LSP position of an absolute byte offset as JSON values."""
    pos = lines.position(offset)
    return {"line": pos.line, "character": pos.character}


def span_range_json(lines: LineIndex, span: Span) -> dict[str, Any]:
    """Return the LSP range of an absolute byte span as JSON values (what `span_range` gives, unstructured)."""
    return {"start": position_json(lines, span[0]), "end": position_json(lines, span[1])}
