"""The kernel model on fixture files: each element of the model, including the awkward cases."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests.conftest import CUDA_VALID
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import AccessKind, AccessPattern, FileModel, FunctionKind, MemorySpace


def load(name: str) -> FileModel:
    return analyze_text((CUDA_VALID / name).read_bytes(), name)


@pytest.fixture(scope="module")
def templates() -> FileModel:
    return load("templates_and_params.cu")


@pytest.fixture(scope="module")
def loops() -> FileModel:
    return load("shared_and_loops.cu")


@pytest.fixture(scope="module")
def accesses() -> FileModel:
    return load("accesses.cu")


@pytest.fixture(scope="module")
def nasty() -> FileModel:
    return load("nasty.cu")


def test_function_kinds_and_names(templates: FileModel, nasty: FileModel) -> None:
    kinds = {f.name: f.kind for f in templates.functions}
    assert kinds == {
        "square": FunctionKind.DEVICE,
        "sum_squares": FunctionKind.KERNEL,
        "launch_sum_squares": FunctionKind.HOST,
    }
    assert [k.name for k in nasty.kernels] == ["apply", "k_a", "k_b"]
    assert nasty.function("operator()") is not None
    assert nasty.function("operator()").kind is FunctionKind.DEVICE


def test_template_params_launch_bounds_and_binding(templates: FileModel) -> None:
    k = templates.function("sum_squares")
    assert [(t.name, t.kind, t.default) for t in k.template_params] == [
        ("T", "type", None),
        ("BLOCK", "value", "256"),
    ]
    assert k.launch_bounds == ("BLOCK",)
    assert dict(k.template_binding) == {"T": "float", "BLOCK": "256"}
    (partial,) = k.shared
    assert partial.element_type == "float" and partial.element_bytes == 4 and partial.dim_values == (256,)


def test_params_qualifiers(templates: FileModel) -> None:
    k = templates.function("sum_squares")
    p = {p.name: p for p in k.params}
    assert (p["in"].is_const, p["in"].is_restrict, p["in"].pointer_depth) == (True, True, 1)
    assert (p["out"].is_const, p["out"].is_restrict) == (False, False)
    assert p["scratch"].is_restrict and not p["scratch"].is_const
    assert p["n"].pointer_depth == 0 and p["n"].type == "int"
    assert templates.slice(k, p["in"].span) == "const T* __restrict__ in"


def test_shared_memory(loops: FileModel) -> None:
    k = loops.function("stencil")
    tile, halo = k.shared
    assert (tile.name, tile.dims, tile.dim_values, tile.is_extern, tile.size_bytes) == (
        "tile",
        ("TILE", "TILE + 1"),
        (16, 17),
        False,
        16 * 17 * 4,
    )
    assert (halo.name, halo.is_extern, halo.size_bytes) == ("halo", True, None)


def test_loops(loops: FileModel) -> None:
    k = loops.function("stencil")
    got = [(lp.kind, lp.var, lp.trip_count, lp.unroll) for lp in k.loops]
    assert got == [
        ("for", "k", 8, "unroll"),
        ("for", "k", None, "unroll 4"),
        ("while", None, None, None),
        ("do", None, None, None),
        ("for", "k", 7, None),
    ]
    first, second = k.loops[0], k.loops[1]
    assert (first.init_value, first.bound, first.bound_value, first.step_value) == (0, "kSteps", 8, 1)
    assert (second.bound, second.step_value, second.compare) == ("n", 2, "<")
    assert k.loops[2].condition == "s > 0"


def test_nested_loop_parents() -> None:
    src = b"""
