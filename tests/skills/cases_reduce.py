"""Verdict cases of the reductions, arithmetic and control cards' checks (see test_checks.py for the format)."""

from __future__ import annotations

from warpwise.skills.regions import VerdictStatus

H, V, U = VerdictStatus.HOLDS, VerdictStatus.VIOLATED, VerdictStatus.UNKNOWN

# Verdicts a check cannot give on the regions its card's matcher yields, and why.
EXEMPT: dict[str, dict[VerdictStatus, str]] = {
    "atomic_add_exact": {
        VerdictStatus.VIOLATED: "every atomicAdd type either adds exactly (integers) or rounds (floating point); "
        "neither rules the aggregation out, so the check answers holds or unknown",
    },
    "dividend_is_signed": {
        VerdictStatus.UNKNOWN: "the matcher only yields divisions whose dividend has a known integer type",
    },
    "half_no_contraction": {
        VerdictStatus.VIOLATED: "a multiply feeding an add may or may not be contracted; that is undecidable from "
        "the source, so the check answers holds or unknown",
    },
    "local_index_unrollable": {
        VerdictStatus.VIOLATED: "a run-time index is reported (unknown) rather than suppressed: the array is in local "
        "memory either way, only the fix is missing",
    },
    "atomic_result_unused": {
        VerdictStatus.UNKNOWN: "whether the call is a statement of its own is read from the syntax, always decidable",
    },
}

TREE = """
{decl}
__global__ void {attrs}k(const {elem}* in, {elem}* out) {{
  __shared__ {elem} sdata[256];
  unsigned int tid = threadIdx.x;
  {before}
  sdata[tid] = in[blockIdx.x * blockDim.x + tid];
  {barrier}
  for (unsigned int s = {first}; s > 0; s >>= 1) {{
    if (tid < s) {combine};
    __syncthreads();
  }}
  {after}
}}
{host}
"""
LAUNCH = "void h(const float* a, float* b) {{ k<<<64, {block}>>>(a, b); }}"


def tree(
    elem: str = "float",
    combine: str = "sdata[tid] += sdata[tid + s]",
    first: str = "blockDim.x / 2",
    block: str | None = "256",
    before: str = "",
    barrier: str = "__syncthreads();",
    after: str = "if (tid == 0) out[blockIdx.x] = sdata[0];",
    decl: str = "",
    attrs: str = "",
    host: str | None = None,
) -> str:
    """Return a kernel with a shared-memory tree reduction, with the parts a case varies."""
    if host is None:
        host = LAUNCH.format(block=block).replace("float", elem) if block is not None else ""
    return TREE.format(
        elem=elem,
        combine=combine,
        first=first,
        before=before,
        barrier=barrier,
        after=after,
        decl=decl,
        attrs=attrs,
        host=host,
    )


DEVICE_TREE = """
__device__ void reduce_block(float* sdata, unsigned int tid) {}
__global__ void k(const float* in, float* out) {
  __shared__ float sdata[256];
  unsigned int tid = threadIdx.x;
  sdata[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}
"""

DEVICE_ONLY = """
__device__ float block_sum(float* sdata) {
  unsigned int tid = threadIdx.x;
  __shared__ float scratch[256];
  scratch[tid] = sdata[tid];
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) scratch[tid] += scratch[tid + s];
    __syncthreads();
  }
  return scratch[0];
}
"""

ATOMIC = """
__global__ void k(const {src}* data, {elem}* bins, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    {stmt}
  }}
}}
"""


def atomic(stmt: str, elem: str = "unsigned int", src: str = "unsigned char") -> str:
    """Return a kernel with one atomic statement on `bins`."""
    return ATOMIC.format(stmt=stmt, elem=elem, src=src)


UNIFORM = """
__global__ void k(const {elem}* x, {elem}* total, {elem}* seen, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    {stmt}
  }}
}}
"""


def uniform(stmt: str, elem: str = "float") -> str:
    """Return a kernel whose threads add to one accumulator `total`."""
    return UNIFORM.format(stmt=stmt, elem=elem)


LAST = "shared-tree-reduction-last-warp"
BLOCK = "shared-memory-block-reduction"
HIST = "per-thread-global-atomics"
SINGLE = "atomic-accumulate-single-address"

