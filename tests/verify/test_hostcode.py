"""Spec inference on host code as real files write it: commented #defines, macros, vectors, block-size loops."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from warpwise.analyzers.build import analyze_text
from warpwise.verify import hostcode
from warpwise.verify.backends import make_backend
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.spec import ProblemSpec, SpecMissing, resolve_spec
from warpwise.verify.types import Options, Role, Status

HOST = FIXTURES / "realworld" / "hostcode"


def _spec(path: Path, kernel: str = "scale") -> ProblemSpec | SpecMissing:
    return resolve_spec(str(path), path.read_text(), kernel)


def test_define_with_a_trailing_comment_is_a_constant() -> None:
    model = analyze_text(b"#define N (1 << 20)  // elements\n#define T 256 /* per block */\n")
    assert model.constants == {"N": 1 << 20, "T": 256}


def test_sizes_through_a_variable_and_a_commented_define() -> None:
    spec = _spec(HOST / "define_comment.cu")
    assert isinstance(spec, ProblemSpec), spec
    assert [(b.name, b.count, b.role) for b in spec.run.buffers] == [("x", 1 << 20, Role.IN), ("y", 1 << 20, Role.OUT)]
    assert spec.run.original_geometry.grid == ((1 << 20) // 256, 1, 1)


def test_launch_through_a_macro_with_vector_sizes() -> None:
    spec = _spec(HOST / "launch_macro.cu")
    assert isinstance(spec, ProblemSpec), spec
    assert "through the macro `LAUNCH`" in spec.origin
    assert [b.count for b in spec.run.buffers] == [4096, 4096]
    assert spec.run.original_geometry.grid == (16, 1, 1) and spec.run.original_geometry.block == (256, 1, 1)


def test_launch_in_a_loop_over_block_sizes_takes_the_first_and_says_so() -> None:
    spec = _spec(HOST / "block_size_loop.cu")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.run.original_geometry.block == (64, 1, 1)
    assert any("loop over `bs`" in n and "first value 64" in n for n in spec.notes)


def test_macro_expansion_keeps_line_numbers() -> None:
    text = (HOST / "launch_macro.cu").read_bytes()
    expanded, macros = hostcode.expand_launch_macros(text)
    assert macros == ("LAUNCH",)
    assert expanded.count(b"\n") == text.count(b"\n")
    assert b"scale<<<N / 256, 256>>>(dx, dy, N)" in expanded


@pytest.mark.parametrize("body", ["for (int b = 32; b <= 1024; b *= 2)", "for (int b : {32, 64})"])
def test_both_loop_forms_give_their_first_value(body: str) -> None:
    src = f"void f() {{ {body} {{ k<<<1, b>>>(); }} }}".encode()
    offset = src.index(b"k<<<")
    assert hostcode.loop_first_values(src, offset, {})["b"][0] == 32


def test_compile_only_verify_without_a_spec_is_spec_missing_with_the_annotation(tmp_path: Path) -> None:
    src = tmp_path / "lonely.cu"
    src.write_text("__global__ void lonely(const float* x, float* y, int n) {\n  y[0] = x[0] + n;\n}\n")
    backend = make_backend("compile-only")
    try:
        result = Gate(backend).verify(Candidate.from_files(str(src), "lonely", str(src)), Options(compile_only=True))
    finally:
        backend.close()
    assert result.status is Status.SPEC_MISSING, result.message
    assert result.message.startswith("compile-only: both kernels build")
    assert "launch site" in result.missing
    assert result.annotation.startswith("// warpwise:") and "x:in[?]" in result.annotation
