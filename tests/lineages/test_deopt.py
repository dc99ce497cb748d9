"""The deoptimizers on the expert corpus (CPU): which passes apply to which expert, and every result builds.

`EXPECTED` records the candidates each expert offers before any step (the pass set per operator); `WALKS` the
candidates a compile-only preview walk accepts in order. Every candidate along those walks must re-parse, keep
the kernel's parameters, and build with NVRTC for sm_90 (the gate's own build path; a simpler kernel may spill,
which its lineage reports); the expert's first-level candidates also build with nvcc. Whether a simpler kernel
is correct and slower is for the gate to measure on a GPU (bench/gpu/lineage_batch.sh). The unit tests below
pin each pass's exactness rules on small kernels.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import pytest

from tests.conftest import needs_nvcc
from tests.lineages.kernels import Kernel, experts, load_problem
from tests.nvcc import compile_many
from warpwise.lineages.deopt import PASSES, Deopt, KernelSource, candidates, pass_by_id
from warpwise.lineages.deopt.base import reparses

EXPECTED: dict[str, set[str]] = {
    "bias_gelu": {"read-only:restrict", "unroll:factor", "unroll:pragma-constant", "devectorize:global",
                  "coarsening:grid-y"},
    "blur3x3": {"read-only:restrict", "unroll:pragma-variable", "devectorize:global", "shuffles:shared-exchange"},
    "gemv": {"read-only:restrict", "read-only:cache-hints", "unroll:factor", "devectorize:global",
             "shuffles:shared-exchange", "coarsening:grid-x"},
    "histogram": {"read-only:restrict", "unroll:pragma-constant", "devectorize:global", "atomics:privatized",
                  "coarsening:grid-x"},
    "layernorm": {"read-only:restrict", "unroll:pragma-constant", "devectorize:global", "shuffles:shared-exchange"},
    "reduce_sum": {"read-only:restrict", "unroll:factor", "devectorize:global", "shuffles:shared-exchange",
                   "atomics:aggregated", "coarsening:grid-x"},
    "rmsnorm_f16": {"read-only:restrict", "unroll:pragma-constant", "devectorize:global", "shuffles:shared-exchange"},
    "scan": {"read-only:restrict", "devectorize:global", "shuffles:shared-exchange"},
    "sgemm": {"read-only:restrict", "unroll:pragma-constant", "devectorize:global", "devectorize:shared",
              "padding:shared", "async-copy:cp-async", "untile:warp-layout", "untile:register-tile:TM=8",
              "untile:register-tile:TN=8"},
    "softmax_rows": {"read-only:restrict", "unroll:pragma-constant", "devectorize:global", "shuffles:shared-exchange",
                     "two-pass:softmax-merge"},
    "transpose": {"read-only:restrict", "unroll:pragma-constant", "devectorize:global", "padding:shared",
                  "unstage:shared:tile", "coarsening:block"},
}  # fmt: skip
"""The candidates each expert offers before any step: the pass set per operator."""

WALKS: dict[str, list[str]] = {
    "softmax_rows": ["read-only:restrict", "unroll:pragma-constant", "devectorize:global", "shuffles:shared-exchange",
                     "two-pass:softmax-merge"],
    "sgemm": ["read-only:restrict", "unroll:pragma-constant", "devectorize:global", "devectorize:shared",
              "padding:shared", "async-copy:cp-async", "untile:warp-layout", "untile:register-tile:TM=8",
              "untile:register-tile:TN=8", "untile:register-tile:TM=4", "untile:register-tile:TN=4",
              "untile:register-tile:TM=2", "untile:register-tile:TN=2"],
    # Unstaging needs the source's `__restrict__` (no store of another thread may change what it reads), which
    # the preview walk has removed first.
    "transpose": ["read-only:restrict", "unroll:pragma-constant", "devectorize:global", "padding:shared",
                  "coarsening:block"],
}  # fmt: skip
"""Walks whose order matters: a later pass must still recognize the code an earlier one rewrote."""

CARDS = {c.parent.name for c in (Path(__file__).resolve().parents[2] / "skills").glob("*/card.md")}


def _ids(k: Kernel) -> str:
    return k.operator


def _source(k: Kernel, text: str | None = None) -> KernelSource:
    kernel = load_problem(k.problem)["kernel"]
    return KernelSource.parse(text if text is not None else k.source.read_text(encoding="utf-8"), kernel, str(k.source))


@functools.cache
def preview_walk(operator: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Return the keys a walk that accepts every first candidate takes, and (key, text) of every candidate on it."""
    k = next(e for e in experts() if e.operator == operator)
    text = k.source.read_text(encoding="utf-8")
    tried: set[str] = set()
    keys: list[str] = []
    seen: list[tuple[str, str]] = []
    while True:
        todo = [d for d in candidates(_source(k, text)) if d.key not in tried]
        if not todo:
            return keys, seen
        seen += [(d.key, d.apply(text)) for d in todo]
        tried.add(todo[0].key)
        keys.append(todo[0].key)
        text = todo[0].apply(text)


