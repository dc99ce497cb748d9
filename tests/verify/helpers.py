"""Sources and candidates shared by the CPU tests of the verification gate."""

from __future__ import annotations

from warpwise.verify.gate import Candidate

AXPY = """// warpwise: n=1<<20 a=2.0 x:in[n] y:in[n] out:out[n] grid=(n+255)/256 block=256
__global__ void axpy(int n, float a, const float* x, const float* y, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
"""


def variant(k: int) -> str:
    """Return a distinct, correct candidate for AXPY."""
    return AXPY.replace("a * x[i] + y[i]", f"a * x[i] + y[i] + {k}.0f * 0.0f")


def slow_source(iterations: int = 6000) -> str:
    """Return an AXPY candidate whose build takes seconds (a long unrolled loop)."""
    return (
        "__global__ void axpy(int n, float a, const float* x, const float* y, float* out) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = x[i];\n#pragma unroll\n"
        f"  for (int k = 0; k < {iterations}; ++k) v = sinf(v) * cosf(v + k);\n"
        "  if (i < n) out[i] = a * x[i] + y[i] + 0.0f * v;\n}\n"
    )


def candidate(text: str, original: str = AXPY) -> Candidate:
    """Return a request to verify `text` against `original`."""
    return Candidate("axpy.cu", original, "axpy", text, "axpy_candidate.cu")
