"""Model-level findings: each rule fires where its statement is true and stays quiet on near-misses."""

from __future__ import annotations

from pathlib import Path

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.findings import Severity, check_model


def rules(src: str, select: set[str] | None = None) -> list[tuple[str, str]]:
    model = analyze_text(src)
    return [(f.rule, f.message) for f in check_model(model, select)]


def test_uncoalesced_constant_and_symbolic_strides() -> None:
    src = """
__global__ void k(const float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  b[i] = a[i * 8] + a[i * n] + a[i];
}"""
    found = rules(src, {"uncoalesced-global-access"})
    assert len(found) == 2
    assert "`a` is read with a stride of 8 elements (32 bytes)" in found[0][1] or "stride of 8" in found[1][1]
    assert any("`n`" in msg for _, msg in found)


def test_no_uncoalesced_for_contiguous_or_uniform() -> None:
    src = """
__global__ void k(const float* a, float* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  b[i] = a[i] + a[blockIdx.x] + a[(threadIdx.x / 32) * 64];
}"""
    assert rules(src, {"uncoalesced-global-access"}) == []


def test_global_reread_in_loop_only_when_compiler_must_reload() -> None:
    fires = """
__global__ void k(const float* w, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = 0; j < n; ++j) out[i * n + j] = w[i] * j;
}"""
    quiet = """
__global__ void k(const float* __restrict__ w, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = 0; j < n; ++j) out[i * n + j] = w[i] * j;
}"""
    varies = """
__global__ void k(const float* w, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = 0; j < n; ++j) out[i * n + j] = w[j];
}"""
    (found,) = rules(fires, {"global-reread-in-loop"})
    assert "`w[i]`" in found[1] and "`out`" in found[1]
    assert rules(quiet, {"global-reread-in-loop"}) == []
    assert rules(varies, {"global-reread-in-loop"}) == []


def test_bank_conflicts_and_padding() -> None:
    conflict = """
__global__ void k(float* o) {
  __shared__ float t[32][32];
  t[threadIdx.y][threadIdx.x] = o[threadIdx.x];
  __syncthreads();
  o[threadIdx.x] = t[threadIdx.x][threadIdx.y];
}"""
    padded = conflict.replace("t[32][32]", "t[32][33]")
    (found,) = rules(conflict, {"shared-bank-conflict"})
    assert "32-way bank conflict" in found[1] and "to 33" in found[1]
    assert rules(padded, {"shared-bank-conflict"}) == []


def test_two_way_conflict_from_stride_two() -> None:
    src = """
__global__ void k(float* o) {
  __shared__ float s[64];
  s[threadIdx.x * 2] = 1.0f;
  o[threadIdx.x] = s[threadIdx.x];
}"""
    (found,) = rules(src, {"shared-bank-conflict"})
    assert "2-way" in found[1]


def test_missing_restrict_needs_distinct_launch_arguments() -> None:
    base = """
__global__ void k(const float* x, float* y, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}}
void host(float* a, float* b, int n) {{ k<<<n / 256, 256>>>({args}, n); }}
"""
    (found,) = rules(base.format(args="a, b"), {"missing-restrict"})
    assert "`x`, `y` are pointer parameters without `__restrict__`" in found[1]
    assert rules(base.format(args="a, a"), {"missing-restrict"}) == []
    assert rules(base.format(args="a, a + 4"), {"missing-restrict"}) == []
    no_launch = base.split("void host")[0]
    assert rules(no_launch, {"missing-restrict"}) == []


def test_divergent_syncthreads_in_branch_loop_and_after_return() -> None:
    in_branch = """
__global__ void k(float* a) {
  if (threadIdx.x < 16) { a[threadIdx.x] = 0; __syncthreads(); }
}"""
    in_loop = """
__global__ void k(float* a, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) { a[i] = 0; __syncthreads(); }
}"""
    after_return = """
__global__ void k(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  a[i] = 1;
  __syncthreads();
}"""
    uniform = """
__global__ void k(float* a, int n) {
  if (blockIdx.x == 0) { __syncthreads(); }
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) a[threadIdx.x] += a[threadIdx.x + s];
    __syncthreads();
  }
}"""
    model = analyze_text(in_branch)
    (f,) = check_model(model, {"divergent-syncthreads"})
    assert f.severity is Severity.ERROR and "threadIdx.x < 16" in f.message
    assert len(rules(in_loop, {"divergent-syncthreads"})) == 1
    (ret,) = check_model(analyze_text(after_return), {"divergent-syncthreads"})
    assert ret.severity is Severity.WARNING and "i >= n" in ret.message
    assert rules(uniform, {"divergent-syncthreads"}) == []


