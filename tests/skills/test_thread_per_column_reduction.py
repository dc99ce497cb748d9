"""The thread-per-column-reduction card (skills/thread-per-column-reduction/): recogniser, rewrite, launches, GPU.

The card's fixtures run through tests/skills/test_cards.py like every card's; here: what the recogniser reads from
the naive suites' column kernels and what it leaves to the row-cooperative card, why each near miss is refused,
that every slice count compiles for every style, that the launch changes cover the same threads (2-D blocks
included) with 32 outputs a block, that the search's launch step is those changes, and (on a GPU) that the gate
finds each rewrite of the suites' kernels correct.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library
from warpwise.verify.launch import problem_source

FOLDER = BUILTIN_CARDS / "thread-per-column-reduction"
FIXTURES = FOLDER / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
_card = builtin_library().get("thread-per-column-reduction")
assert _card is not None and _card.rules is not None, "the thread-per-column-reduction card did not load"
cc = _card.rules

# Kernels of the naive suites the card must recognise, and what it reads there.
SUITE_KERNELS = {
    "bench/suite/gemv_colmajor/naive.cu": "sum of `sum`",
    "bench/suite_ood/gemv/transposed_2d_block.cu": "sum of `sum`",  # a 1-D grid of (32, 4) blocks
    "bench/suite_ood/column_sums/thread_per_col.cu": "sum of `s`",
}
# Row kernels it leaves to the row-cooperative card (their loads are a row apart across threads).
ROW_KERNELS = [
    "bench/suite/gemv/naive.cu",
    "bench/suite_ood/softmax/row_per_thread.cu",
    "bench/suite_ood/column_sums/colmajor_mean.cu",
    "bench/suite_ood/layernorm/welford_stats.cu",
]


def _kernel(path: Path):
    model = analyze_text(path.read_bytes(), str(path))
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
    return model, fn


@pytest.mark.parametrize("rel", sorted(SUITE_KERNELS))
def test_recognises_the_suites_column_kernels(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    ck, why = cc.recognise(model, fn)
    assert ck is not None, why
    assert ck.summary == SUITE_KERNELS[rel]


@pytest.mark.parametrize("rel", ROW_KERNELS)
def test_leaves_row_walks_to_the_row_card(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    ck, why = cc.recognise(model, fn)
    assert ck is None and why


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("neg_*.cu")), ids=lambda p: p.name)
def test_near_misses_say_why(path: Path) -> None:
    model, fn = _kernel(path)
    ck, why = cc.recognise(model, fn)
    assert ck is None and why
    first = path.read_text().splitlines()[0]
    assert first.startswith("// near miss:"), "each near miss says what it tests"
    assert first.split("expect:", 1)[1].strip() in why, why


def test_every_slice_count_compiles_for_every_style() -> None:
    files = sorted(p for p in FIXTURES.glob("pos_*.cu") if not p.name.endswith(".expected.cu"))
    files += [ROOT / rel for rel in SUITE_KERNELS]
    sources = []
    for path in files:
        model, fn = _kernel(path)
        for slices in cc.SLICE_CHOICES:
            out = cc.rewrite_source(model, fn.name, slices)
            assert out is not None, (path.name, slices)
            sources.append(out)
    bad = [log for ok, log in compile_many(sources) if not ok]
    assert not bad, bad[0]


def test_rewrite_keeps_the_tail_as_written_and_converges() -> None:
    model, fn = _kernel(ROOT / "bench/suite/gemv_colmajor/naive.cu")
    out = cc.rewrite_source(model, fn.name, 16)
    assert out is not None
    text = out.decode()
    assert "if ((long long)blockIdx.x * 32 + 32 <= (long long)(rows)) {" in text
    assert "for (int j = (0) + ww_slice; j < cols; j += 16) sum += A[j * rows + i] * x[j];" in text
    assert "sum = ww_cs_reduce<16>(sum, ww_cs_add());" in text
    assert "{ if (ww_slice == 0) { y[i] = sum; } }" in text
    # The partial block runs the kernel's own loop, one thread per output.
    assert "} else if (ww_slice == 0) {" in text
    assert "for (int j = 0; j < cols; ++j) sum += A[j * rows + i] * x[j];" in text
    after = analyze_text(out)
    new = next(f for f in after.functions if f.kind is FunctionKind.KERNEL)
    assert [p.name for p in new.params] == [p.name for p in fn.params]
    assert cc.recognise(after, new)[0] is None


def test_a_sum_that_starts_at_a_bias_is_set_aside() -> None:
    model, fn = _kernel(FIXTURES / "pos_transposed_2d_block_return.cu")
    out = cc.rewrite_source(model, fn.name, 8)
    assert out is not None
    text = out.decode()
    assert "const auto ww_start0_s = s; s = 0;" in text
    assert "s = ww_start0_s + ww_cs_reduce<8>(s, ww_cs_add());" in text


def test_problem_file_launch_changes_cover_the_same_threads() -> None:
    for rel, inputs in (
        ("bench/suite_ood/gemv/transposed_2d_block", {"K": 70, "M": 1001}),
        ("bench/suite/gemv_colmajor/naive", {"rows": 1001, "cols": 13}),
    ):
        base = (ROOT / f"{rel}.problem.py").read_text()
        ns: dict = {}
        exec(compile(problem_source(base, (), cc.launch_changes(8)), "problem.py", "exec"), ns)
        g0, b0, _ = ns["launch"](inputs)
        grid, block, _ = ns["launch_candidate"](inputs)
        assert block == (256, 1, 1)
        before = g0[0] * b0[0] * b0[1] * b0[2]
        assert grid[0] * 32 >= before and grid[0] * 32 - before < 32


def test_the_search_step_is_the_launch_changes() -> None:
    from warpwise.search.transformations import _transform
    from warpwise.search.version import LaunchOverride

    label, args, steps = cc.search_variants([])[0]
    assert args == {"slices": cc.SLICE_CHOICES[0]} and steps[0][2] == (32 * cc.SLICE_CHOICES[0], 1, 1)
    override = LaunchOverride().then(_transform(steps[0], label))
    assert override.changes() == cc.launch_changes(cc.SLICE_CHOICES[0])
    assert "_grid[0] = int(" in override.source()


def test_host_launch_is_rewritten_to_32_outputs_a_block() -> None:
    model, fn = _kernel(FIXTURES / "pos_colmajor_gemv_host_launch.cu")
    out = cc.rewrite_source(model, fn.name, 32)
    assert out is not None
    text = out.decode()
    assert "dim3(256).x * dim3(256).y * dim3(256).z + 31) / 32)" in text and "dim3(1024)>>>" in text


GPU_CASES = [
    ("bench/suite/gemv_colmajor/naive.cu", "gemv_colmajor_naive", 32),
    ("bench/suite/gemv_colmajor/naive.cu", "gemv_colmajor_naive", 8),
    ("bench/suite_ood/gemv/transposed_2d_block.cu", "gemv_t", 32),
    ("bench/suite_ood/gemv/transposed_2d_block.cu", "gemv_t", 16),
    ("bench/suite_ood/column_sums/thread_per_col.cu", "col_sum", 32),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("rel", "kernel", "slices"), GPU_CASES, ids=[f"{c[1]}-s{c[2]}" for c in GPU_CASES])
def test_gate_finds_the_rewrite_correct(rel: str, kernel: str, slices: int) -> None:
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    model = analyze_text(original.encode(), str(path))
    cand = cc.rewrite_source(model, kernel, slices)
    assert cand is not None
    spec = changed_problem_spec(str(path), original, kernel, cc.launch_changes(slices))
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