__global__ void k(float* a, int n) {
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < n; ++j) {
      a[i * n + j] = 0.0f;
    }
  }
}"""
    k = analyze_text(src).function("k")
    outer, inner = k.loops
    assert (outer.parent, outer.depth, inner.parent, inner.depth) == (None, 0, 0, 1)
    assert k.accesses[0].loops == (0, 1)
    assert {"j", "i"} <= inner.assigned | outer.assigned


@pytest.mark.parametrize(
    ("index", "pattern", "stride"),
    [
        ("tid", AccessPattern.CONTIGUOUS, Fraction(1)),
        ("tid * 4", AccessPattern.STRIDED, Fraction(4)),
        ("blockIdx.x", AccessPattern.UNIFORM, Fraction(0)),
        ("idx[tid]", AccessPattern.INDIRECT, None),
        ("warp * 32 + lane", AccessPattern.CONTIGUOUS, Fraction(1)),
    ],
)
def test_access_patterns(accesses: FileModel, index: str, pattern: AccessPattern, stride: Fraction | None) -> None:
    k = accesses.function("patterns")
    acc = next(a for a in k.accesses if a.base == "a" and a.index == index and not a.vector_cast)
    assert acc.pattern is pattern
    assert acc.stride == stride
    assert acc.space is MemorySpace.GLOBAL and acc.width == 4


def test_symbolic_stride_vector_casts_and_special_paths(accesses: FileModel) -> None:
    k = accesses.function("patterns")
    sym = next(a for a in k.accesses if a.index == "tid * stride")
    assert sym.pattern is AccessPattern.STRIDED and sym.stride is None and sym.stride_text == "stride"
    vec = next(a for a in k.accesses if a.vector_cast)
    assert (vec.base, vec.width, vec.element_type) == ("a", 16, "float4")
    ldg = next(a for a in k.accesses if a.base == "w")
    assert ldg.via_ldg and ldg.kind is AccessKind.READ
    const = next(a for a in k.accesses if a.base == "coeffs")
    assert const.space is MemorySpace.CONSTANT
    atomic = next(a for a in k.accesses if a.base == "hist")
    assert atomic.kind is AccessKind.ATOMIC and atomic.pattern is AccessPattern.INDIRECT
    alias = next(a for a in k.accesses if a.array == "row")
    assert alias.base == "a" and alias.pattern is AccessPattern.CONTIGUOUS
    writes = {a.base for a in k.accesses if a.kind is AccessKind.WRITE}
    assert writes == {"b", "v"}


def test_device_helper_pointers_are_not_assumed_global() -> None:
    src = b"__device__ void h(float* s) { s[threadIdx.x] = 0.0f; }"
    (acc,) = analyze_text(src).function("h").accesses
    assert acc.space is MemorySpace.UNKNOWN


def test_calls_sync_atomic_warp_math(accesses: FileModel, loops: FileModel, nasty: FileModel) -> None:
    shuffle = accesses.function("shuffle_sum")
    cats = {(c.category, c.name) for c in shuffle.calls}
    assert {
        ("warp", "__shfl_down_sync"),
        ("warp", "__ballot_sync"),
        ("math", "expf"),
        ("math", "__expf"),
    } <= cats
    assert {c.name for c in loops.function("stencil").calls_of("sync")} == {"__syncthreads", "__syncwarp"}
    assert [c.name for c in nasty.function("apply").calls_of("sync")] == ["block.sync"]
    assert [c.name for c in accesses.function("patterns").calls_of("atomic")] == ["atomicAdd"]
    assert [c.name for c in accesses.function("halves").calls_of("math")] == ["__hmul2"]


def test_branches_and_lane_patterns() -> None:
    src = b"""
__global__ void k(float* a, int n) {
  if (threadIdx.x % 2 == 0) a[threadIdx.x] = 1.0f;
  if (blockIdx.x == 0) a[0] = 2.0f;
  if (threadIdx.x >= n) return;
  __syncthreads();
}"""
    k = analyze_text(src).function("k")
    by_cond = {b.condition: b for b in k.branches}
    assert by_cond["threadIdx.x % 2 == 0"].lane_pattern == "lanes alternate with period 2"
    assert not by_cond["blockIdx.x == 0"].thread_dependent
    assert by_cond["threadIdx.x >= n"].thread_dependent and by_cond["threadIdx.x >= n"].has_return


def test_launches(templates: FileModel, loops: FileModel, nasty: FileModel) -> None:
    (launch,) = templates.function("launch_sum_squares").launches
    assert (launch.kernel, launch.template_args, launch.block_value, launch.stream) == (
        "sum_squares",
        ("float", "threads"),
        (256, 1, 1),
        "stream",
    )
    assert launch.template_values == ("float", "256")
    assert launch.args == ("in", "out", "n", "scratch")
    (stencil,) = loops.launches_of("stencil")
    assert stencil[1].block_value == (16, 16, 1) and stencil[1].smem_value == 64
    kernels = [launch.kernel for _, launch in nasty.launches]
    # The launch written inside the LAUNCH_1D macro body is not visible to the parser.
    assert kernels == ["apply", "k_a"]
    apply = nasty.launches_of("apply")[0][1]
    assert apply.block_value == (128, 1, 1) and apply.grid_value is None and apply.stream == "s1"


def test_ranges_are_lsp_positions_with_utf16_columns() -> None:
    src = "// ünïcödé 😀 comment\n__global__ void k(float* a) { /* é */ a[threadIdx.x] = 1.0f; }\n"
    model = analyze_text(src)
    k = model.function("k")
    rng = model.range(k, k.accesses[0].span)
    line = src.splitlines()[1]
    assert rng.start.line == 1
    assert rng.start.character == len(line[: line.index("a[")].encode("utf-16-le")) // 2
    first = model.lines.position(src.encode().index(b"comment"))
    assert first.character == len("// ünïcödé 😀 ".encode("utf-16-le")) // 2


def test_multiple_kernels_same_file_keep_their_own_facts(nasty: FileModel) -> None:
    a, b = nasty.function("k_a"), nasty.function("k_b")
    assert a.accesses[0].pattern is AccessPattern.CONTIGUOUS
    assert b.accesses[0].pattern is AccessPattern.STRIDED and b.accesses[0].stride == 2