def test_every_corpus_operator_has_its_expected_pass_set() -> None:
    assert set(EXPECTED) == {k.operator for k in experts()}


@pytest.mark.parametrize("k", experts(), ids=_ids)
def test_expected_passes_apply_to_the_expert(k: Kernel) -> None:
    found = [d.key for d in candidates(_source(k))]
    assert len(found) == len(set(found)), "a candidate key must be unique for one kernel"
    assert set(found) == EXPECTED[k.operator]


@pytest.mark.parametrize("k", experts(), ids=_ids)
def test_candidates_are_well_formed(k: Kernel) -> None:
    src = _source(k)
    params = [(p.name, p.is_pointer) for p in src.kernel_fn.params]
    for d in candidates(src):
        assert d.description and d.pass_id == d.key.split(":")[0]
        assert pass_by_id(d.pass_id) is not None
        assert (d.card is None) != (d.proposed is None), f"{d.key}: a card, or a proposed card when none explains it"
        assert d.card is None or d.card in CARDS, f"{d.key} maps to a card that does not exist: {d.card}"
        text = d.apply(src.text)
        assert reparses(text), d.key
        assert text != src.text or d.launch, f"{d.key} changes nothing"
        new = KernelSource.parse(text, src.kernel)
        assert [(p.name, p.is_pointer) for p in new.kernel_fn.params] == params, d.key


def test_walks_keep_recognizing_earlier_rewrites() -> None:
    for operator, keys in WALKS.items():
        assert preview_walk(operator)[0] == keys


def _nvrtc_build(text: str, kernel: str, name: str) -> tuple[bool, str]:
    from warpwise.verify.extract import device_source
    from warpwise.verify.types import Source
    from warpwise.verify.worker import nvbuild

    build = nvbuild.build(Source(device_source(text, name).text, kernel, name), "sm_90")
    return build.info.ok, build.info.log


