"""The block-partials-few-per-thread card (skills/block-partials-few-per-thread/): recogniser, rewrite, launch, GPU.

Fixtures run through tests/skills/test_cards.py and tests/metamorphic; here: which kernels of the suites it takes
(per-block partials) and leaves to grid-stride-atomic-total (single atomic totals), why each near miss is refused,
that the suite's problem files launch one block per segment (the precondition that the number of partials is
ceil(n / S)), that the launch change divides the grid, that the float4 path is guarded by an alignment check, and
(on a GPU) the gate's verdict against the naive kernel.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library
from warpwise.verify.launch import problem_source

FIXTURES = BUILTIN_CARDS / "block-partials-few-per-thread" / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
_card = builtin_library().get("block-partials-few-per-thread")
assert _card is not None and _card.rules is not None, "the block-partials-few-per-thread card did not load"
bp_rules = _card.rules

# The suite's kernels of per-block partials: (output, elements per thread).
TAKEN = {
    "bench/suite_ood/reduce_sum/interleaved_partials.cu": ("g_odata", 1),
    "bench/suite_ood/reduce_sum/sequential_two_loads.cu": ("partial", 2),
}
REFUSED = {
    "bench/suite/sum/naive.cu": "the kernel has an atomic",
    "bench/suite_ood/reduce_sum/strided_index_atomic.cu": "the kernel has an atomic",
}


def _kernel(path: Path):
    model = analyze_text(path.read_bytes(), str(path))
    return model, next(f for f in model.functions if f.kind is FunctionKind.KERNEL)


class _Sized:
    """Stands in for a tensor in a problem file's `launch` (only `numel()` is read)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def numel(self) -> int:
        return self.n


@pytest.mark.parametrize("rel", sorted(TAKEN))
def test_takes_per_block_partials(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    bp, why = bp_rules.recognise(model, fn)
    assert bp is not None, why
    assert (bp.output, bp.loads) == TAKEN[rel] and bp.source_is_float


@pytest.mark.parametrize("rel", sorted(REFUSED))
def test_leaves_atomic_totals_to_the_grid_stride_card(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    bp, why = bp_rules.recognise(model, fn)
    assert bp is None and REFUSED[rel] in why


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("neg_*.cu")), ids=lambda p: p.name)
def test_near_misses_say_why(path: Path) -> None:
    model, fn = _kernel(path)
    bp, why = bp_rules.recognise(model, fn)
    assert bp is None and why
    lines = path.read_text().splitlines()
    assert lines[0].startswith("// near miss:")
    expected = next(ln for ln in lines if ln.startswith("// expect:")).split("expect:", 1)[1].strip()
    assert expected in why, why


def _problem(rel: str, changes: Any = ()) -> dict[str, Any]:
    problem = (ROOT / rel).with_name(Path(rel).stem + ".problem.py")
    ns: dict[str, Any] = {}
    exec(compile(problem_source(problem.read_text(), (), changes), str(problem), "exec"), ns)
    return ns


@pytest.mark.parametrize("rel", sorted(TAKEN))
def test_problem_launches_one_block_per_segment(rel: str) -> None:
    """The precondition `grid-is-the-partials`: the problem's grid is ceil(n / S) for every preset."""
    model, fn = _kernel(ROOT / rel)
    bp, _ = bp_rules.recognise(model, fn)
    assert bp is not None
    ns = _problem(rel)
    out = bp.output
    for n in ns["SIZES"].values():
        grid, block, *_ = ns["launch"]({"n": n, out: _Sized(0)})
        segment = bp.loads * block[0]
        assert block[0] % 32 == 0
        assert grid[0] == math.ceil(n / segment), (n, grid, segment)


def test_rewrite_is_a_warp_per_partial_with_an_alignment_checked_float4_path() -> None:
    rel = "bench/suite_ood/reduce_sum/sequential_two_loads.cu"
    model, fn = _kernel(ROOT / rel)
    out = bp_rules.rewrite_source(model, fn.name)
    assert out is not None
    text = out.decode()
    assert "const long long ww_seg = (long long)(2 * blockDim.x);" in text
    assert "if ((((unsigned long long)(x) & 15ull) == 0ull) && (ww_seg % 4 == 0)) {" in text
    assert "if (ww_lane == 0) partial[ww_p] = ww_acc;" in text and "__shfl_down_sync" in text
    assert "__syncthreads" not in text and "atomic" not in text
    assert text.startswith("// Reduction with sequential addressing")
    again, why = bp_rules.recognise(analyze_text(out), fn)
    assert again is None and why


def test_double_has_no_float4_path() -> None:
    model, fn = _kernel(FIXTURES / "pos_macro_typedef_double.cu")
    out = bp_rules.rewrite_source(model, fn.name)
    assert out is not None
    assert b"float4" not in out and b"ww_acc += values[ww_j];" in out and b"(long long)(128)" in out


def test_launch_change_divides_the_grid() -> None:
    rel = "bench/suite_ood/reduce_sum/interleaved_partials.cu"
    ns = _problem(rel, bp_rules.launch_changes(32))
    grid, block, smem = ns["launch_candidate"]({"n": 1 << 26, "g_odata": _Sized(0)})
    assert grid == ((1 << 18) // 32, 1, 1) and block == (256, 1, 1) and smem == 1024


def test_search_variants_divide_the_grid() -> None:
    variants = bp_rules.search_variants([])
    assert [v[2] for v in variants] == [[("grid_div", f)] for f in bp_rules.GRID_FACTORS]


@pytest.mark.gpu
@pytest.mark.parametrize("factor", [1, 32])
@pytest.mark.parametrize("rel", sorted(TAKEN))
def test_gate_finds_the_rewrite_correct(rel: str, factor: int) -> None:
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    model, fn = _kernel(path)
    cand = bp_rules.rewrite_source(model, fn.name)
    assert cand is not None
    spec = changed_problem_spec(str(path), original, fn.name, bp_rules.launch_changes(factor))
    assert spec is not None
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, fn.name, cand.decode(), str(path), None, spec=spec),
            Options(seeds=(0, 1, 2), time_limit_s=60.0),
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)


def test_typedef_of_float_keeps_the_float4_path() -> None:
    source = (FIXTURES / "pos_interleaved_unsigned.cu").read_text().replace("float", "elem_t")
    model = analyze_text(("typedef float elem_t;\n" + source).encode())
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
    bp, why = bp_rules.recognise(model, fn)
    assert bp is not None, why
    assert bp.elem_type == "elem_t" and bp.source_is_float
