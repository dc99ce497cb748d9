"""The match cache gives exactly what a fresh match gives, after edits anywhere, while reusing unchanged functions."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES, ROOT
from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.model import Position
from warpwise.analyzers.parse import CudaDocument, TextEdit
from warpwise.skills.engine import MatchCache, match_file
from warpwise.verify import resources
from warpwise.verify.resources import KernelResources


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


def test_a_function_waiting_for_a_build_is_reused_until_a_build_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a compile-only build is pending, a version that changes nothing the function's matches depend on
    reuses them (the build of the new text is asked for, as matching again would ask, and is pending too); once the
    build of the current text has answered, the function is matched again and gets the confirmed claim. At every
    step the cache gives what a fresh matching gives."""
    monkeypatch.delenv(resources.ENV_DISABLE, raising=False)
    monkeypatch.setattr(resources, "_memo", type(resources._memo)())
    monkeypatch.setattr(resources, "_pending", set())
    monkeypatch.setattr(resources, "_background", True)
    monkeypatch.setattr(resources, "_held", [])  # Held back: no build runs during the test.
    src = (ROOT / "skills" / "dynamic-local-array-index" / "fixtures" / "pos_heavy_accumulators.cu").read_text()
    doc = CudaDocument("acc.cu", src)
    cache = MatchCache()
    model = analyze_document(doc)
    first = cache.match_file(model)
    assert (resources.text_hash(model), "accumulate", "sm_90") in resources._pending
    misses = cache.misses
    end = Position(len(src.splitlines()), 0)
    doc.apply([TextEdit(end, end, "\n// edited below the kernel\n")])
    model = analyze_document(doc)
    second = cache.match_file(model)
    assert cache.misses == misses, "the function waiting for its build was matched again"
    assert _view(second) == _view(first) == _view(match_file(model))
    key = (resources.text_hash(model), "accumulate", "sm_90")
    assert key in resources._pending, "the new text's build was not asked for"
    resources._remember(key, KernelResources("accumulate", "sm_90", "NVRTC (test)", 40, 96, 0, 0, "c0de"))
    third = cache.match_file(model)
    assert cache.misses == misses + 1
    assert _view(third) == _view(match_file(model))
    assert _view(third) != _view(second)
