"""The grid-stride-atomic-total card (skills/grid-stride-atomic-total/): recogniser, rewrite, launch change, GPU.

Fixtures run through tests/skills/test_cards.py and tests/metamorphic; here: which kernels of the suites it takes
(single atomic totals) and refuses (per-block partials), why each near miss is refused, that the launch change
divides the grid, that the float4 path is guarded by an alignment check, and (on a GPU) the gate's verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library
from warpwise.verify.launch import problem_source

FIXTURES = BUILTIN_CARDS / "grid-stride-atomic-total" / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
_card = builtin_library().get("grid-stride-atomic-total")
assert _card is not None and _card.rules is not None, "the grid-stride-atomic-total card did not load"
gs = _card.rules

TAKEN = {"bench/suite/sum/naive.cu": "out", "bench/suite_ood/reduce_sum/strided_index_atomic.cu": "total"}
REFUSED = {
    "bench/suite_ood/reduce_sum/interleaved_partials.cu": "partials are an output",
    "bench/suite_ood/reduce_sum/sequential_two_loads.cu": "partials are an output",
}


def _kernel(path: Path):
    model = analyze_text(path.read_bytes(), str(path))
    return model, next(f for f in model.functions if f.kind is FunctionKind.KERNEL)


@pytest.mark.parametrize("rel", sorted(TAKEN))
def test_takes_single_atomic_totals(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    at, why = gs.recognise(model, fn)
    assert at is not None, why
    assert at.total == TAKEN[rel] and at.source_is_float_param


@pytest.mark.parametrize("rel", sorted(REFUSED))
def test_refuses_per_block_partials(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    at, why = gs.recognise(model, fn)
    assert at is None and REFUSED[rel] in why


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("neg_*.cu")), ids=lambda p: p.name)
def test_near_misses_say_why(path: Path) -> None:
    model, fn = _kernel(path)
    at, why = gs.recognise(model, fn)
    assert at is None and why
    lines = path.read_text().splitlines()
    assert lines[0].startswith("// near miss:")
    expected = next(ln for ln in lines if ln.startswith("// expect:")).split("expect:", 1)[1].strip()
    assert expected in why, why


def test_rewrite_accumulates_with_an_alignment_checked_float4_path() -> None:
    model, fn = _kernel(ROOT / "bench/suite/sum/naive.cu")
    out = gs.rewrite_source(model, fn.name)
    assert out is not None
    text = out.decode()
    assert "if (((unsigned long long)(x) & 15ull) == 0ull) {" in text
    assert "const long long ww_step = (long long)gridDim.x * (long long)(blockDim.x);" in text
    assert "sdata[tid] = ww_acc;" in text and "__shfl_down_sync" in text
    assert "atomicAdd(out, sdata[0]);" in text
    again, _ = gs.recognise(analyze_text(out), fn)
    assert again is None


def test_double_has_no_float4_path() -> None:
    model, fn = _kernel(FIXTURES / "pos_double_sequential.cu")
    out = gs.rewrite_source(model, fn.name)
    assert out is not None and b"reinterpret_cast<const float4" not in out and b"ww_acc += values[ww_j];" in out


def test_launch_change_divides_the_grid() -> None:
    base = (ROOT / "bench/suite/sum/naive.problem.py").read_text()
    ns: dict = {}
    exec(compile(problem_source(base, (), gs.launch_changes(128)), "problem.py", "exec"), ns)
    grid, block, _ = ns["launch_candidate"]({"n": 1 << 28})
    assert grid == ((1 << 20) // 128, 1, 1) and block == (256, 1, 1)


def test_search_variants_divide_the_grid() -> None:
    variants = gs.search_variants([])
    assert [v[2] for v in variants] == [[("grid_div", f)] for f in gs.GRID_FACTORS]


@pytest.mark.gpu
@pytest.mark.parametrize("rel", sorted(TAKEN))
def test_gate_finds_the_rewrite_correct(rel: str) -> None:
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    model, fn = _kernel(path)
    cand = gs.rewrite_source(model, fn.name)
    assert cand is not None
    spec = changed_problem_spec(str(path), original, fn.name, gs.launch_changes(128))
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