def test_a_tile_edge_return_is_not_reported_where_the_kernel_requires_whole_tiles() -> None:
    whole_tiles = (Path(__file__).parents[2] / "skills/divergent-syncthreads/fixtures/neg_whole_tiles.cu").read_text()
    assert rules(whole_tiles, {"divergent-syncthreads"}) == []
    # The same return with a bounds check in the tile loop: partial tiles are supported, so the hazard is real.
    guarded = whole_tiles.replace(
        "sa[threadIdx.y][threadIdx.x] = a[row * K + t * 16 + threadIdx.x];",
        "if (t * 16 + threadIdx.x < K) sa[threadIdx.y][threadIdx.x] = a[row * K + t * 16 + threadIdx.x];",
    )
    (ret,) = check_model(analyze_text(guarded), {"divergent-syncthreads"})
    assert ret.severity is Severity.WARNING and "row >= M || col >= N" in ret.message


def test_syntax_problems_are_one_info_finding_per_file() -> None:
    src = "__global__ void k(float* a) { a[threadIdx.x] = ; }\n__global__ void j(float* b) { b[0] = ; }\n"
    found = [f for f in check_model(analyze_text(src)) if f.rule == "syntax-error"]
    assert len(found) == 1, found
    (f,) = found
    assert f.severity is Severity.INFO and "parser limitation" in f.message and "1 other place" in f.message
    assert len(f.related) == 1 and f.span[0] < f.related[0].span[0]


def test_known_parser_gaps_are_not_reported_as_syntax_errors() -> None:
    src = "__global__ void k(float* a) { auto f = [] __device__ (float v) { return v; }; a[0] = f(1.0f); }"
    assert not any(r == "syntax-error" for r, _ in rules(src))


def test_bank_conflict_degree_counts_the_lanes_a_tile_allows_along_x() -> None:
    """A tile written for 16x16 blocks (launched where the model cannot see it): the in-bounds subscripts allow at
    most 16 threads along x, so a warp is two rows of 16 lanes and the degree is counted over 16 (issue 18)."""
    src = """
__global__ void t16(const float* in, float* out, int n) {
  __shared__ float tile[16][16 * 4 + 1];
  const int lx = threadIdx.x;
  const int ly = threadIdx.y;
  tile[ly][lx * 4 + 3] = in[(blockIdx.y * 16 + ly) * n + blockIdx.x * 64 + lx];
  __syncthreads();
  out[(blockIdx.x * 16 + lx) * n + ly] = tile[lx][ly * 4];
}"""
    found = [f for f in check_model(analyze_text(src), {"shared-bank-conflict"})]
    by_line = {f.message.split("`")[1]: f for f in found}
    store = by_line["tile[ly][lx * 4 + 3]"]
    assert "with 16 threads along x" in store.message and "(2-way bank conflict)" in store.message
    # The same tile, launched with 32 threads along x in this file: the 32-lane count stands (4-way).
    wide = src.replace("tile[16][16 * 4 + 1]", "tile[32][32 * 4 + 1]") + (
        "\nvoid host(const float* i, float* o, int n) { t16<<<dim3(1, 1), dim3(32, 32)>>>(i, o, n); }\n"
    )
    (w,) = [f for f in check_model(analyze_text(wide), {"shared-bank-conflict"}) if "lx * 4 + 3" in f.message]
    assert "threads along x" not in w.message and "(4-way bank conflict)" in w.message


def test_uncoalesced_reads_an_offset_under_a_vector_cast_in_the_pointee_elements() -> None:
    """`reinterpret_cast<const float4*>(x + 4 * t)[0]` moves lane t's 16 bytes at byte 16 t: contiguous. The offset
    under the cast counts floats, not float4s (it was read as 64 bytes between lanes). Spelled with a hoisted local,
    a shift or an offset added after the cast, the answer is the same."""
    contiguous = """
__global__ void k1(const float* __restrict__ x, float* __restrict__ y, int n) {
  int v0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (v0 + 3 < n) {
    float4 a = reinterpret_cast<const float4*>(x + v0)[0];
    reinterpret_cast<float4*>(y + v0)[0] = a;
  }
}
__global__ void k2(const float* __restrict__ x, float* __restrict__ y) {
  unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
  float4 a = ((const float4*)(x + (t << 2)))[0];
  ((float4*)y + t)[0] = a;
}"""
    assert rules(contiguous, {"uncoalesced-global-access"}) == []
    two_x = """
__global__ void k3(const float* __restrict__ x, float* __restrict__ y, int n) {
  int v0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  float4 a = reinterpret_cast<const float4*>(x + v0)[0];
  y[blockIdx.x] = a.x;
}"""
    found = rules(two_x, {"uncoalesced-global-access"})
    assert len(found) == 1 and "stride of 2 elements (32 bytes)" in found[0][1] and "spans 2x" in found[0][1]


