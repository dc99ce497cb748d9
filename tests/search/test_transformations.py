"""Transformation actions: each parameter choice of a transformation card is one search action."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT
from warpwise.search.cards import CardActions
from warpwise.search.context import SearchContext
from warpwise.search.transformations import TransformationActions
from warpwise.search.version import Version
from warpwise.skills.library import builtin_library
from warpwise.verify.spec import ProblemSpec, resolve_spec

OOD = ROOT / "bench" / "suite_ood"


def context(path: Path, kernel: str) -> tuple[SearchContext, Version]:
    text = path.read_text()
    spec = resolve_spec(str(path), text, kernel)
    return SearchContext(
        str(path), kernel, spec if isinstance(spec, ProblemSpec) else None, library=builtin_library()
    ), Version(text)


def _geometry(override, grid: tuple[int, int, int], block: tuple[int, int, int]) -> tuple:
    ns: dict = {"launch": lambda inputs: (grid, block)}
    exec(compile(override.source(), "launch.py", "exec"), ns)
    return ns["launch_candidate"]({})


def test_each_row_mapping_is_an_action_with_its_launch_override() -> None:
    ctx, v = context(OOD / "softmax" / "row_per_thread.cu", "softmax_row_per_thread")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    warp = acts["transform:row-cooperative-reduction:warp per row x4"].produce()
    block = acts["transform:row-cooperative-reduction:block of 512 per row"].produce()
    assert warp is not None and block is not None
    assert "blockIdx.x * 4u + threadIdx.x / 32u" in warp.text and "ww_rc_reduce<512>" in block.text
    # The problem file launches 8192 rows as 64 blocks of 128 threads: a warp per row covers them with 2048 blocks
    # of 128 threads, a block per row with 8192 blocks of 512.
    assert _geometry(warp.launch, (64, 1, 1), (128, 1, 1))[:2] == ((2048, 1, 1), (128, 1, 1))
    assert _geometry(block.launch, (64, 1, 1), (128, 1, 1))[:2] == ((8192, 1, 1), (512, 1, 1))
    assert warp.block == (128, 1, 1)
    plain = [a for a in acts if a.startswith("transform:row-cooperative-reduction:") and ", then " not in a]
    assert len(plain) == 7


AUTO_CACHE = "row-register-cache: the row in registers, 8 to 32 elements per lane as it needs"


def test_a_mapping_whose_output_rereads_its_row_is_also_offered_with_the_row_in_registers() -> None:
    from warpwise.analyzers.build import analyze_text

    path = OOD / "layernorm" / "welford_stats.cu"
    ctx, v = context(path, "layernorm_welford")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    first = acts["transform:row-cooperative-reduction:block of 256 per row"]
    pair = acts[f"transform:row-cooperative-reduction:block of 256 per row, then {AUTO_CACHE}"]
    # One composed action per mapping: the row-register-cache card does not match the thread-per-row kernel itself.
    assert not any(a.startswith("transform:row-register-cache:") for a in acts)
    assert len([a for a in acts if a.endswith(AUTO_CACHE)]) == 7
    one, two = first.produce(), pair.produce()
    assert one is not None and two is not None
    # The pair is the mapping's output with the cache card's automatic choice applied, on the mapping's launch.
    rr = builtin_library().get("row-register-cache").rules
    assert two.text.encode() == rr.rewrite_source(analyze_text(one.text.encode(), str(path)), "layernorm_welford")
    assert "ww_rc_welford<256>" in two.text and "if (ww_fit == 16) {" in two.text
    assert two.launch == one.launch and two.block == one.block == (256, 1, 1)
    assert pair.prior >= first.prior and pair.card == "row-cooperative-reduction"


def test_a_block_row_kernel_gets_the_automatic_cache_first() -> None:
    ctx, v = context(ROOT / "bench" / "suite" / "softmax" / "naive.cu", "softmax_naive")
    cache = [a for a in TransformationActions().actions(v, ctx) if a.card == "row-register-cache"]
    best = max(cache, key=lambda a: a.prior)
    assert best.name == "transform:" + AUTO_CACHE.replace(": ", ":", 1)
    assert all(a.prior < best.prior for a in cache if a is not best) and len(cache) == 5


def test_the_plain_card_action_is_not_offered_for_a_problem_file_launch() -> None:
    ctx, v = context(OOD / "softmax" / "row_per_thread.cu", "softmax_row_per_thread")
    names = {a.name for a in CardActions().actions(v, ctx)}
    assert "card:row-cooperative-reduction" not in names


def test_each_tile_and_block_of_the_transpose_is_an_action() -> None:
    ctx, v = context(OOD / "transpose" / "one_d_divmod.cu", "transpose_1d")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    kept = acts["transform:strided-transpose-access:tile 32, launch kept"].produce()
    tiled = acts["transform:strided-transpose-access:tile 64, one 32x8 block per tile"].produce()
    assert kept is not None and tiled is not None
    assert "ww_tile[WW_T][WW_T + 1]" in tiled.text and "WW_T = sizeof(ww_elem) > 8 ? 32 : 64" in tiled.text
    assert kept.launch is None or not kept.launch.transforms
    # One block of 32 x 8 threads per 64 x 64 tile, from the problem's sizes (the original launch is replaced).
    ns: dict = {"launch": lambda inputs: ((1, 1, 1), (512, 1, 1))}
    exec(compile(tiled.launch.source(), "launch.py", "exec"), ns)
    assert ns["launch_candidate"]({"rows": 128, "cols": 200})[:2] == ((2 * 4, 1, 1), (32, 8, 1))
    assert tiled.block == (32, 8, 1)


def test_histogram_variants_divide_the_grid_of_the_coarsened_copy() -> None:
    ctx, v = context(OOD / "histogram" / "float_range_bins.cu", "histogram_float")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    kept = acts["transform:per-thread-global-atomics:private copy, launch kept"].produce()
    coarse = acts["transform:per-thread-global-atomics:private copy, coarsened, grid / 256"].produce()
    assert kept is not None and coarse is not None
    assert "ww_body(blockIdx.x);" in kept.text and "ww_vb < ww_blocks; ww_vb += gridDim.x" in coarse.text
    assert _geometry(coarse.launch, (262144, 1, 1), (256, 1, 1))[:2] == ((1024, 1, 1), (256, 1, 1))


def test_grid_stride_total_is_an_action_that_divides_the_grid() -> None:
    ctx, v = context(OOD / "reduce_sum" / "strided_index_atomic.cu", "sum_strided_index")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    act = acts["transform:grid-stride-atomic-total:grid / 128"]
    child = act.produce()
    assert child is not None and "ww_acc" in child.text
    # The problem file launches 2^26 / 512 blocks of 512; the version launches 128 times fewer, blocks unchanged.
    assert _geometry(child.launch, (131072, 1, 1), (512, 1, 1))[:2] == ((1024, 1, 1), (512, 1, 1))
    assert child.block is None  # the block is unchanged


def test_row_register_cache_offers_each_cache_size_with_the_launch_unchanged() -> None:
    ctx, v = context(OOD / "softmax" / "block_row_while.cu", "softmax_block_row")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    names = sorted(a for a in acts if a.startswith("transform:row-register-cache:"))
    fixed = [f"transform:row-register-cache:{k} elements per lane in registers" for k in (16, 32, 64, 8)]
    assert names == [*fixed, "transform:" + AUTO_CACHE.replace(": ", ":", 1)]
    child = acts["transform:row-register-cache:64 elements per lane in registers"].produce()
    assert child is not None and "ww_row0[64]" in child.text
    assert _geometry(child.launch, (1, 8192, 1), (128, 1, 1))[:2] == ((1, 8192, 1), (128, 1, 1))
