"""Precondition verdicts: every machine check has a case where it holds, one where it is violated, and one where
it is unknown (or a stated reason why it can never be unknown)."""

from __future__ import annotations

import pytest

from tests.skills.cardtest import verdicts
from warpwise.skills.library import builtin_library
from warpwise.skills.regions import CHECKS, VerdictStatus

H, V, U = VerdictStatus.HOLDS, VerdictStatus.VIOLATED, VerdictStatus.UNKNOWN

# Verdicts a check cannot give on the regions its card's matcher yields, and why.
EXEMPT: dict[str, dict[VerdictStatus, str]] = {
    "is_float_math_call": {
        VerdictStatus.VIOLATED: "the matcher only yields float math calls",
        VerdictStatus.UNKNOWN: "the call name is always known",
    },
    "barrier_condition_is_thread_dependent": {
        VerdictStatus.VIOLATED: "the matcher only yields barriers under thread-dependent conditions",
        VerdictStatus.UNKNOWN: "the matcher classified the condition already",
    },
    "target_sm_at_least": {VerdictStatus.UNKNOWN: "the target architecture is a setting with a default"},
    "loop_trip_count_at_most": {VerdictStatus.UNKNOWN: "the matcher only yields loops with a constant trip count"},
    "shared_last_dim_constant": {
        VerdictStatus.UNKNOWN: "a conflict is only computed when every dimension after the first is a known constant"
    },
    "shared_only_subscripted": {VerdictStatus.UNKNOWN: "shared accesses always resolve to their declaration"},
}

SAXPY = """
__global__ void saxpy(int n, float a, const float* x, float* y) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}}
{host}
"""

REREAD = """
__global__ void k(const float* in, float* out, const float* f, int rows, int cols) {{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  {loop} {{
    {body}
  }}
}}
{host}
"""

