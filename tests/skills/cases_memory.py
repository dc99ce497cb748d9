"""Verdict cases of the memory and parallelism cards' checks (see test_checks.py for the format)."""

from __future__ import annotations

from warpwise.skills.regions import VerdictStatus

H, V, U = VerdictStatus.HOLDS, VerdictStatus.VIOLATED, VerdictStatus.UNKNOWN

# Verdicts a check cannot give on the regions its card's matcher yields, and why.
EXEMPT: dict[str, dict[VerdictStatus, str]] = {
    "target_sm_at_least": {
        VerdictStatus.VIOLATED: "verdict cases run at the default target, sm_90; the target is a setting, not something a "
        "source can show"
    },
    "index_used_only_in_guard": {
        VerdictStatus.UNKNOWN: "every use of the index is an identifier in the kernel's own text, so it is always decided"
    },
    "launches_shrink": {
        VerdictStatus.VIOLATED: "a launch the rewrite cannot shrink stays correct (its extra threads find no element), "
        "so it only leaves the benefit undecided"
    },
    "exact_rewrite_applies": {
        VerdictStatus.VIOLATED: "code outside the exact shape still shows the finding, without a fix, so the shape "
        "is never a reason to suppress it"
    },
    "square_launch_block": {
        VerdictStatus.VIOLATED: "a non-square block leaves the finding valid and only rules out the exact rewrite"
    },
}

SAXPY = """
__global__ void saxpy(int n, float a, const float* x, float* y) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    {body}
  }}
}}
{host}
"""

ALLOC_HOST = """
void run(int n) {{
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  saxpy<<<{grid}, 256>>>(n, 2.0f, {xarg}, y);
}}
"""

THREE = """
__global__ void k3(const float* x, float* y, float* z, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    y[i] = 1.0f;
    z[i] = x[i];
  }}
}}
{host}
"""

MAPPING = """
__global__ void k2(const float* A, float* C, int M, int N) {{
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  {body}
}}
{host}
"""

TRANSPOSE = """
__global__ void tr(float* out, const float* in, int rows, int cols) {{
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  {body}
}}
{host}
"""

MATMUL = """
__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {{
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {{
    float acc = {init};
    for (int k = 0; k < K; ++k) {{
      acc += A[row * K + k] * B[k * N + col];
    }}
    C[row * N + col] = acc;
  }}
}}
{host}
"""

COPY = """
__global__ void stage({params}) {{
  __shared__ {stype} s[256];
  {pre}
  s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x];
}}
{host}
"""

ELEMENT = """
__global__ void el(float* y, const float* x, int n) {{
  {decl} i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    {body}
  }}
}}
{host}
"""

