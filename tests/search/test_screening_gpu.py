"""Screening on the GPU: the worker's early stop and a reduced problem, measured by the real gate (`gpu` marker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from warpwise.verify.backends import LocalBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.scale import reduced_spec
from warpwise.verify.spec import ProblemSpec, resolve_spec
from warpwise.verify.types import Options, Status

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "bench" / "suite" / "matmul" / "naive.cu"


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    cache = ResultCache(tmp_path_factory.mktemp("cache") / "results.sqlite3")
    backend = LocalBackend(gpus=1, cache=cache)
    yield Gate(backend, cache)
    backend.close()


def _reduced(level: int, factor: float) -> ProblemSpec:
    text = MATMUL.read_text()
    spec = resolve_spec(str(MATMUL), text, "matmul_naive")
    assert isinstance(spec, ProblemSpec)
    found = reduced_spec(spec, level, factor, preset="full")
    assert found is not None
    return found[0]


def test_timing_stops_early_for_a_clearly_slower_candidate_and_never_verifies(gate: Gate) -> None:
    text = MATMUL.read_text()
    # The same kernel against a target of 100x: it is clearly below it after the first look (6 rounds).
    spec = _reduced(2, 0.125)  # 512^3: a few milliseconds per run
    cand = Candidate(str(MATMUL), text, "matmul_naive", text + "\n", str(MATMUL), spec=spec)
    res = gate.verify(cand, Options(seeds=(0,), stop_below=100.0, min_reps=30))
    assert res.status is Status.NOT_FASTER, res.message
    assert res.stopped_after == 6 and res.candidate_timing is not None and res.candidate_timing.reps == 6
    assert "stopped after 6 rounds" in res.message
    # Without a target the same job runs all its rounds.
    full = gate.verify(cand, Options(seeds=(0,), min_reps=30))
    assert full.stopped_after == 0 and full.candidate_timing is not None and full.candidate_timing.reps >= 30


def test_a_reduced_problem_runs_the_reduced_size(gate: Gate) -> None:
    text = MATMUL.read_text()
    small, smaller = _reduced(1, 0.25), _reduced(2, 0.125)  # 1024^3 and 512^3
    opts = Options(seeds=(0,), min_reps=5)
    a = gate.verify(Candidate(str(MATMUL), text, "matmul_naive", text, str(MATMUL), spec=small), opts)
    b = gate.verify(Candidate(str(MATMUL), text, "matmul_naive", text, str(MATMUL), spec=smaller), opts)
    assert a.original_timing is not None and b.original_timing is not None, (a.message, b.message)
    # Eight times the work: at least four times the time (the naive kernel's time grows with M N K).
    assert a.original_timing.median_ms > 4 * b.original_timing.median_ms
