"""The match cache gives exactly what a fresh match gives, after edits anywhere, while reusing unchanged functions."""

from __future__ import annotations

from tests.conftest import EXAMPLES
from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.model import Position
from warpwise.analyzers.parse import CudaDocument, TextEdit
from warpwise.skills.engine import MatchCache, match_file


def _view(matches):  # type: ignore[no-untyped-def]
    return [
        (m.card_id, m.span, m.message, [r.span for r in m.related], [v.status for v in m.verdicts]) for m in matches
    ]


def test_cache_equals_fresh_matching_across_edits() -> None:
    text = "\n".join((EXAMPLES / name).read_text() for name in ("vector_ops.cu", "reduce.cu", "transpose.cu"))
    doc = CudaDocument("x.cu", text)
    cache = MatchCache()
    model = analyze_document(doc)
    assert _view(cache.match_file(model)) == _view(match_file(model))
    edits = [
        TextEdit(Position(0, 0), Position(0, 0), "// header comment\n\n"),
        TextEdit(Position(10, 0), Position(10, 0), "  \n"),
        TextEdit(Position(5, 0), Position(6, 0), ""),
    ]
    for edit in edits:
        doc.apply([edit])
        model = analyze_document(doc)
        assert _view(cache.match_file(model)) == _view(match_file(model))
    assert cache.hits > 0


def test_launch_change_invalidates_the_kernel() -> None:
    src = (EXAMPLES / "vector_ops.cu").read_text()
    doc = CudaDocument("v.cu", src)
    cache = MatchCache()
    first = {m.card_id for m in cache.match_file(analyze_document(doc)) if m.function == "saxpy"}
    assert "missing-restrict" in first
    line = next(i for i, ln in enumerate(src.splitlines()) if "saxpy<<<" in ln)
    col = src.splitlines()[line].index("x, y)")
    doc.apply([TextEdit(Position(line, col), Position(line, col + 1), "y")])
    after = {m.card_id for m in cache.match_file(analyze_document(doc)) if m.function == "saxpy"}
    assert "missing-restrict" not in after