def test_uncoalesced_counts_lane_groups_of_a_divided_thread_index() -> None:
    """A tile load `A[(tid / 4) * K + (tid % 4) * 4]` read 8 bytes at a time puts four lanes on each row's 32
    contiguous bytes: every fetched sector is used, so nothing is uncoalesced (a labelled wrong finding on real
    code). `tid >> 2` and `tid & 3` are the same index. Two lanes per row reading 4 bytes each do waste sectors."""
    grouped = """
#define LD64(p) (reinterpret_cast<float2*>(&(p))[0])
__global__ void tile(float* A, float* out, int K) {
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int row = tid / 4, col = (tid % 4) * 2;
  float2 v = LD64(A[(blockIdx.y * 64 + row) * K + col]);
  out[tid] = v.x;
}
__global__ void tile_shifts(float* A, float* out, int K) {
  const int tid = threadIdx.x;
  float2 v = LD64(A[(tid >> 2) * K + ((tid & 3) << 1)]);
  out[tid] = v.y;
}"""
    assert rules(grouped, {"uncoalesced-global-access"}) == []
    sparse = """
__global__ void pairs(const float* x, float* y, int K) {
  int tid = threadIdx.x;
  y[tid] = x[(tid / 2) * K + tid % 2];
}"""
    found = rules(sparse, {"uncoalesced-global-access"})
    assert len(found) == 1 and "16 32-byte sectors per warp where a contiguous access touches 4" in found[0][1]


def test_uncoalesced_says_when_a_loop_walks_the_gap_between_lanes() -> None:
    """Each thread of `for (l = 0; l < 4; ++l) x[4 t + l]` walks its own four floats: every instruction is strided,
    but over the loop the warp moves the sectors of a contiguous access. The finding says so, and the traffic
    factor that makes a warning in the quiet default is 1. A local declared again in a sibling block (`i`) is
    resolved by scope."""
    from warpwise.skills.traffic import access_traffic

    src = """
__global__ void chunk(float* x, int n) {
  int v0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (v0 + 3 < n) {
    for (int l = 0; l < 4; ++l) { const int i = v0 + l; x[i] = 2.0f * x[i]; }
  } else {
    for (int l = 0; l < 4; l++) { const int i = v0 + l; if (i < n) x[i] = 2.0f * x[i]; }
  }
}
__global__ void short_loop(float* x) {
  int v0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  for (int l = 0; l < 2; ++l) x[v0 + l] = 0.5f;
}"""
    model = analyze_text(src)
    found = [f for f in check_model(model, {"uncoalesced-global-access"})]
    chunk = [f.message for f in found if f.function == "chunk"]
    assert len(chunk) == 4 and all("over the loop on `l` each lane walks" in m for m in chunk)
    short = [f.message for f in found if f.function == "short_loop"]
    assert len(short) == 1 and "over the loop" not in short[0], "two of four elements: the loop leaves gaps"
    fn = model.function("chunk")
    factors = {access_traffic(model, "chunk", fn.base + a.span[0]).factor for a in fn.accesses if a.loops}  # type: ignore[union-attr]
    assert factors == {1.0}
    fn = model.function("short_loop")
    assert [access_traffic(model, "short_loop", fn.base + a.span[0]).factor for a in fn.accesses] == [4.0]  # type: ignore[union-attr]


def test_uncoalesced_keeps_a_symbolic_row_stride_through_an_aliased_vector_store() -> None:
    """`out = C + (m + tid) * N + c; reinterpret_cast<int4*>(out)[0] = v`: each thread writes its own row, which is
    uncoalesced whatever the constant index `[0]` says (a labelled useful finding on real code)."""
    src = """
__global__ void st(short* C, int N, int m, int c) {
  int tid = threadIdx.x;
  int4 v = make_int4(0, 0, 0, 0);
  short* out = C + (m + tid) * N + c;
  reinterpret_cast<int4*>(out)[0] = v;
}
__global__ void st_cast(short* C, int N, int m) {
  int4 v = make_int4(0, 0, 0, 0);
  reinterpret_cast<int4*>(C + (m + threadIdx.x) * N)[0] = v;
}"""
    found = rules(src, {"uncoalesced-global-access"})
    assert len(found) == 2 and all("each thread of a warp touches its own 32-byte sector" in m for _, m in found)