# (card, precondition, expected verdict, source)
CASES: list[tuple[str, str, VerdictStatus, str]] = [
    # Tree reductions.
    (LAST, "associative-operator", H, tree()),
    (LAST, "associative-operator", V, tree(combine="sdata[tid] -= sdata[tid + s]")),
    (
        LAST,
        "associative-operator",
        U,
        tree(
            decl="__device__ float combine(float a, float b) { return a + b; }",
            combine="sdata[tid] = combine(sdata[tid], sdata[tid + s])",
        ),
    ),
    (LAST, "shuffle-element", H, tree(elem="double")),
    (LAST, "shuffle-element", V, tree(elem="short")),
    (LAST, "shuffle-element", U, tree(elem="T", decl="template <typename T>")),
    (LAST, "block-size", H, tree(block="512")),
    (LAST, "block-size", V, tree(block="32")),
    (LAST, "block-size", V, tree(block="dim3(16, 16)")),
    (LAST, "block-size", V, tree(block=None, attrs="__launch_bounds__(32) ")),
    (LAST, "block-size", U, tree(block=None)),
    (LAST, "block-size", U, tree(block=None, attrs="__launch_bounds__(256) ")),
    (LAST, "block-size", H, tree(first="128", block="256")),
    (LAST, "block-size", V, tree(first="16", block=None)),
    (LAST, "all-threads-reach", H, tree()),
    (LAST, "all-threads-reach", V, tree(before="if (blockIdx.x * blockDim.x + tid >= 1000) return;")),
    (LAST, "all-threads-reach", U, DEVICE_ONLY),
    (LAST, "barrier-before-loop", H, tree()),
    (LAST, "barrier-before-loop", V, tree(barrier="")),
    (LAST, "barrier-before-loop", U, DEVICE_ONLY.replace("scratch[tid] = sdata[tid];", "")),
    (LAST, "only-total-read", H, tree()),
    (LAST, "only-total-read", V, tree(after="out[blockIdx.x * blockDim.x + tid] = sdata[tid];")),
    (LAST, "only-total-read", U, tree(after="sdata[tid] = 0.0f; __syncthreads(); out[tid] = sdata[tid];")),
    (BLOCK, "exact-regrouping", H, tree(elem="int", combine="sdata[tid] = max(sdata[tid], sdata[tid + s])")),
    (BLOCK, "exact-regrouping", V, tree(elem="int", combine="sdata[tid] -= sdata[tid + s]")),
    (BLOCK, "exact-regrouping", U, tree()),
    (BLOCK, "block-size", H, tree(block="1024")),
    (BLOCK, "block-size", V, tree(first="64", block="256")),
    (
        BLOCK,
        "block-size",
        U,
        tree(block="threads", host="void h(const float* a, float* b, int threads) { k<<<8, threads>>>(a, b); }"),
    ),
    # Contended atomics.
    (HIST, "integer-counters", H, atomic("atomicAdd(&bins[data[i]], 1u);")),
    (HIST, "integer-counters", U, atomic("atomicAdd(&bins[data[i]], 1.0f);", elem="float")),
    (HIST, "result-unused", H, atomic("atomicAdd(&bins[data[i]], 1u);")),
    (HIST, "result-unused", V, atomic("unsigned int old = atomicAdd(&bins[data[i]], 1u); (void)old;")),
    (HIST, "counters-only-updated", H, atomic("atomicAdd(&bins[data[i]], 1u);")),
    (HIST, "counters-only-updated", V, atomic("atomicAdd(&bins[data[i]], 1u); bins[0] = 0;")),
    (HIST, "counters-only-updated", U, atomic("atomicAdd(&bins[data[i]], 1u); atomicAdd(&bins[data[i] / 2], 1u);")),
    (HIST, "few-addresses", H, atomic("atomicAdd(&bins[data[i]], 1u);")),
    (HIST, "few-addresses", V, atomic("atomicAdd(&bins[data[i] % 100000u], 1u);", src="unsigned int")),
    (HIST, "few-addresses", U, atomic("atomicAdd(&bins[data[i]], 1u);", src="int")),
    (SINGLE, "exact-regrouping", H, uniform("atomicAdd(total, x[i]);", elem="int")),
    (SINGLE, "exact-regrouping", U, uniform("atomicAdd(total, x[i]);")),
    (SINGLE, "result-unused", H, uniform("atomicAdd(&total[0], x[i]);")),
    (SINGLE, "result-unused", V, uniform("seen[i] = atomicAdd(&total[0], x[i]);")),
    (SINGLE, "accumulator-only-updated", H, uniform("atomicAdd(total, x[i]);")),
    (SINGLE, "accumulator-only-updated", V, uniform("atomicAdd(total, x[i]); seen[i] = total[0];")),
    (SINGLE, "accumulator-only-updated", U, uniform("atomicAdd(total, x[i]); atomicAdd(total + 1, 1.0f);")),
]