@pytest.mark.parametrize("k", experts(), ids=_ids)
def test_every_candidate_of_a_preview_walk_builds_with_nvrtc(k: Kernel, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC is not installed (pip install -e '.[compile]')")
    from warpwise.verify.worker import nvbuild

    version = nvbuild.nvrtc_version()
    if version is None:
        pytest.skip("NVRTC cannot be loaded on this machine")
    kernel = load_problem(k.problem)["kernel"]
    failed = {}
    for key, text in preview_walk(k.operator)[1]:
        # A build that passed is remembered in pytest's cache under the hash of the text and NVRTC's version.
        digest = hashlib.sha256(f"{version}\0{kernel}\0{text}".encode()).hexdigest()[:32]
        if request.config.cache.get(f"lineages/nvrtc/{digest}", False) is True:
            continue
        ok, log = _nvrtc_build(text, kernel, k.source.name)
        if not ok:
            failed[key] = log[-1500:]
        else:
            request.config.cache.set(f"lineages/nvrtc/{digest}", True)
    assert not failed, failed


@needs_nvcc
def test_first_candidates_compile_with_nvcc() -> None:
    sources = []
    for k in experts():
        src = _source(k)
        sources += [(f"{k.operator} {d.key}", d.apply(src.text).encode()) for d in candidates(src)]
    results = compile_many([s for _, s in sources])
    failed = {name: log[-1500:] for (name, _), (ok, log) in zip(sources, results, strict=True) if not ok}
    assert not failed, failed


@needs_nvcc
def test_devectorized_accesses_stay_scalar_in_ptx(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # The compiler knows the alignment of shared arrays and would merge four 4-byte loads back into one: the
    # shared-memory helpers are volatile. Global pointers have no known alignment, so plain loads stay scalar.
    import subprocess

    for operator, key, pattern in (
        ("sgemm", "devectorize:shared", r"ld\.shared(\.volatile)?\.v4"),
        ("reduce_sum", "devectorize:global", r"ld\.global[.\w]*\.v4"),
    ):
        k = next(e for e in experts() if e.operator == operator)
        d = next(d for d in candidates(_source(k)) if d.key == key)
        text = d.apply(k.source.read_text(encoding="utf-8"))
        cache_key = f"lineages/ptx/{hashlib.sha256(text.encode()).hexdigest()[:32]}"
        if request.config.cache.get(cache_key, False) is True:
            continue
        (tmp_path / "k.cu").write_text(text)
        proc = subprocess.run(
            ["nvcc", "-arch=sm_90", "-ptx", str(tmp_path / "k.cu"), "-o", str(tmp_path / "k.ptx")],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert not re.search(pattern, (tmp_path / "k.ptx").read_text()), f"{operator} {key}: vector loads remain"
        request.config.cache.set(cache_key, True)


def test_passes_are_registered_once() -> None:
    assert len({p.id for p in PASSES}) == len(PASSES)


# ---- Each pass's rules, on small kernels ----------------------------------------------------------------------


def _run(pass_id: str, text: str, kernel: str = "k") -> list[Deopt]:
    p = pass_by_id(pass_id)
    assert p is not None
    return p.run(KernelSource.parse(text, kernel))


def test_devectorize_keeps_loads_nested_in_a_store() -> None:
    text = """
__global__ void k(const float* x, float* y, int n) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  int i = threadIdx.x;
  y4[i] = x4[i];
}
"""
    (d,) = _run("devectorize", text)
    out = d.apply(text)
    assert "ww_st16((y4) + (i), ww_ld16((x4) + (i)));" in out
    assert "__device__ __forceinline__ float4 ww_ld16(const float4* p)" in out
    assert "uint4" not in out, "only the helpers the kernel uses are inserted"


def test_devectorize_gives_up_on_member_stores() -> None:
    text = """
__global__ void k(float* y) {
  float4* y4 = reinterpret_cast<float4*>(y);
  y4[threadIdx.x].x = 1.0f;
}
"""
    assert _run("devectorize", text) == []


def test_shuffles_need_the_full_mask() -> None:
    full = (
        "__global__ void k(float* y) { float v = y[threadIdx.x]; v += __shfl_xor_sync(0xffffffffu, v, 1); y[0] = v; }"
    )
    half = (
        "__global__ void k(float* y) { float v = y[threadIdx.x]; v += __shfl_xor_sync(0x0000ffffu, v, 1); y[0] = v; }"
    )
    (d,) = _run("shuffles", full)
    assert d.card == "shared-memory-block-reduction"
    assert "ww_shfl_xor(v, 1)" in d.apply(full)
    assert _run("shuffles", half) == []
    up = full.replace("__shfl_xor_sync", "__shfl_up_sync")
    (d,) = _run("shuffles", up)
    assert d.card is None and d.proposed is not None


def test_padding_only_small_pads_of_two_dimensional_arrays() -> None:
    text = "__global__ void k(float* y) { __shared__ float t[32][32 + 1]; __shared__ float u[64 + 1]; y[0] = t[0][0] + u[0]; }"
    (d,) = _run("padding", text)
    out = d.apply(text)
    assert "t[32][32]" in out and "u[64 + 1]" in out


def test_unroll_leaves_loops_that_index_register_arrays() -> None:
    text = """
__global__ void k(const float* x, float* y) {
  float v[4];
#pragma unroll
  for (int u = 0; u < 4; ++u) v[u] = x[threadIdx.x + u * 32];
#pragma unroll
  for (int u = 0; u < 4; ++u) y[threadIdx.x + u * 32] = x[u];
  y[0] = v[0] + v[3];
}
"""
    (d,) = _run("unroll", text)
    out = d.apply(text)
    assert out.count("#pragma unroll 1") == 1
    assert out.index("#pragma unroll\n") < out.index("#pragma unroll 1")


def test_coarsening_needs_every_grid_dimension_use_to_be_a_stride() -> None:
    stride = """
__global__ void k(const float* x, float* y, int n) {
  const int stride = gridDim.x * 256;
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += stride) y[i] = x[i];
}
"""
    (d,) = _run("coarsening", stride)
    assert d.edits == () and d.launch[0].part == "grid"
    g = ((8, 1, 1), (256, 1, 1), 0)
    ns = {"_ww_tdiv": lambda a, b: a // b}
    assert eval(d.launch[0].python, ns, {"value": 8, "inputs": {"n": 1000}, "g": g}) == 4
    assert _run("coarsening", stride.replace("y[i] = x[i];", "y[i] = x[i] + gridDim.x;")) == []


def test_async_copies_become_synchronous_and_group_operations_vanish() -> None:
    text = """
__device__ __forceinline__ unsigned int smem_u32(const void* p) { return (unsigned int)__cvta_generic_to_shared(p); }
__global__ void k(const float* x, float* y) {
  __shared__ float s[256];
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" ::"r"(smem_u32(s + 4 * threadIdx.x)), "l"(x), "r"(16));
  asm volatile("cp.async.commit_group;\\n" ::);
  asm volatile("cp.async.wait_group 0;\\n" ::);
  __syncthreads();
  y[threadIdx.x] = s[threadIdx.x];
}
"""
    (d,) = _run("async-copy", text)
    out = d.apply(text)
    assert "ww_copy_sync<16>(s + 4 * threadIdx.x, x, 16);" in out
    assert "cp.async" not in out.replace("cp.async does", "")
    assert out.count("(void)0;") == 2


def test_aggregated_atomics_need_a_single_address() -> None:
    text = """
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__global__ void k(const float* x, float* out) {
  float s = x[threadIdx.x];
  s = warp_sum(s);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}
"""
    (d,) = _run("atomics", text)
    assert d.apply(text).rstrip().endswith("atomicAdd(out, s);\n}")
    assert _run("atomics", text.replace("atomicAdd(out, s)", "atomicAdd(out + threadIdx.x, s)")) == []


def test_untile_only_a_bijective_warp_layout() -> None:
    text = """
__global__ void __launch_bounds__(128) k(float* y) {
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int ty = (warp & 1) * 4 + (lane >> 3);
  const int tx = (warp >> 1) * 8 + (lane & 7);
  y[ty * 16 + tx] = 1.0f;
}
"""
    (d,) = _run("untile", text)
    out = d.apply(text)
    assert "const int ty = (int)threadIdx.x / 16;" in out and "const int tx = (int)threadIdx.x % 16;" in out
    clash = text.replace("(warp >> 1) * 8 + (lane & 7)", "(warp >> 1) * 8 + (lane & 3)")
    assert _run("untile", clash) == []
    row_major = text.replace("(warp & 1) * 4 + (lane >> 3)", "warp * 2 + (lane >> 4)").replace(
        "(warp >> 1) * 8 + (lane & 7)", "lane & 15"
    )
    assert _run("untile", row_major) == []
    shuffled = text.replace("y[ty * 16 + tx] = 1.0f;", "y[ty * 16 + tx] = __shfl_sync(0xffffffffu, 1.0f, 0);")
    assert _run("untile", shuffled) == []


_TILE_GEMM = """
#define TM 4
#define TN 2
#define BM (TM * 16)
#define BN (TN * 16)
__global__ void __launch_bounds__(256) k(const float* A, const float* B, float* C, int M, int N, int K) {
  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  float acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) C[(m0 + i) * N + n0 + j] = acc[i][j];
}
"""


def test_untile_halves_a_macro_register_tile_and_doubles_the_grid() -> None:
    found = {d.key: d for d in _run("untile", _TILE_GEMM)}
    assert set(found) == {"untile:register-tile:TM=4", "untile:register-tile:TN=2"}
    rows, cols = found["untile:register-tile:TM=4"], found["untile:register-tile:TN=2"]
    assert "#define TM 2\n" in rows.apply(_TILE_GEMM) and "#define TN 2\n" in rows.apply(_TILE_GEMM)
    assert [(c.part, c.axis, c.python) for c in rows.launch] == [("grid", 1, "value * 2")]
    assert [(c.part, c.axis, c.python) for c in cols.launch] == [("grid", 0, "value * 2")]
    assert rows.proposed is not None and rows.proposed.skill_id == "register-tile-outputs" and rows.card is None
    assert list(found) == ["untile:register-tile:TM=4", "untile:register-tile:TN=2"], "the larger side first"
    # One output per thread along a side: nothing left to halve there.
    assert [d.key for d in _run("untile", _TILE_GEMM.replace("#define TN 2", "#define TN 1"))] == [
        "untile:register-tile:TM=4"
    ]
    # Literal sizes, a size that is not a power of two, or no block tile derived from the macro: no candidate.
    assert _run("untile", _TILE_GEMM.replace("acc[TM][TN]", "acc[4][2]")) == []
    assert [d.key for d in _run("untile", _TILE_GEMM.replace("#define TM 4", "#define TM 3"))] == [
        "untile:register-tile:TN=2"
    ]
    assert [d.key for d in _run("untile", _TILE_GEMM.replace("#define BM (TM * 16)", "#define BM 64"))] == [
        "untile:register-tile:TN=2"
    ]


def test_sgemm_expert_untiles_down_to_one_output_per_thread() -> None:
    _, seen = preview_walk("sgemm")
    last = dict(seen)["untile:register-tile:TN=2"]
    assert "#define TM 1\n" in last and "#define TN 1\n" in last


_STAGED = """
#define T 16
__global__ void k(const float* __restrict__ A, const float* __restrict__ B, float* C, int M, int N, int K) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  const int row = blockIdx.y * T + threadIdx.y;
  const int col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += T) {
    As[threadIdx.y][threadIdx.x] = row < M && k0 + threadIdx.x < K ? A[row * K + k0 + threadIdx.x] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = k0 + threadIdx.y < K && col < N ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
"""


def test_unstage_reads_the_global_element_each_slot_was_filled_from() -> None:
    (d,) = _run("unstage", _STAGED)
    assert d.key == "unstage:shared:As" and d.card == "repeated-global-tile-reads"
    once = d.apply(_STAGED)
    assert "__shared__ float As" not in once and "As[" not in once
    # The slot [threadIdx.y][k] holds A[row * K + k0 + k] where the fill's guard held, zero elsewhere; every term is
    # computed in signed 64-bit arithmetic.
    assert (
        "acc += ((float)((long long)(threadIdx.y) + 16 * (long long)blockIdx.y < (long long)M && (long long)(k) + "
        "(long long)k0 < (long long)K ? A[(long long)(threadIdx.y) * K + (long long)(k) + 16 * (long long)K * "
        "blockIdx.y + (long long)k0] : 0.0f)) * Bs[k][threadIdx.x];"
    ) in once
    assert once.count("__syncthreads();") == 2, "Bs still needs its barriers"
    (e,) = _run("unstage", once)
    twice = e.apply(once)
    assert e.key == "unstage:shared:Bs" and "__shared__" not in twice and "__syncthreads" not in twice
    assert reparses(twice)


def test_unstage_follows_reassigned_locals_to_the_fill() -> None:
    # A transpose staged through a 32 x 33 tile, as the strided-transpose-access card's rewrite was before it
    # became the launch-independent tiled copy (kept here as the unstage pass's input).
    plain = (Path(__file__).resolve().parent / "staged" / "transpose_tile32.cu").read_text()
    # Without `__restrict__`, `out` may be `in`: a store of another thread could change what a direct read sees.
    assert _run("unstage", plain, "transpose") == []
    text = plain.replace("float* out, const float* in", "float* __restrict__ out, const float* __restrict__ in")
    (d,) = _run("unstage", text, "transpose")
    out = d.apply(text)
    # x and y are reassigned after the barrier: the fill saw their first values, the read its own indices.
    assert (
        "in[(long long)(threadIdx.x) * cols + (long long)(threadIdx.y) + (long long)blockDim.x * blockIdx.x + "
        "(long long)blockDim.y * blockIdx.y * cols]"
    ) in out
    assert "__shared__" not in out and "__syncthreads" not in out
    # x changed under a condition before the fill: its value there is not one expression.
    fill = "  if (x < cols && y < rows) {\n    tile"
    cond = text.replace(fill, "  if (rows > 4) x += 1;\n" + fill)
    assert cond != text and _run("unstage", cond, "transpose") == []


def test_unstage_transpose_scalar_path_only() -> None:
    k = next(e for e in experts() if e.operator == "transpose")
    src = _source(k)
    (d,) = _run_on(src, "unstage")
    out = d.apply(src.text)
    assert "__shared__ float tile" in out, "the vector path still stages through the tile (a fill through a pointer)"
    assert "tile[k / TILE][k % TILE] = in" not in out and "= tile[k % TILE][k / TILE]" not in out
    assert "(long long)(k % TILE) + (long long)r0 < (long long)rows && (long long)(k / TILE) + (long long)c0 < " in out
    assert d.card == "strided-transpose-access"


def _run_on(src: KernelSource, pass_id: str) -> list[Deopt]:
    p = pass_by_id(pass_id)
    assert p is not None
    return p.run(src)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("const float* __restrict__ A", "float* __restrict__ A"), "the source is not const"),
        (("? A[row * K + k0 + threadIdx.x] : 0.0f", "? A[row * K + k0 + threadIdx.x * threadIdx.x] : 0.0f"),
         "the source index is not linear in the slot"),
        (("? A[row * K + k0 + threadIdx.x] : 0.0f", "? A[row * K + k0 + threadIdx.x] : acc"),
         "the other value is not a literal"),
        (("__shared__ float As[T][T];", "__shared__ double As[T][T];"), "the copy converts"),
        (("for (int k0 = 0; k0 < K; k0 += T) {", "for (int k0 = threadIdx.x; k0 < K; k0 += T) {"),
         "the slice offset differs between threads"),
    ],
)  # fmt: skip
def test_unstage_gives_up_where_the_slot_is_not_derived_exactly(change: tuple[str, str], why: str) -> None:
    text = _STAGED.replace(*change)
    assert text != _STAGED
    assert [d.key for d in _run("unstage", _STAGED)] == ["unstage:shared:As"]
    assert "unstage:shared:As" not in [d.key for d in _run("unstage", text)], why


UNSTAGE = Path(__file__).resolve().parents[1] / "fixtures" / "deopt" / "unstage"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("param_modified", "the parameter in the source index changes after the fill"),
        ("read_outside", "the tile is read outside the segment whose fill would be removed"),
        ("stale_default", "slots the fill skips keep a value written before"),
        ("decl_side_effect", "a declaration's initializer changes the index variable"),
        ("shadow_param", "a local at the read shadows a parameter the rendering names"),
        ("atom_collision", "two variables of one name (an inner loop shadows an outer one)"),
        ("inplace", "no `__restrict__`: the output may be the input"),
        ("side_effect_index", "the read index has a side effect"),
        ("addr_alias", "the index variable is changed through its address"),
        ("field_local", "a member of a local copy of threadIdx"),
        ("early_exit_zero", "threads that leave before the barrier write some slots"),
        ("macro_access", "a macro reads the tile"),
        ("store_through_pointer", "a store through `*(out + i)` is not seen as a write of `out`"),
        ("store_through_local_pointer", "a store through a local pointer into `out`"),
        ("store_in_callee", "a function of the file stores through the pointer it is given"),
        ("unsigned_cast_guard", "a cast to unsigned makes a negative index wrap on purpose"),
        ("unsigned_local", "an unsigned 32-bit local wraps"),
        ("reference_parameter", "a function taking a reference changes the index variable"),
        ("float_guard", "a float parameter in the guard"),
        ("float_in_index", "a float converted inside the index"),
        ("loop_bound_in_loop", "the fill loop's bound skips slots that keep the last iteration's values"),
        ("macro_defined_twice", "a macro defined under #ifdef and #else"),
        ("goto_skips_definition", "a goto may skip the definition the index uses"),
        ("macro_in_index", "a macro in the read index hides a side effect"),
        ("index_reads_tile", "the read index reads the tile itself"),
        ("member_write", "a member of a slot is written after the barrier"),
        ("struct_tile", "a struct tile"),
    ],
)
def test_unstage_gives_up_where_exactness_is_not_shown(name: str, why: str) -> None:
    assert _run("unstage", (UNSTAGE / f"{name}.cu").read_text()) == [], why


