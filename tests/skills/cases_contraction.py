"""Precondition verdict cases of the untiled-contraction card (skills/untiled-contraction/)."""

from __future__ import annotations

from warpwise.skills.regions import VerdictStatus

H, V, U = VerdictStatus.HOLDS, VerdictStatus.VIOLATED, VerdictStatus.UNKNOWN

KERNEL = """__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K{default}) {{
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {{
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
  }}
}}
{host}"""

EXEMPT: dict[str, dict[VerdictStatus, str]] = {
    "contraction_launches_rewritable": {
        VerdictStatus.VIOLATED: "a launch the rewrite cannot read (default arguments, a macro around the launch) is "
        "left undecided rather than ruled out: the card then offers no fix, which is safe"
    },
}

CASES: list[tuple[str, str, VerdictStatus, str]] = [
    ("untiled-contraction", "launches-rewritable", H, KERNEL.format(default="", host="")),
    (
        "untiled-contraction",
        "launches-rewritable",
        H,
        KERNEL.format(
            default="",
            host="void run(const float *A, const float *B, float *C, int n) {\n"
            "  mm<<<dim3((n + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(A, B, C, n, n, n);\n}\n",
        ),
    ),
    (
        "untiled-contraction",
        "launches-rewritable",
        U,
        KERNEL.format(
            default=" = 64",
            host="void run(const float *A, const float *B, float *C, int n) {\n"
            "  mm<<<dim3((n + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(A, B, C, n, n);\n}\n",
        ),
    ),
]