SOFTMAX = """
{decl}
__global__ void k(const {elem}* x, float* y, int cols) {{
  {prelude}
  {mtype} m = {init};
  for (int c = 0; c < cols; ++c) m = {maxf}(m, {element});
  {stype} s = 0;
  for (int c = 0; c < cols; ++c) s += expf({element} - m);
  y[0] = s;
}}
"""


def softmax(
    elem: str = "float",
    mtype: str = "float",
    stype: str = "float",
    init: str = "-INFINITY",
    maxf: str = "fmaxf",
    element: str = "x[c]",
    prelude: str = "",
    decl: str = "",
) -> str:
    """Return a kernel with a max pass and a sum pass."""
    return SOFTMAX.format(
        elem=elem, mtype=mtype, stype=stype, init=init, maxf=maxf, element=element, prelude=prelude, decl=decl
    )


SM = "two-pass-softmax"
CASES += [
    (SM, "floating-accumulators", H, softmax()),
    (SM, "floating-accumulators", V, softmax(elem="int", mtype="int", stype="int", init="-1000", maxf="max")),
    (SM, "floating-accumulators", U, softmax(mtype="T", decl="template <typename T>")),
    (SM, "reads-global", H, softmax()),
    (
        SM,
        "reads-global",
        V,
        softmax(prelude="__shared__ float row[64]; row[threadIdx.x] = x[threadIdx.x];", element="row[c]"),
    ),
    (
        SM,
        "reads-global",
        U,
        softmax(decl="__device__ const float* pick(int r);", prelude="const float* p = pick(0);", element="p[c]"),
    ),
]

DIV = """
__global__ void k(float* out, int n) {{
  {decl}
  out[0] = (float)({expr});
}}
{host}
"""

P2 = "division-by-power-of-two"
CASES += [
    (P2, "signed-dividend", H, DIV.format(decl="int t = threadIdx.x;", expr="t / 32", host="")),
    (P2, "signed-dividend", V, DIV.format(decl="unsigned t = threadIdx.x;", expr="t / 32", host="")),
    (P2, "non-negative", H, DIV.format(decl="int t = threadIdx.x + 32 * threadIdx.y;", expr="t % 32", host="")),
    (
        P2,
        "non-negative",
        H,
        DIV.format(
            decl="int i = blockIdx.x * blockDim.x + threadIdx.x;",
            expr="i / 16",
            host="void h(float* o) { k<<<1024, 128>>>(o, 0); }",
        ),
    ),
    (P2, "non-negative", U, DIV.format(decl="int i = blockIdx.x * blockDim.x + threadIdx.x;", expr="i / 16", host="")),
    (P2, "non-negative", U, DIV.format(decl="", expr="n % 4", host="")),
    (P2, "non-negative", V, DIV.format(decl="int t = (int)threadIdx.x - 1;", expr="t / 2", host="")),
]

RECIP = """
{decl}
__global__ void k(const float* in, float* out, float d, int n) {{
  {local}
  for (int j = 0; j < {trips}; ++j) out[j] = in[j] / {divisor};
}}
"""


def recip(decl: str = "", local: str = "", trips: str = "n", divisor: str = "d") -> str:
    """Return a kernel that divides by a loop-invariant value in a loop."""
    return RECIP.format(decl=decl, local=local, trips=trips, divisor=divisor)


INV = "division-by-loop-invariant"
CASES += [
    (INV, "divisor-fixed", H, recip()),
    (INV, "divisor-fixed", H, recip(local="float s = in[0] * 2.0f;", divisor="s")),
    (INV, "divisor-fixed", V, recip(local="volatile float s = in[0];", divisor="s")),
    (INV, "divisor-fixed", U, recip(decl="__device__ float g_scale;", divisor="(double)g_scale")),
    (INV, "loop-repeats", H, recip(trips="8")),
    (INV, "loop-repeats", V, recip(trips="1")),
    (INV, "loop-repeats", U, recip()),
]

HALF = """
#include <cuda_fp16.h>
__device__ void keep(const __half* p);
__global__ void k(const __half* a, const __half* b, __half* c, __half s, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = {expr};
  {more}
}}
{host}
"""
ALLOCATED = """
void h(int n) {
  __half *a, *b, *c;
  cudaMalloc(&a, n * sizeof(__half));
  cudaMalloc(&b, n * sizeof(__half));
  cudaMalloc(&c, n * sizeof(__half));
  k<<<(n + 127) / 128, 128>>>(a, b, c, __float2half(1.0f), n);
}
"""


