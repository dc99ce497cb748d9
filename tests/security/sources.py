"""Generated CUDA sources for the bounded-work tests and benchmarks: a long file of many distinct kernels."""

from __future__ import annotations

SMALL = (
    "__global__ void small_scale(float* y, const float* x, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = 0.5 * x[i];\n"
    "}\n"
)
"""A newly opened small document: one kernel with a finding (a double literal in float arithmetic)."""

_SHAPES = (
    # An element-wise kernel without a stride loop.
    "__global__ void ew_{k}(const float* x, float* y, int n) {{\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i] * {k}.0f + 1.0;\n"
    "}}\n",
    # A stencil with a constant-trip loop and global re-reads.
    "__global__ void stencil_{k}(const float* in, float* out, int n) {{\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= 4 && i + 4 < n) {{\n"
    "    float acc = 0.0f;\n"
    "    for (int t = -4; t <= 4; ++t) {{\n"
    "      acc += in[i + t] * {k}.5f;\n"
    "    }}\n"
    "    out[i] = acc;\n"
    "  }}\n"
    "}}\n",
    # A block reduction through shared memory.
    "__global__ void reduce_{k}(const float* in, float* out, int n) {{\n"
    "  __shared__ float s[256];\n"
    "  int t = threadIdx.x;\n"
    "  int i = blockIdx.x * 256 + t;\n"
    "  s[t] = i < n ? in[i] : 0.0f;\n"
    "  __syncthreads();\n"
    "  for (int w = 128; w > 0; w >>= 1) {{\n"
    "    if (t < w) s[t] += s[t + w];\n"
    "    __syncthreads();\n"
    "  }}\n"
    "  if (t == 0) atomicAdd(out, s[0] * {k}.0f);\n"
    "}}\n",
    # A strided (column-major) copy.
    "__global__ void column_{k}(const float* in, float* out, int rows, int cols) {{\n"
    "  int c = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  for (int r = 0; r < rows; ++r) {{\n"
    "    out[c * rows + r] = in[c * rows + r] + {k};\n"
    "  }}\n"
    "}}\n",
    # A naive matrix product.
    "__global__ void matmul_{k}(const float* a, const float* b, float* c, int n) {{\n"
    "  int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row < n && col < n) {{\n"
    "    float acc = 0.0f;\n"
    "    for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];\n"
    "    c[row * n + col] = acc + {k};\n"
    "  }}\n"
    "}}\n",
)


def many_kernels(count: int, salt: int = 0) -> str:
    """Return a file of `count` distinct kernels of five shapes (`salt` makes every name and constant new)."""
    parts = [f"// {count} generated kernels (salt {salt}).\n"]
    for k in range(count):
        parts.append(_SHAPES[k % len(_SHAPES)].format(k=k + count * salt))
        parts.append("\n")
    return "".join(parts)


def big_sum(terms: int) -> str:
    """Return a kernel holding one sum of `terms` terms (over the analysis budget past about 1,600 terms)."""
    body = " + ".join(f"x[i + {k}]" for k in range(terms))
    return (
        "__global__ void big(const float* x, float* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  if (i < n) y[i] = {body};\n}}\n"
    )
