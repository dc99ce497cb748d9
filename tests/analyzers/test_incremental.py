"""Incremental analysis: edits re-parse incrementally, unchanged functions are reused, results match a fresh run."""

from __future__ import annotations

from tests.conftest import CUDA_VALID
from warpwise.analyzers.build import analyze_document, analyze_text
from warpwise.analyzers.model import Position
from warpwise.analyzers.parse import CudaDocument, TextEdit


def _summary(model):  # type: ignore[no-untyped-def]
    return [
        (
            f.name,
            f.kind,
            f.base,
            [(a.base, a.index, a.pattern, f.span(a.span)) for a in f.accesses],
            [model.range(f, lp.span) for lp in f.loops],
        )
        for f in model.functions
    ]


def test_edit_matches_fresh_analysis() -> None:
    text = (CUDA_VALID / "accesses.cu").read_text()
    doc = CudaDocument("a.cu", text)
    analyze_document(doc)
    line = next(i for i, ln in enumerate(text.splitlines()) if "x += a[tid * 4];" in ln)
    col = text.splitlines()[line].index("4]")
    doc.apply([TextEdit(Position(line, col), Position(line, col + 1), "8")])
    after = analyze_document(doc)
    fresh = analyze_text(doc.data)
    assert _summary(after) == _summary(fresh)
    k = after.function("patterns")
    assert any(a.index == "tid * 8" for a in k.accesses)


def test_unchanged_functions_are_reused_and_moved() -> None:
    text = "__global__ void a(float* p) { p[threadIdx.x] = 0; }\n__global__ void b(float* q) { q[threadIdx.x] = 1; }\n"
    doc = CudaDocument("a.cu", text)
    first = analyze_document(doc)
    doc.apply([TextEdit(Position(0, 0), Position(0, 0), "// a comment\n\n")])
    second = analyze_document(doc)
    fresh = analyze_text(doc.data)
    assert _summary(second) == _summary(fresh)
    b_first, b_second = first.function("b"), second.function("b")
    assert b_second.base == b_first.base + len("// a comment\n\n")
    assert b_second.accesses is b_first.accesses  # reused, not re-analysed


def test_multi_line_and_unicode_edits() -> None:
    doc = CudaDocument("a.cu", "__global__ void k(float* p) {\n  p[threadIdx.x] = 0;\n}\n")
    doc.apply(
        [
            TextEdit(Position(1, 2), Position(1, 2), "// é😀\n  float v = p[0];\n  "),
            TextEdit(Position(5, 0), Position(5, 0), "__global__ void z(int* q) { q[threadIdx.x * 3] = 1; }\n"),
        ]
    )
    model = analyze_document(doc)
    assert _summary(model) == _summary(analyze_text(doc.data))
    assert [f.name for f in model.kernels] == ["k", "z"]
    assert doc.tree.root_node.has_error is False