def half(expr: str = "__hadd(a[i], b[i])", more: str = "", host: str = "") -> str:
    """Return a kernel with one scalar half elementwise statement."""
    return HALF.format(expr=expr, more=more, host=host)


H2 = "scalar-half-arithmetic"
CASES += [
    (H2, "same-rounding", H, half()),
    (H2, "same-rounding", U, half(expr="s * a[i] + b[i]")),
    (H2, "aligned-pairs", H, half(host=ALLOCATED)),
    (H2, "aligned-pairs", V, half(host=ALLOCATED.replace("(a, b, c,", "(a + 1, b, c,"))),
    (H2, "aligned-pairs", U, half()),
    (H2, "elementwise", H, half()),
    (H2, "elementwise", V, half(more="if (i + 1 < n) c[i + 1] = a[i];")),
    (H2, "elementwise", U, half(more="keep(a);")),
]

POW = """
struct Sample {{
  float v;
}};
__global__ void k(const float* x, const double* d, const int* c, Sample s, float* out) {{
  out[0] = {expr};
}}
"""
PW = "powf-with-small-integer-exponent"
CASES += [
    (PW, "base-precision", H, POW.format(expr="powf(x[0], 2.0f)")),
    (PW, "base-precision", H, POW.format(expr="(float)pow(d[0], 3)")),
    (PW, "base-precision", V, POW.format(expr="powf(c[0], 2.0f)")),
    (PW, "base-precision", U, POW.format(expr="powf(s.v, 2.0f)")),
]

LOCAL = """
#define N 6
__global__ void k(const float* x, const int* sel, float* y, int n) {{
  float acc[{size}];
  for (int j = 0; j < {trips}; ++j) acc[j % {size}] = x[j];
  y[threadIdx.x] = acc[{read}];
}}
"""


def local(size: str = "8", trips: str = "8", read: str = "1") -> str:
    """Return a kernel with a per-thread array filled in a loop."""
    return LOCAL.format(size=size, trips=trips, read=read)


LA = "dynamic-local-array-index"
CASES += [
    (LA, "small-array", H, local()),
    (LA, "small-array", V, local(size="128", trips="128")),
    (LA, "small-array", U, local(size="M").replace("#define N 6", "#define N 6\ntemplate <int M>")),
    (LA, "unrollable-index", H, local()),
    (LA, "unrollable-index", U, local(read="sel[threadIdx.x] & 7")),
    (LA, "short-loops", H, local()),
    (LA, "short-loops", V, local(trips="200")),
    (LA, "short-loops", U, local(trips="n")),
]

WIDE = """
#include <cstdio>
__device__ float at(const float* p, int k);
__global__ void k(float* x, {size} n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  {body}
}}
"""
I32 = "int32-index-overflow"
CASES += [
    (I32, "may-exceed-int32", H, WIDE.format(size="size_t", body="if (i < n) x[i] = 0.0f;")),
    (I32, "may-exceed-int32", V, WIDE.format(size="int", body="if (i < n) x[i] = 0.0f;")),
    (I32, "may-exceed-int32", U, WIDE.format(size="size_t", body="x[i] = 0.0f;")),
    (I32, "only-indexes", H, WIDE.format(size="size_t", body="if (i < n) x[i] = x[i + 1] * 2.0f;")),
    (I32, "only-indexes", V, WIDE.format(size="size_t", body='x[i] = 0.0f; printf("%d", i);')),
    (I32, "only-indexes", V, WIDE.format(size="size_t", body="x[i] = 0.0f; int* p = &i; *p = 0;")),
    (I32, "only-indexes", U, WIDE.format(size="size_t", body="x[i] = at(x, i);")),
    (I32, "only-indexes", U, WIDE.format(size="size_t", body="int j = i / 2; x[j] = 0.0f; x[i] = 1.0f;")),
]

CASES += [
    (H2, "grid-covers", H, half(host=ALLOCATED)),
    (
        H2,
        "grid-covers",
        V,
        half(host="void h(__half* a, __half* b, __half* c) { k<<<2, 128>>>(a, b, c, a[0], 1000); }"),
    ),
    (H2, "grid-covers", U, half()),
    (INV, "divisor-fixed", V, recip(local="float& r = out[0];", divisor="r")),
]

LOOPDIV = """
__global__ void k(float* out, int n) {{
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = {start}; j < n; j += 32) out[j / 2] = 0.0f;
}}
"""
CASES += [
    (P2, "non-negative", H, LOOPDIV.format(start="t")),
    (P2, "non-negative", U, LOOPDIV.format(start="i")),
]
