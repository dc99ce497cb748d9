"""The row-cooperative-reduction card (skills/row-cooperative-reduction/): recogniser, rewrite, launches, GPU.

The card's fixtures (`pos_*` in many styles with their expected rewrites, `neg_*` near misses) run through
tests/skills/test_cards.py like every card's; here: what the recogniser reads from each style and from the naive
suites' kernels, why each near miss is refused, that every mapping compiles for every style, that the launch
changes are a grid over rows, and (on a GPU) that the gate finds each rewrite of the suites' kernels correct.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library
from warpwise.verify.launch import problem_source

FOLDER = BUILTIN_CARDS / "row-cooperative-reduction"
FIXTURES = FOLDER / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
_card = builtin_library().get("row-cooperative-reduction")
assert _card is not None and _card.rules is not None, "the row-cooperative-reduction card did not load"
rc = _card.rules

# Kernels of the naive suites the card must recognise, and what it reads there.
SUITE_KERNELS = {
    "bench/suite/cross_entropy/naive.cu": "max of `m`, sum of `s`",
    "bench/suite/gemv/naive.cu": "sum of `sum`",
    "bench/suite_ood/batched_gemv_bias/per_batch_divmod.cu": "sum of `s`",
    "bench/suite_ood/batched_gemv_bias/shared_weight_2d.cu": "sum of `acc`",
    "bench/suite_ood/column_sums/colmajor_mean.cu": "sum of `acc`",  # the row index is read through `IDX2C`
    "bench/suite_ood/cross_entropy/online_ignore_index.cu": "online max-and-sum of `m`, `s`",
    "bench/suite_ood/cross_entropy/row_per_thread.cu": "max of `mx`, sum of `s`",
    "bench/suite_ood/gemv/row_per_thread_alpha_beta.cu": "sum of `dot`",
    "bench/suite_ood/layernorm/row_per_thread.cu": "sum of `mean`, sum of `var`",
    "bench/suite_ood/layernorm/welford_stats.cu": "Welford mean and M2 of `mean`, `m2`",
    "bench/suite_ood/masked_softmax/lengths_2d_typedef.cu": "max of `mx`, sum of `sum`",
    "bench/suite_ood/masked_softmax/row_per_thread_mask.cu": "max of `best`, sum of `total`",
    "bench/suite_ood/rmsnorm_residual/inplace_row_per_thread.cu": "sum of `ss`",
    "bench/suite_ood/rmsnorm_residual/macro_hidden_out.cu": "sum of `ss`",
    "bench/suite_ood/softmax/online_macro_cols.cu": "online max-and-sum of `m`, `d`",
    "bench/suite_ood/softmax/row_per_thread.cu": "max of `mx`, sum of `s`",
}
# Kernels of the suites it must refuse, and a word of the reason.
SUITE_REFUSED = {
    "bench/suite/scan_rows/naive.cu": "running value",  # a prefix sum: the carried value is read in the loop
    "bench/suite_ood/column_sums/thread_per_col.cu": "contiguously",  # a thread per column is coalesced already
    "bench/suite/softmax/naive.cu": "shared memory",  # already cooperative
}


def _kernel(path: Path):
    model = analyze_text(path.read_bytes(), str(path))
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
    return model, fn


def test_card_loads_from_its_folder() -> None:
    assert _card is not None and _card.has_rewrite
    assert _card.path.endswith("row-cooperative-reduction/card.md")


@pytest.mark.parametrize("rel", sorted(SUITE_KERNELS))
def test_recognises_the_suites_row_kernels(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    rk, why = rc.recognise(model, fn)
    assert rk is not None, why
    assert rk.summary == SUITE_KERNELS[rel]


@pytest.mark.parametrize("rel", sorted(SUITE_REFUSED))
def test_refuses_what_is_not_a_row_reduction(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    rk, why = rc.recognise(model, fn)
    assert rk is None
    assert SUITE_REFUSED[rel] in why


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("neg_*.cu")), ids=lambda p: p.name)
def test_near_misses_say_why(path: Path) -> None:
    model, fn = _kernel(path)
    rk, why = rc.recognise(model, fn)
    assert rk is None and why
    first = path.read_text().splitlines()[0]
    assert first.startswith("// near miss:"), "each near miss says what it tests"
    expected = first.split("expect:", 1)[1].strip()
    assert expected in why, why


def test_every_mapping_compiles_for_every_style() -> None:
    sources = []
    files = sorted(p for p in FIXTURES.glob("pos_*.cu") if not p.name.endswith(".expected.cu"))
    files += [ROOT / rel for rel in SUITE_KERNELS]
    for i, path in enumerate(files):
        model, fn = _kernel(path)
        # Every mapping on the first files, a warp and a block per row on the others (nvcc costs a second a file).
        for mp in rc.MAPPING_CHOICES if i < 2 else (rc.Mapping("warp", 4), rc.Mapping("block", threads=256)):
            out = rc.rewrite_source(model, fn.name, mp)
            assert out is not None, (path.name, mp)
            sources.append(out)
    results = compile_many(sources)
    bad = [log for ok, log in results if not ok]
    assert not bad, bad[0]


def test_rewrite_converges_and_keeps_the_signature() -> None:
    model, fn = _kernel(ROOT / "bench/suite_ood/softmax/row_per_thread.cu")
    out = rc.rewrite_source(model, fn.name, rc.Mapping("warp", 8))
    assert out is not None
    after = analyze_text(out)
    new = next(f for f in after.functions if f.kind is FunctionKind.KERNEL)
    assert [p.name for p in new.params] == [p.name for p in fn.params]
    rk, why = rc.recognise(after, new)
    assert rk is None and why
    assert out.count(b"ww_rc_reduce<32>") == 2
    assert b"blockIdx.x * 8u + threadIdx.x / 32u" in out


def test_sum_that_does_not_start_at_zero_is_set_aside() -> None:
    model, fn = _kernel(ROOT / "bench/suite_ood/batched_gemv_bias/shared_weight_2d.cu")
    out = rc.rewrite_source(model, fn.name)
    assert out is not None
    text = out.decode()
    assert "const auto ww_start0_acc = acc; acc = 0;" in text
    assert "acc = ww_start0_acc + ww_rc_reduce<32>(acc, ww_rc_add());" in text


def test_welford_lanes_count_their_own_elements_and_combine_by_chan() -> None:
    model, fn = _kernel(ROOT / "bench/suite_ood/layernorm/welford_stats.cu")
    out = rc.rewrite_source(model, fn.name, rc.Mapping("block", threads=256))
    assert out is not None
    text = out.decode()
    # The divisor `k + 1` (elements seen by the one thread) becomes the lane's own count.
    assert "mean += delta / ww_n0;" in text and "delta / (k + 1)" not in text
    assert "int ww_n0 = 0;" in text and "{ ww_n0 += 1;" in text
    assert "ww_rc_welford<256>(ww_n0, mean, m2);" in text
    assert text.count("#define WARPWISE_ROW_COOPERATIVE_WELFORD") == 1
    # A kernel with its own counter keeps it: the combined count is the row's.
    model, fn = _kernel(FIXTURES / "pos_welford_counter_uint.cu")
    out = rc.rewrite_source(model, fn.name)
    assert out is not None and b"ww_rc_welford<32>(count, avg, sq);" in out and b"ww_n0" not in out


def test_host_launch_is_rewritten_to_a_grid_over_rows() -> None:
    src = (FIXTURES / "pos_host_launch.cu").read_bytes()
    model = analyze_text(src)
    out = rc.rewrite_source(model, "row_sums", rc.Mapping("warp", 4))
    assert out is not None
    text = out.decode()
    assert "<<<dim3((unsigned)(((unsigned long long)dim3((n + 255) / 256).x * dim3(256).x + 3) / 4)" in text
    assert "dim3(128)>>>" in text


def test_problem_file_launch_changes_cover_the_same_rows() -> None:
    base = (ROOT / "bench/suite_ood/softmax/row_per_thread.problem.py").read_text()
    for mp, block in ((rc.Mapping("warp", 4), 128), (rc.Mapping("block", threads=512), 512)):
        changes = rc.launch_changes(mp)
        ns: dict = {}
        exec(compile(problem_source(base, (), changes), "problem.py", "exec"), ns)
        inputs = {"n_rows": 1001, "n_cols": 7}
        grid, blk, _ = ns["launch_candidate"](inputs)
        assert blk == (block, 1, 1)
        rows_covered = grid[0] * mp.rows
        assert rows_covered >= 1001 and rows_covered - 1001 < max(mp.rows, 128)
        assert ns["launch"](inputs)[1] == (128, 1, 1)


def test_problem_launch_changes_follow_the_card_mapping() -> None:
    from warpwise.skills.engine import match_file

    src = (ROOT / "bench/suite_ood/gemv/row_per_thread_alpha_beta.cu").read_bytes()
    found = match_file(analyze_text(src), enabled={"row-cooperative-reduction"})
    assert len(found) == 1
    changes = rc.problem_launch_changes(found)
    assert [(c.part, c.axis, c.python) for c in changes][:2] == [
        ("grid", 0, "-(-(value * g[1][0]) // 4)"),
        ("block", 0, "128"),
    ]


GPU_CASES = [
    ("bench/suite_ood/softmax/online_macro_cols.cu", "softmax_online", rc.Mapping("warp", 4)),
    ("bench/suite_ood/layernorm/row_per_thread.cu", "layernorm_row_per_thread", rc.Mapping("block", threads=256)),
    ("bench/suite_ood/rmsnorm_residual/macro_hidden_out.cu", "fused_add_rms_norm", rc.Mapping("block", threads=1024)),
    ("bench/suite_ood/cross_entropy/online_ignore_index.cu", "xent_online", rc.Mapping("warp", 2)),
    # The row index is read through the function-like macro `IDX2C` (issue 19).
    ("bench/suite_ood/column_sums/colmajor_mean.cu", "column_mean_colmajor", rc.Mapping("warp", 4)),
    # Welford's running mean and M2, combined across lanes and warps with Chan's formulas (issue 19).
    ("bench/suite_ood/layernorm/welford_stats.cu", "layernorm_welford", rc.Mapping("warp", 4)),
    ("bench/suite_ood/layernorm/welford_stats.cu", "layernorm_welford", rc.Mapping("block", threads=512)),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("rel", "kernel", "mapping"), GPU_CASES, ids=[f"{c[1]}-{c[2].mode}{c[2].lanes}" for c in GPU_CASES]
)
def test_gate_finds_the_rewrite_correct(rel: str, kernel: str, mapping) -> None:
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    model = analyze_text(original.encode(), str(path))
    cand = rc.rewrite_source(model, kernel, mapping)
    assert cand is not None
    spec = changed_problem_spec(str(path), original, kernel, rc.launch_changes(mapping))
    assert spec is not None
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, kernel, cand.decode(), str(path), None, spec=spec),
            Options(seeds=(0, 1, 2), time_limit_s=60.0),
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)


def test_annotation_launch_is_rewritten_and_still_resolves() -> None:
    from warpwise.verify.spec import ProblemSpec, resolve_spec

    path = FIXTURES / "pos_annotation_launch.cu"
    model = analyze_text(path.read_bytes(), str(path))
    out = rc.rewrite_source(model, "xent", rc.Mapping("warp", 4))
    assert out is not None
    before = resolve_spec(str(path), path.read_text(), "xent")
    after = resolve_spec(str(path), out.decode(), "xent")
    assert isinstance(before, ProblemSpec) and isinstance(after, ProblemSpec), after
    g0, g1 = before.run.original_geometry, after.run.original_geometry
    assert g1.block == (128, 1, 1)
    assert g1.grid[0] * 4 == g0.grid[0] * g0.block[0]  # the same rows, four a block
    assert out.index(b"WARPWISE_ROW_COOPERATIVE_HELPERS") < out.index(b"// warpwise:")


def test_a_two_dimensional_annotated_block_is_not_rewritten() -> None:
    src = (FIXTURES / "pos_annotation_launch.cu").read_text().replace("block=128", "block=64,2")
    model = analyze_text(src.encode())
    assert rc.rewrite_source(model, "xent") is None
