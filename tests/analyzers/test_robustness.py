"""Analysis never raises: broken, half-typed, binary and random input yields a partial model and syntax problems."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CUDA_INVALID, CUDA_VALID
from warpwise.analyzers.build import analyze_document, analyze_text
from warpwise.analyzers.findings import check_model
from warpwise.analyzers.model import Position
from warpwise.analyzers.parse import CudaDocument, TextEdit

SEED_TEXTS = [p.read_text(errors="replace") for p in sorted(CUDA_VALID.glob("*.cu"))]


def _assert_sane(text: str | bytes) -> None:
    model = analyze_text(text)
    size = len(model.text)
    for fn in model.functions:
        lo, hi = fn.extent
        assert 0 <= lo <= hi <= size
        for acc in fn.accesses:
            a, b = fn.span(acc.span)
            assert lo <= a <= b <= hi
            rng = model.range(fn, acc.span)
            assert 0 <= rng.start.line <= rng.end.line < model.lines.line_count
    for finding in check_model(model):
        assert 0 <= finding.span[0] <= finding.span[1] <= size
    for prob in model.syntax_problems:
        assert 0 <= prob.span[0] <= prob.span[1] <= size


def test_half_typed_code_gives_partial_model_and_problems() -> None:
    model = analyze_text((CUDA_INVALID / "half_typed.cu").read_bytes())
    assert model.syntax_problems
    assert model.function("after") is not None
    assert model.function("after").accesses[0].base == "z"


def test_unterminated_and_binary_junk() -> None:
    for name in ("unterminated.cu", "binary_junk.cu"):
        _assert_sane((CUDA_INVALID / name).read_bytes())


def test_very_large_file() -> None:
    text = SEED_TEXTS[0] * 400
    model = analyze_text(text)
    assert len(model.kernels) >= 400


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SEED_TEXTS),
    st.lists(
        st.tuples(
            st.integers(0, 10_000),
            st.integers(0, 40),
            st.text(alphabet=string.printable + "é😀{}[]<>;", max_size=12),
        ),
        max_size=6,
    ),
)
def test_mutated_sources_never_raise(seed: str, cuts: list[tuple[int, int, str]]) -> None:
    text = seed
    for pos, length, insert in cuts:
        pos = pos % (len(text) + 1)
        text = text[:pos] + insert + text[pos + length :]
    _assert_sane(text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_never_raise(data: bytes) -> None:
    _assert_sane(data)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(SEED_TEXTS),
    st.lists(
        st.tuples(st.integers(0, 200), st.integers(0, 120), st.integers(0, 3), st.text(max_size=8)),
        max_size=8,
    ),
)
def test_incremental_edits_match_fresh_analysis(seed: str, edits: list[tuple[int, int, int, str]]) -> None:
    doc = CudaDocument("a.cu", seed)
    analyze_document(doc)
    for line, col, span, text in edits:
        start = Position(line % max(doc.lines.line_count, 1), col)
        end = Position(start.line, col + span)
        doc.apply([TextEdit(start, end, text)])
        model = analyze_document(doc)
    fresh = analyze_text(doc.data)
    got = [(f.name, f.base, [(a.index, a.pattern) for a in f.accesses]) for f in model.functions] if edits else None
    want = [(f.name, f.base, [(a.index, a.pattern) for a in f.accesses]) for f in fresh.functions] if edits else None
    assert got == want