@pytest.mark.parametrize(
    "name", ["global_scratch", "shared_scalar", "callee_shared", "filescope_shared", "written_aliases_read"]
)
def test_unstage_keeps_barriers_that_order_other_memory(name: str) -> None:
    text = (UNSTAGE / f"{name}.cu").read_text()
    (d,) = _run("unstage", text)
    out = d.apply(text)
    assert out.count("__syncthreads()") == text.count("__syncthreads()"), "every barrier stays"
    assert "__shared__ float s[" not in out


def test_unstage_renders_exact_integers_and_keeps_the_tile_type() -> None:
    # A left halo: the index is negative for the first block; computed in 64-bit signed arithmetic, not unsigned.
    halo = (UNSTAGE / "halo_signed.cu").read_text()
    (d,) = _run("unstage", halo)
    assert "(long long)(threadIdx.x) + 16 * (long long)blockIdx.x - 1 >= 0 &&" in d.apply(halo)
    wide = (UNSTAGE / "size_t_local.cu").read_text()
    (d,) = _run("unstage", wide)
    assert "(long long)" in d.apply(wide)
    # An int tile filled with `: 0.0f`: the read stays an int.
    typed = (UNSTAGE / "int_tile_float_zero.cu").read_text()
    (d,) = _run("unstage", typed)
    assert "((int)(" in d.apply(typed)
    # An outer `if` guards the fill too: both conditions guard the read.
    nested = (UNSTAGE / "nested_guard.cu").read_text()
    (d,) = _run("unstage", nested)
    assert "(long long)(threadIdx.y) < 32 && (long long)(threadIdx.x) < (long long)m ?" in d.apply(nested)
    # A loop header that counts something else stays (with an empty body); so does a shadowing declarator's scope.
    header = (UNSTAGE / "loop_header_effect.cu").read_text()
    (d,) = _run("unstage", header)
    assert "i += blockDim.x, ++cnt) {}" in d.apply(header)
    shadow = (UNSTAGE / "earlier_declarator.cu").read_text()
    (d,) = _run("unstage", shadow)
    assert "in[(long long)(31 - threadIdx.x) + 32] + base;" in d.apply(shadow)
    # Macro constants fold as C does: (1 - 4) / 2 is -1, not Python's -2.
    division = (UNSTAGE / "macro_division.cu").read_text()
    (d,) = _run("unstage", division)
    assert "in[(long long)(31 - threadIdx.x) - 1]" in d.apply(division)
    # A fill loop whose variable lives on keeps running (with an empty body) for the value it leaves.
    loop = (UNSTAGE / "loopvar_outside.cu").read_text()
    (d,) = _run("unstage", loop)
    assert "for (i = threadIdx.x; i < 64; i += blockDim.x) {}" in d.apply(loop)


def test_unstage_leaves_tiles_read_before_their_barrier_or_written_after_it() -> None:
    early = _STAGED.replace("    __syncthreads();\n    for (int k = 0;", "    acc += As[0][0];\n    __syncthreads();\n"
                            "    for (int k = 0;")  # fmt: skip
    assert "unstage:shared:As" not in [d.key for d in _run("unstage", early)]
    late = _STAGED.replace("    __syncthreads();\n  }", "    As[0][0] = 1.0f;\n    __syncthreads();\n  }")
    assert "unstage:shared:As" not in [d.key for d in _run("unstage", late)]


def test_a_failing_pass_is_skipped(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from warpwise.lineages import deopt

    def boom(src: KernelSource) -> list[Deopt]:
        raise RuntimeError("boom")

    broken = deopt.DeoptPass("broken", "nothing", boom)
    text = "__global__ void k(const float* __restrict__ x, float* y) { y[0] = x[0]; }"
    found = candidates(KernelSource.parse(text, "k"), [broken, deopt.pass_by_id("read-only")])
    assert [d.key for d in found] == ["read-only:restrict"]
    assert "broken" in caplog.text