# (card, precondition, expected verdict, source)
CASES: list[tuple[str, str, VerdictStatus, str]] = [
    (
        "missing-restrict",
        "distinct-at-launch",
        H,
        SAXPY.format(host="void h(float* p, float* q) { saxpy<<<1, 32>>>(32, 1.0f, p, q); }"),
    ),
    (
        "missing-restrict",
        "distinct-at-launch",
        V,
        SAXPY.format(host="void h(float* p) { saxpy<<<1, 32>>>(32, 1.0f, p, p); }"),
    ),
    ("missing-restrict", "distinct-at-launch", U, SAXPY.format(host="")),
    (
        "constant-trip-loop-without-unroll",
        "small-trip-count",
        H,
        "__global__ void k(float* a) { for (int j = 0; j < 8; ++j) a[j] = 0; }",
    ),
    (
        "constant-trip-loop-without-unroll",
        "small-trip-count",
        V,
        "__global__ void k(float* a) { for (int j = 0; j < 64; ++j) a[j] = 0; }",
    ),
    ("double-literal-promotion", "float-operand", H, "__global__ void k(float* a) { float v = a[0]; a[1] = v * 0.5; }"),
    (
        "double-literal-promotion",
        "float-operand",
        V,
        "__global__ void k(double* a) { double v = a[0]; a[1] = v * 0.5; }",
    ),
    (
        "double-literal-promotion",
        "float-operand",
        U,
        "__device__ float g;\n__global__ void k(float* a) { a[1] = g * 0.5; }",
    ),
    (
        "shared-bank-conflict",
        "two-dimensional",
        H,
        "__global__ void k(float* o) { __shared__ float t[32][32]; t[threadIdx.y][threadIdx.x] = 1; o[0] = t[threadIdx.x][0]; }",
    ),
    (
        "shared-bank-conflict",
        "two-dimensional",
        V,
        "__global__ void k(float* o) { __shared__ float t[64]; t[threadIdx.x] = 1; o[0] = t[threadIdx.x * 2]; }",
    ),
    (
        "shared-bank-conflict",
        "only-subscripted",
        H,
        "__global__ void k(float* o) { __shared__ float t[32][32]; t[threadIdx.y][threadIdx.x] = 1; o[0] = t[threadIdx.x][0]; }",
    ),
    (
        "shared-bank-conflict",
        "only-subscripted",
        V,
        "__global__ void k(float* o) { __shared__ float t[32][32]; float* p = &t[0][0]; p[1] = 2; o[0] = t[threadIdx.x][0]; }",
    ),
    (
        "shared-bank-conflict",
        "fits",
        H,
        "__global__ void k(float* o) { __shared__ float t[32][32]; t[threadIdx.y][threadIdx.x] = 1; o[0] = t[threadIdx.x][0]; }",
    ),
    (
        "shared-bank-conflict",
        "fits",
        V,
        "__global__ void k(float* o) { __shared__ float t[96][128]; t[threadIdx.y][threadIdx.x] = 1; "
        "o[0] = t[threadIdx.x][0]; }",
    ),
    (
        "shared-bank-conflict",
        "fits",
        U,
        "__global__ void k(float* o, int n) { __shared__ float t[32][32]; extern __shared__ float d[]; __shared__ Foo z[4];"
        " t[threadIdx.y][threadIdx.x] = 1; o[0] = t[threadIdx.x][0]; }",
    ),
    (
        "global-reread-in-loop",
        "value-stable",
        H,
        REREAD.format(
            loop="for (int c = 0; c < cols; ++c)",
            body="out[r * cols + c] = in[r * cols + c] * f[r];",
            host="void h(float* a, float* b, float* c) { k<<<1, 32>>>(a, b, c, 1, 1); }",
        ),
    ),
    (
        "global-reread-in-loop",
        "value-stable",
        V,
        "__global__ void k(float* w, float* o, int n) { int i = threadIdx.x; "
        "for (int j = 0; j < n; ++j) { o[i * n + j] = w[i]; w[i + 1] = 0; __syncthreads(); } }",
    ),
    (
        "global-reread-in-loop",
        "value-stable",
        U,
        REREAD.format(
            loop="for (int c = 0; c < cols; ++c)", body="out[r * cols + c] = in[r * cols + c] * f[r];", host=""
        ),
    ),
    (
        "global-reread-in-loop",
        "no-new-read",
        H,
        REREAD.format(loop="for (int c = 0; c < 8; ++c)", body="out[r * 8 + c] = in[r * 8 + c] * f[r];", host=""),
    ),
    (
        "global-reread-in-loop",
        "no-new-read",
        V,
        REREAD.format(loop="for (int c = 0; c < cols; ++c)", body="if (c > 2) out[r * cols + c] = f[r];", host=""),
    ),
    (
        "global-reread-in-loop",
        "no-new-read",
        U,
        REREAD.format(
            loop="for (int c = 0; c < cols; ++c)", body="out[r * cols + c] = in[r * cols + c] * f[r];", host=""
        ),
    ),
    (
        "precise-math-call",
        "single-precision",
        H,
        "__global__ void k(float* a) { a[threadIdx.x] = expf(a[threadIdx.x]); }",
    ),
    (
        "divergent-syncthreads",
        "thread-dependent",
        H,
        "__global__ void k(float* a) { if (threadIdx.x < 4) __syncthreads(); a[0] = 1; }",
    ),
]


@pytest.mark.parametrize(
    ("card", "pre", "status", "source"), CASES, ids=lambda v: str(v)[:40] if isinstance(v, str) else None
)
def test_verdict(card: str, pre: str, status: VerdictStatus, source: str) -> None:
    got = verdicts(card, source, pre)
    assert got, f"{card}'s matcher found no region"
    assert status in got, f"{card}/{pre}: expected {status.value}, got {[g.value for g in got]}"


def test_every_check_is_covered_three_ways() -> None:
    lib = builtin_library()
    used: dict[str, str] = {}
    for card in lib:
        for _, pre in card.header.preconditions.items():
            ref = pre.check_ref
            if ref is not None:
                used.setdefault(ref.name, f"{card.skill_id}/{pre.id}")
    covered: dict[str, set[VerdictStatus]] = {}
    for card_id, pre_id, status, _ in CASES:
        card = lib.get(card_id)
        assert card is not None, card_id
        pre = next(p for _, p in card.header.preconditions.items() if p.id == pre_id)
        assert pre.check_ref is not None, f"{card_id}/{pre_id} has no machine check"
        covered.setdefault(pre.check_ref.name, set()).add(status)
    for name, where in sorted(used.items()):
        assert name in CHECKS, name
        missing = {H, V, U} - covered.get(name, set()) - set(EXEMPT.get(name, {}))
        assert not missing, f"check {name} (used by {where}) lacks cases for {sorted(m.value for m in missing)}"
