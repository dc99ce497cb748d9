"""Verdict cases of the core cards' checks (see test_checks.py for the format)."""

from __future__ import annotations

from warpwise.skills.regions import VerdictStatus

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
