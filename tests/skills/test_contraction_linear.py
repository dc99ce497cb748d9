"""The untiled-contraction card on 1-D thread mappings: `i = idx / N; j = idx % N` (issue 20's recognition gap).

The OOD suite's `gemm_tn` launches one thread per output on a 1-D grid and splits the linear index into a row and
a column. The recogniser reads that mapping from the kernel model (a quotient and a remainder of one thread
coordinate by the same uniform divisor), bounds the row by the guard's `idx < M * N` divided by N and the column
by N, and the rewrite gives the epilogue back the user's `idx` as `i * N + j`. Near misses: different divisors, a
guard that is not a multiple of the divisor, and an index that may be negative.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import builtin_library
from warpwise.skills.rewrites import contraction_mma as cm

_card = builtin_library().get("untiled-contraction")
assert _card is not None and _card.rules is not None
uc = _card.rules
ROOT = Path(__file__).resolve().parents[2]
GEMM_TN = ROOT / "bench/suite_ood/sgemm/tn_one_d_typedef.cu"

ONE_D = """typedef unsigned int uint;
__global__ void mm1d(const float *A, const float *B, float *C, uint M, uint N, uint K) {
  uint t = threadIdx.x + blockDim.x * blockIdx.x;
  uint r = t / N, c = t % N;
  if (t >= N * M) return;
  float s = 0.0f;
  for (uint k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
  C[t] = 0.5f * s;
}
"""


def _recognise(text: bytes, name: str | None = None):
    model = analyze_text(text, "k.cu")
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL and (name is None or f.name == name))
    return model, fn, *uc.recognise(model, fn)


def test_gemm_tn_is_a_tn_contraction_over_rows_and_columns_of_idx() -> None:
    model, fn, c, why = _recognise(GEMM_TN.read_bytes(), "gemm_tn")
    assert c is not None, why
    assert (c.layout, c.i, c.j) == ("TN", "i", "j")
    assert (uc.poly_text(c.m_bound), uc.poly_text(c.n_bound), uc.poly_text(c.k_bound)) == ("M", "N", "K")
    assert c.linear == ("int", "idx", "i * (N) + j")
    out = uc.rewrite_source(model, fn.name)
    assert out is not None
    text = out.decode()
    assert "int idx = (int)(i * (N) + j);" in text and "C[idx] = sum;" in text and "(idx < M * N)" in text
    assert analyze_text(out).syntax_problems == ()


def test_restyled_one_d_mapping_with_early_return_and_comma_declaration() -> None:
    _, _, c, why = _recognise(ONE_D.encode())
    assert c is not None, why
    assert (c.layout, c.i, c.j) == ("NN", "r", "c")
    assert c.linear == ("uint", "t", "r * (N) + c") and uc.poly_text(c.n_bound) == "N"
    assert uc.poly_text(c.m_bound) == "M"  # N * M divided by N


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("r = t / N, c = t % N", "r = t / N, c = t % M"), "statements around"),  # different divisors
        (("t >= N * M", "t >= M * K"), "is not a bound of `r` and `c`"),  # not a whole number of rows of N
        (
            ("threadIdx.x + blockDim.x * blockIdx.x", "threadIdx.x + blockDim.x * blockIdx.x - 1"),
            "statements around",
        ),  # may be negative
    ],
)
def test_one_d_near_misses_are_refused(change: tuple[str, str], why: str) -> None:
    _, _, c, reason = _recognise(ONE_D.replace(*change).encode())
    assert c is None and why in reason, reason


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
def test_one_d_rewrites_compile() -> None:
    sources = []
    model, fn, _c, _ = _recognise(GEMM_TN.read_bytes(), "gemm_tn")
    for t in (uc.Tiles(), next(t for t in cm.TF32_CHOICES if not t.wgmma)):
        out = uc.rewrite_source(model, fn.name, t)
        assert out is not None
        sources.append(out)
    for ok, log in compile_many(sources):
        assert ok, log