# (card, precondition, expected verdict, source)
CASES: list[tuple[str, str, VerdictStatus, str]] = [
    # scalar-global-access
    ("scalar-global-access", "vector-type", H, SAXPY.format(body="y[i] = a * x[i] + y[i];", host="")),
    (
        "scalar-global-access",
        "vector-type",
        V,
        "__global__ void k(const float* x, double* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; "
        "if (i < n) y[i] = x[i]; }",
    ),
    (
        "scalar-global-access",
        "vector-type",
        U,
        "template <typename T> __global__ void k(const T* x, T* y, int n) { int i = blockIdx.x * blockDim.x + "
        "threadIdx.x; if (i < n) y[i] = x[i]; }\nvoid h(float* a, float* b) { k<float><<<1, 256>>>(a, b, 256); }",
    ),
    ("scalar-global-access", "same-index", H, SAXPY.format(body="y[i] = a * x[i] + y[i];", host="")),
    ("scalar-global-access", "same-index", V, SAXPY.format(body="y[i] = a * x[i] + (float)i;", host="")),
    (
        "scalar-global-access",
        "same-index",
        U,
        SAXPY.format(body="y[i] = x[i] + (x != nullptr ? 1.0f : 0.0f);", host=""),
    ),
    ("scalar-global-access", "index-scope", H, SAXPY.format(body="y[i] = a * x[i];", host="")),
    (
        "scalar-global-access",
        "index-scope",
        V,
        "__global__ void k(const float* x, float* y, int* last, int n) { int i = blockIdx.x * blockDim.x + "
        "threadIdx.x; if (i < n) y[i] = x[i]; if (i == 0) *last = n; }",
    ),
    (
        "scalar-global-access",
        "aligned",
        H,
        SAXPY.format(body="y[i] = a * x[i];", host=ALLOC_HOST.format(grid="(n + 255) / 256", xarg="x")),
    ),
    (
        "scalar-global-access",
        "aligned",
        V,
        SAXPY.format(body="y[i] = a * x[i];", host=ALLOC_HOST.format(grid="(n + 255) / 256", xarg="x + 2")),
    ),
    ("scalar-global-access", "aligned", U, SAXPY.format(body="y[i] = a * x[i];", host="")),
    ("scalar-global-access", "no-alias", H, SAXPY.format(body="y[i] = a * x[i] + y[i];", host="")),
    (
        "scalar-global-access",
        "no-alias",
        V,
        THREE.format(host="void h(float* p, float* q, int n) { k3<<<(n + 255) / 256, 256>>>(p, p, q, n); }"),
    ),
    ("scalar-global-access", "no-alias", U, THREE.format(host="")),
    ("scalar-global-access", "per-element", H, SAXPY.format(body="y[i] = a * x[i];", host="")),
    ("scalar-global-access", "per-element", V, SAXPY.format(body="if (x[i] > 0.0f) y[i] = x[i];", host="")),
    (
        "scalar-global-access",
        "per-element",
        U,
        "__device__ float f(float v);\n" + SAXPY.format(body="y[i] = f(x[i]);", host=""),
    ),
    (
        "scalar-global-access",
        "grid-shrinks",
        H,
        SAXPY.format(body="y[i] = a * x[i];", host=ALLOC_HOST.format(grid="(n + 255) / 256", xarg="x")),
    ),
    (
        "scalar-global-access",
        "grid-shrinks",
        U,
        SAXPY.format(body="y[i] = a * x[i];", host=ALLOC_HOST.format(grid="blocks(n)", xarg="x")),
    ),
    # fixed-size-grid-without-stride-loop
    (
        "fixed-size-grid-without-stride-loop",
        "index-range",
        H,
        ELEMENT.format(decl="size_t", body="y[i] = x[i];", host=""),
    ),
    (
        "fixed-size-grid-without-stride-loop",
        "index-range",
        V,
        ELEMENT.format(
            decl="int",
            body="y[i] = x[i];",
            host="void h(float* y, float* x) { el<<<8388607, 256>>>(y, x, 2147483000); }",
        ),
    ),
    ("fixed-size-grid-without-stride-loop", "index-range", U, ELEMENT.format(decl="int", body="y[i] = x[i];", host="")),
    ("fixed-size-grid-without-stride-loop", "per-element", H, ELEMENT.format(decl="int", body="y[i] = x[i];", host="")),
    (
        "fixed-size-grid-without-stride-loop",
        "per-element",
        V,
        ELEMENT.format(decl="int", body="y[i] = x[i];\n    __syncthreads();", host=""),
    ),
    (
        "fixed-size-grid-without-stride-loop",
        "per-element",
        U,
        "__device__ float g(float v);\n" + ELEMENT.format(decl="int", body="y[i] = g(x[i]);", host=""),
    ),
    ("fixed-size-grid-without-stride-loop", "index-scope", H, ELEMENT.format(decl="int", body="y[i] = x[i];", host="")),
    (
        "fixed-size-grid-without-stride-loop",
        "index-scope",
        V,
        "__global__ void el(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; int j = i / 2; "
        "if (i < n) y[i] = j; }",
    ),
    (
        "fixed-size-grid-without-stride-loop",
        "covers-n",
        H,
        ELEMENT.format(
            decl="int",
            body="y[i] = x[i];",
            host="void h(float* y, float* x, int n) { el<<<(n + 127) / 128, 128>>>(y, x, n); }",
        ),
    ),
    (
        "fixed-size-grid-without-stride-loop",
        "covers-n",
        V,
        ELEMENT.format(
            decl="int", body="y[i] = x[i];", host="void h(float* y, float* x) { el<<<4, 128>>>(y, x, 4096); }"
        ),
    ),
    (
        "fixed-size-grid-without-stride-loop",
        "covers-n",
        U,
        ELEMENT.format(
            decl="int", body="y[i] = x[i];", host="void h(float* y, float* x, int n) { el<<<n / 128, 128>>>(y, x, n); }"
        ),
    ),
    # one-element-per-thread
    (
        "one-element-per-thread",
        "index-range",
        H,
        ELEMENT.format(
            decl="int", body="y[i] = x[i];", host="void h(float* y, float* x) { el<<<40, 256>>>(y, x, 10000); }"
        ),
    ),
    (
        "one-element-per-thread",
        "index-range",
        V,
        ELEMENT.format(
            decl="int",
            body="y[i] = x[i];",
            host="void h(float* y, float* x) { el<<<8388607, 256>>>(y, x, 2147483000); }",
        ),
    ),
    ("one-element-per-thread", "index-range", U, ELEMENT.format(decl="int", body="y[i] = x[i];", host="")),
    (
        "one-element-per-thread",
        "grid-shrinks",
        H,
        ELEMENT.format(
            decl="int",
            body="y[i] = x[i];",
            host="void h(float* y, float* x, int n) { el<<<(n + 255) / 256, 256>>>(y, x, n); }",
        ),
    ),
    ("one-element-per-thread", "grid-shrinks", U, ELEMENT.format(decl="int", body="y[i] = x[i];", host="")),
    ("one-element-per-thread", "light-body", H, ELEMENT.format(decl="int", body="y[i] = x[i];", host="")),
    (
        "one-element-per-thread",
        "light-body",
        H,
        ELEMENT.format(
            decl="int", body="float s = 0.0f; for (int k = 0; k < 4; ++k) s += x[i] * k; y[i] = s;", host=""
        ),
    ),
    (
        "one-element-per-thread",
        "light-body",
        V,
        ELEMENT.format(decl="int", body="float s = 0.0f; for (int j = 0; j < n; ++j) s += x[j]; y[i] = s;", host=""),
    ),
    (
        "one-element-per-thread",
        "light-body",
        V,
        ELEMENT.format(
            decl="int",
            body="float s = 0.0f; for (int a = 0; a < 8; ++a) for (int b = 0; b < 8; ++b) s += x[i] * a * b; y[i] = s;",
            host="",
        ),
    ),
    (
        "one-element-per-thread",
        "light-body",
        U,
        ELEMENT.format(decl="int", body="y[i] = external_work(x[i]);", host="__device__ float external_work(float);"),
    ),
    # uncoalesced-thread-mapping
    (
        "uncoalesced-thread-mapping",
        "all-coalesced",
        H,
        MAPPING.format(body="if (row < M && col < N) C[row * N + col] = A[row * N + col];", host=""),
    ),
    (
        "uncoalesced-thread-mapping",
        "all-coalesced",
        V,
        MAPPING.format(body="if (row < M && col < N) C[row * N + col] = A[col * M + row];", host=""),
    ),
    (
        "uncoalesced-thread-mapping",
        "all-coalesced",
        U,
        MAPPING.format(body="if (row < M && col < N) C[row * N + col] = A[(row * col) % N];", host=""),
    ),
    ("uncoalesced-thread-mapping", "no-warp-code", H, MAPPING.format(body="C[row * N + col] = 1.0f;", host="")),
    (
        "uncoalesced-thread-mapping",
        "no-warp-code",
        V,
        MAPPING.format(body="C[row * N + col] = __shfl_xor_sync(0xffffffff, A[row * N + col], 1);", host=""),
    ),
    (
        "uncoalesced-thread-mapping",
        "no-warp-code",
        U,
        "__device__ float helper(float v);\n" + MAPPING.format(body="C[row * N + col] = helper(1.0f);", host=""),
    ),
    (
        "uncoalesced-thread-mapping",
        "grid-y-limit",
        H,
        MAPPING.format(
            body="C[row * N + col] = 1.0f;",
            host="void h(const float* a, float* c) { k2<<<dim3(64, 64), dim3(16, 16)>>>(a, c, 1024, 1024); }",
        ),
    ),
    (
        "uncoalesced-thread-mapping",
        "grid-y-limit",
        V,
        MAPPING.format(
            body="C[row * N + col] = 1.0f;",
            host="void h(const float* a, float* c) { k2<<<dim3(100000, 1), dim3(16, 16)>>>(a, c, 1600000, 16); }",
        ),
    ),
    ("uncoalesced-thread-mapping", "grid-y-limit", U, MAPPING.format(body="C[row * N + col] = 1.0f;", host="")),
    (
        "uncoalesced-thread-mapping",
        "exact-shape",
        H,
        MAPPING.format(
            body="C[row * N + col] = 1.0f;",
            host="void h(const float* a, float* c) { k2<<<dim3(64, 64), dim3(16, 16)>>>(a, c, 1024, 1024); }",
        ),
    ),
    ("uncoalesced-thread-mapping", "exact-shape", U, MAPPING.format(body="C[row * N + col] = 1.0f;", host="")),
    # strided-transpose-access
    (
        "strided-transpose-access",
        "square-block",
        H,
        TRANSPOSE.format(
            body="if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];",
            host="void h(float* o, const float* i) { tr<<<dim3(8, 8), dim3(32, 32)>>>(o, i, 256, 256); }",
        ),
    ),
    (
        "strided-transpose-access",
        "square-block",
        U,
        TRANSPOSE.format(
            body="if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];",
            host="void h(float* o, const float* i) { tr<<<dim3(8, 32), dim3(32, 8)>>>(o, i, 256, 256); }",
        ),
    ),
    (
        "strided-transpose-access",
        "exact-shape",
        H,
        TRANSPOSE.format(
            body="if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];",
            host="void h(float* o, const float* i) { tr<<<dim3(8, 8), dim3(32, 32)>>>(o, i, 256, 256); }",
        ),
    ),
    (
        "strided-transpose-access",
        "exact-shape",
        U,
        TRANSPOSE.format(
            body="for (int j = 0; j < 32; j += 8) if (x < cols && y + j < rows) out[x * rows + y + j] = "
            "in[(y + j) * cols + x];",
            host="void h(float* o, const float* i) { tr<<<dim3(8, 8), dim3(32, 8)>>>(o, i, 256, 256); }",
        ),
    ),
    # readonly-data-without-restrict
    (
        "readonly-data-without-restrict",
        "not-written-elsewhere",
        H,
        "__global__ void k(float* out, const float* in) { out[threadIdx.x] = in[threadIdx.x]; }\n"
        "void h(float* a, float* b) { k<<<1, 32>>>(a, b); }",
    ),
    (
        "readonly-data-without-restrict",
        "not-written-elsewhere",
        V,
        "__global__ void k(float* out, const float* in) { out[threadIdx.x] = in[threadIdx.x]; }\n"
        "void h(float* a) { k<<<1, 32>>>(a, a); }",
    ),
    (
        "readonly-data-without-restrict",
        "not-written-elsewhere",
        U,
        "__global__ void k(float* out, const float* in) { out[threadIdx.x] = in[threadIdx.x]; }",
    ),
    (
        "readonly-data-without-restrict",
        "not-escaping",
        H,
        "__global__ void k(float* out, float* in) { out[threadIdx.x] = in[threadIdx.x]; }",
    ),
    (
        "readonly-data-without-restrict",
        "not-escaping",
        V,
        "__device__ float first(float* p) { return p[0]; }\n"
        "__global__ void k(float* out, float* in) { out[threadIdx.x] = first(in) + in[threadIdx.x]; }",
    ),
    (
        "readonly-data-without-restrict",
        "not-escaping",
        U,
        "__global__ void k(float* out, float* in) { out[threadIdx.x] = in[threadIdx.x] + (in == out ? 1.0f : 0.0f); }",
    ),
    # repeated-global-tile-reads
    (
        "repeated-global-tile-reads",
        "square-block",
        H,
        MATMUL.format(
            init="0.0f",
            host="void h(const float* a, const float* b, float* c) { mm<<<dim3(4, 4), dim3(16, 16)>>>(a, b, c, 64, 64, 64); }",
        ),
    ),
    ("repeated-global-tile-reads", "square-block", U, MATMUL.format(init="0.0f", host="")),
    (
        "repeated-global-tile-reads",
        "exact-shape",
        H,
        MATMUL.format(
            init="0.0f",
            host="void h(const float* a, const float* b, float* c) { mm<<<dim3(4, 4), dim3(16, 16)>>>(a, b, c, 64, 64, 64); }",
        ),
    ),
    (
        "repeated-global-tile-reads",
        "exact-shape",
        U,
        MATMUL.format(
            init="C[row * N + col]",
            host="void h(const float* a, const float* b, float* c) { mm<<<dim3(4, 4), dim3(16, 16)>>>(a, b, c, 64, 64, 64); }",
        ),
    ),
    # missing-launch-bounds
    (
        "missing-launch-bounds",
        "one-block-size",
        H,
        "__global__ void k(float* p) { p[threadIdx.x] = 0; }\nvoid h(float* p) { k<<<4, 128>>>(p); }",
    ),
    (
        "missing-launch-bounds",
        "one-block-size",
        V,
        "__global__ void k(float* p) { p[threadIdx.x] = 0; }\nvoid h(float* p) { k<<<4, 128>>>(p); k<<<2, 256>>>(p); }",
    ),
    (
        "missing-launch-bounds",
        "one-block-size",
        U,
        "__global__ void k(float* p) { p[threadIdx.x] = 0; }\nvoid h(float* p, int t) { k<<<4, t>>>(p); }",
    ),
    # synchronous-global-to-shared-copy
    (
        "synchronous-global-to-shared-copy",
        "sm80",
        H,
        COPY.format(params="const float* in, float* out", stype="float", pre="", host=""),
    ),
    (
        "synchronous-global-to-shared-copy",
        "element-size",
        H,
        COPY.format(params="const float* in, float* out", stype="float", pre="", host=""),
    ),
    (
        "synchronous-global-to-shared-copy",
        "element-size",
        V,
        COPY.format(params="const short* in, short* out", stype="short", pre="", host=""),
    ),
    (
        "synchronous-global-to-shared-copy",
        "element-size",
        U,
        "template <typename T>\n" + COPY.format(params="const T* in, T* out", stype="T", pre="", host=""),
    ),
    (
        "synchronous-global-to-shared-copy",
        "source-stable",
        H,
        COPY.format(params="const float* in, float* out", stype="float", pre="", host=""),
    ),
    (
        "synchronous-global-to-shared-copy",
        "source-stable",
        V,
        COPY.format(
            params="float* in, float* out", stype="float", pre="in[blockIdx.x * 256 + threadIdx.x] += 1.0f;", host=""
        ),
    ),
    (
        "synchronous-global-to-shared-copy",
        "source-stable",
        U,
        COPY.format(params="const float* in, float* out", stype="float", pre="out[0] = 0.0f;", host=""),
    ),
]
