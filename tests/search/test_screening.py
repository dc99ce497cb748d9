"""Screening: reduced problems, the early stop's sign test, and a search that reaches depth on a slow start.

The search runs against a modelled GPU (`SizedBackend`): the start takes 300 ms per run at the problem's full
size and proportionally less at a reduced one, every job costs what the real gate's stages would cost for those
kernel times (build, one check run per seed of both kernels, the estimate runs, warm-up and the timed rounds of
original, candidate and control, with the early stop applied to simulated noisy rounds by the gate's own rule),
and its verdicts come from `decide_status`, the one place that says "verified".
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.search.fakes import DEVICE, Marks, marks_of
from warpwise.search.evaluate import GateVerifier
from warpwise.search.optimize import OptimizeOptions, optimize
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate
from warpwise.verify.scale import problem_sizes, reduced_problem, reduced_spec, scale_sizes
from warpwise.verify.spec import ProblemSpec, resolve_spec
from warpwise.verify.types import (
    BuildInfo,
    Durations,
    Status,
    Timing,
    VerificationResult,
    WorkerJob,
    decide_status,
)
from warpwise.verify.worker import early_stop

ROOT = Path(__file__).resolve().parents[2]

KERNEL = """__global__ void scale_rows(const float* x, float* y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) y[i] = 2.0f * x[i];
}
"""

PROBLEM = '''"""Problem: y = 2 x over a rows x cols matrix."""
import os
import torch

kernel = "scale_rows"
SIZES = {"full": (4096, 1 << 12), "tiny": (3, 40)}


def _size():
    return SIZES[os.environ.get("WARPWISE_PROBLEM_SCALE", "full")]


def make_inputs(seed):
    rows, cols = _size()
    x = torch.rand(rows * cols)
    return {"x": x, "y": torch.empty_like(x), "rows": rows, "cols": cols}


def reference(inputs):
    return {"y": 2 * inputs["x"]}


def launch(inputs):
    n = inputs["rows"] * inputs["cols"]
    return ((n + 255) // 256, 1, 1), (256, 1, 1)
'''


@pytest.fixture(autouse=True)
def _user_size_is_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run at the problem's `full` preset, whatever an earlier test left in WARPWISE_PROBLEM_SCALE."""
    monkeypatch.delenv("WARPWISE_PROBLEM_SCALE", raising=False)


# -- reduced problems -------------------------------------------------------------------------------------------


def test_sizes_are_read_without_running_the_problem_file() -> None:
    assert problem_sizes(PROBLEM) == {"full": (4096, 4096), "tiny": (3, 40)}
    assert problem_sizes("SIZES = {'full': open('x').read()}") is None
    assert problem_sizes("import os\nN = 4") is None
    assert problem_sizes("def (:") is None


def test_scaling_keeps_small_dimensions_and_alignment() -> None:
    assert scale_sizes((4096, 4096, 4096), 0.5) == (2048, 2048, 2048)
    assert scale_sizes((16, 1024, 4096), 0.25) == (16, 256, 1024)
    assert scale_sizes((4095, 4097, 1023), 0.5) == (2048, 2048, 512)
    assert scale_sizes(1 << 26, 0.125) == 1 << 23
    assert scale_sizes((8192, 100), 0.5) == (4096, 100)


def test_a_named_screen_preset_wins_at_the_first_level() -> None:
    text = PROBLEM.replace('"tiny": (3, 40)}', '"tiny": (3, 40), "screen": (1024, 512)}')
    red = reduced_problem(text, 0, 0.5)
    assert red is not None and red.sizes == (1024, 512) and "screen" in red.label
    second = reduced_problem(text, 1, 0.25)
    assert second is not None and second.sizes == (1024, 1024)
    ns: dict[str, Any] = {}
    exec(red.problem_source, ns)
    assert ns["_size"]() == (1024, 512)


def test_the_reduced_spec_runs_the_reduced_size_in_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from warpwise.verify.worker.gpu_job import Problem

    monkeypatch.delenv("WARPWISE_PROBLEM_SCALE", raising=False)
    path = ROOT / "bench" / "suite" / "matmul" / "naive.cu"
    spec = resolve_spec(str(path), path.read_text(), "matmul_naive")
    assert isinstance(spec, ProblemSpec)
    found = reduced_spec(spec, 2, 0.125)
    assert found is not None
    rspec, red = found
    assert red.sizes == (512, 512, 512) and red.full == (4096, 4096, 4096)
    assert rspec.run.problem_source != spec.run.problem_source  # so the gate's cache keys it apart
    case = Problem(rspec.run, torch.device("cpu")).case(0)
    assert case.scalars["M"] == 512 and case.geometry[next(iter(case.geometry))].grid == (32, 32, 1)


# -- the early stop ---------------------------------------------------------------------------------------------


def test_the_sign_test_stops_only_at_looks_and_on_clear_evidence() -> None:
    assert early_stop.binomial_tail(6, 6) == pytest.approx(1 / 64)
    assert early_stop.binomial_tail(10, 0) == 1.0
    slow = [3.0] * 6
    assert early_stop.clearly_below([1.0] * 6, slow, 1.0)  # 6 of 6 rounds slower than 1x
    assert not early_stop.clearly_below([1.0] * 5, slow[:5], 1.0)  # no look after 5 rounds
    mixed = [3.0] * 5 + [0.5]
    assert not early_stop.clearly_below([1.0] * 6, mixed, 1.0)  # 5 of 6: p = 7/64
    assert early_stop.clearly_below([1.0] * 10, [3.0] * 9 + [0.5], 1.0)  # 9 of 10 at the second look


def test_the_false_stop_rate_stays_under_alpha() -> None:
    """A candidate exactly at the target is stopped in at most 5% of measurements, over every look."""
    rng = random.Random(7)
    stops = 0
    trials = 3000
    for _ in range(trials):
        o: list[float] = []
        c: list[float] = []
        for _ in range(120):
            o.append(10.0 * rng.lognormvariate(0, 0.05))
            c.append(5.0 * rng.lognormvariate(0, 0.05))  # speedup 2x, the target
            if early_stop.clearly_below(o, c, 2.0):
                stops += 1
                break
    assert stops / trials <= early_stop.ALPHA


# -- a search on a modelled GPU ---------------------------------------------------------------------------------

START_MS = 300.0
BUILD_S = 0.3
SPEEDUPS = {
    ("a",): 4.0,
    ("b",): 0.5,
    ("c",): 1.5,
    ("a", "d"): 12.0,
    ("a", "e"): 0.9,
    ("a", "d", "f"): 30.0,
    ("a", "d", "g"): 8.0,
}


def _graph() -> dict[tuple[str, ...], list[tuple[str, float]]]:
    names = "abcdefghijklmnopqrstuvwxyz"
    graph: dict[tuple[str, ...], list[tuple[str, float]]] = {}
    prefixes = [(), ("a",), ("a", "d"), ("a", "d", "f"), ("b",), ("c",)]
    for i, p in enumerate(prefixes):
        kids = [(n, 0.9 - 0.05 * j) for j, n in enumerate(names) if n not in p][: 6 if i < 3 else 3]
        graph[p] = kids
    return graph


@dataclass
class SizedBackend:
    """A modelled GPU: kernel times scale with the problem's size; job costs follow the gate's stages."""

    runs: list[tuple[tuple[str, ...], float, bool]] = field(default_factory=list)
    rng: random.Random = field(default_factory=lambda: random.Random(3))
    name: str = "sized"

    def identity(self) -> Any:
        return DEVICE

    def capacity(self) -> int:
        return 1

    def run(self, job: WorkerJob, progress: Any = None) -> VerificationResult:
        assert job.spec is not None and job.spec.problem_source is not None
        m = re.search(r"SIZES\['full'\] = \((\d+), (\d+)\)", job.spec.problem_source)
        share = (int(m.group(1)) * int(m.group(2))) / (4096 * 4096) if m else 1.0
        marks = marks_of(job.candidate.text)
        o_ms = START_MS * share
        c_ms = o_ms / SPEEDUPS.get(marks, 1.0)
        opts = job.options
        check_s = len(opts.seeds) * (o_ms + c_ms) / 1000
        rounds_o: list[float] = []
        rounds_c: list[float] = []
        rounds_k: list[float] = []
        stopped = 0
        per_round = 2 * o_ms + c_ms
        n_rep = max(opts.min_reps, min(opts.max_reps, int(opts.rep_ms / per_round)))
        for i in range(n_rep):
            rounds_o.append(o_ms * self.rng.lognormvariate(0, 0.01))
            rounds_c.append(c_ms * self.rng.lognormvariate(0, 0.01))
            rounds_k.append(o_ms * self.rng.lognormvariate(0, 0.01))
            if opts.stop_below is not None and early_stop.clearly_below(rounds_o, rounds_c, opts.stop_below):
                stopped = i + 1
                break
        estimate = 2 * (2 * o_ms + c_ms)  # one warm-up launch and one timed run each (long kernels)
        time_s = (estimate + per_round * (len(rounds_o) + 1)) / 1000 + 0.05
        self.runs.append((marks, share, stopped > 0))

        def t(xs: list[float]) -> Timing:
            xs = sorted(xs)
            return Timing(xs[len(xs) // 2], xs[len(xs) // 4], xs[(3 * len(xs)) // 4], len(xs))

        status, speedup, msg = decide_status(t(rounds_o), t(rounds_c), t(rounds_k))
        if stopped:
            status, msg = Status.NOT_FASTER, f"stopped after {stopped} rounds"
        build = BuildInfo(True, "NVRTC 13.0", BUILD_S, "", registers=32)
        total = BUILD_S + check_s + time_s
        return VerificationResult(
            status,
            msg,
            key=job.key,
            device=DEVICE,
            original_build=build,
            candidate_build=build,
            original_timing=t(rounds_o),
            candidate_timing=t(rounds_c),
            control_timing=t(rounds_k),
            speedup=speedup,
            seeds_checked=opts.seeds,
            durations=Durations(BUILD_S, check_s, time_s, 0.0, total),
            created=time.time(),
            stopped_after=stopped,
        )

    def close(self) -> None:
        return None


def _search(tmp_path: Path, **kw: Any) -> tuple[Any, SizedBackend]:
    (tmp_path / "scale_rows.cu").write_text(KERNEL)
    (tmp_path / "scale_rows.problem.py").write_text(PROBLEM)
    backend = SizedBackend()
    gate = Gate(backend, ResultCache(tmp_path / "results.sqlite3"))
    opts = OptimizeOptions(
        cards=False, params=False, lineage=False, extra_sources=[Marks(_graph())], budget_s=40.0, candidates=None, **kw
    )
    report = optimize(str(tmp_path / "scale_rows.cu"), "scale_rows", opts, verifier=GateVerifier(gate))
    return report, backend


def test_screening_reaches_depth_within_40_gpu_seconds_on_a_300_ms_start(tmp_path: Path) -> None:
    report, backend = _search(tmp_path)
    # A confirmation runs only while the budget left covers the last one's cost (the first always runs).
    assert report.budget["gpu_seconds"] <= 40.0 + 1.0, report.budget
    assert report.budget["nodes"] >= 12, report.markdown()
    # The best is the deepest chain, confirmed at the user's size: the only result that says verified.
    assert report.best is not None and report.best["action"] == "mark:f", report.markdown()
    assert report.best["status"] == "verified" and "screened_at" not in report.best
    assert report.best["screening"]["status"] == "screened_faster"
    full = [r for r in backend.runs if r[1] == 1.0]
    assert full and len(full) <= 4  # the start is never run at full size on its own: only confirmations
    assert all(n["status"] != "verified" for n in report.nodes if n.get("screened_at"))
    assert any(stopped for _, _, stopped in backend.runs)  # the clearly slower ones stopped early
    assert any("screening on" in note for note in report.notes)


def test_without_screening_the_same_budget_buys_a_few_versions(tmp_path: Path) -> None:
    report, _ = _search(tmp_path, screen=False)
    assert report.budget["nodes"] <= 5


def test_a_start_that_fails_at_the_reduced_size_is_searched_at_full_size(tmp_path: Path) -> None:
    class Failing(SizedBackend):
        def run(self, job: WorkerJob, progress: Any = None) -> VerificationResult:
            res = super().run(job, progress)
            if job.spec is not None and "SIZES['full']" in (job.spec.problem_source or ""):
                return res.with_(status=Status.INCORRECT, message="the original kernel fails the check itself")
            return res

    (tmp_path / "scale_rows.cu").write_text(KERNEL)
    (tmp_path / "scale_rows.problem.py").write_text(PROBLEM)
    backend = Failing()
    gate = Gate(backend, ResultCache(tmp_path / "results.sqlite3"))
    opts = OptimizeOptions(
        cards=False, params=False, lineage=False, extra_sources=[Marks(_graph())], budget_s=40.0, candidates=None
    )
    report = optimize(str(tmp_path / "scale_rows.cu"), "scale_rows", opts, verifier=GateVerifier(gate))
    assert any("screening: not used" in n for n in report.notes)
    assert all(not n.get("screened_at") for n in report.nodes)


def test_an_unsettled_gpu_still_ranks_but_never_verifies(tmp_path: Path) -> None:
    """Screening results the gate declined to verify (the GPU never settled) still rank; confirmations decide."""

    class Unsettled(SizedBackend):
        def run(self, job: WorkerJob, progress: Any = None) -> VerificationResult:
            res = super().run(job, progress)
            if res.status is Status.VERIFIED:
                return res.with_(status=Status.NOT_FASTER, message=res.message + "; the GPU never settled")
            return res

    (tmp_path / "scale_rows.cu").write_text(KERNEL)
    (tmp_path / "scale_rows.problem.py").write_text(PROBLEM)
    backend = Unsettled()
    gate = Gate(backend, ResultCache(tmp_path / "results.sqlite3"))
    opts = OptimizeOptions(
        cards=False, params=False, lineage=False, extra_sources=[Marks(_graph())], budget_s=40.0, candidates=None
    )
    report = optimize(str(tmp_path / "scale_rows.cu"), "scale_rows", opts, verifier=GateVerifier(gate))
    assert report.best is None  # the user's size was never measured on a settled GPU
    confirmed = [n for n in report.nodes if n.get("screening")]
    assert confirmed and all(n["status"] == "not_faster" for n in confirmed)
    assert max(n["screening"]["speedup"]["median"] for n in confirmed) > 20  # the deep chain was found and ranked


def test_presets_set_after_the_dict_are_read() -> None:
    text = PROBLEM + "\nSIZES = dict(SIZES)\nSIZES['full'] = (8192, 1 << 13)\nSIZES['tiny'] = open('x')\n"
    assert problem_sizes(text) == {"full": (8192, 8192)}
    red = reduced_problem(text, 0, 0.5, "full")
    assert red is not None and red.full == (8192, 8192) and red.sizes == (4096, 4096)
    # A reduced problem reads back as its own size.
    assert problem_sizes(red.problem_source)["full"] == (4096, 4096)  # type: ignore[index]
    assert problem_sizes(PROBLEM + "\nSIZES = make_sizes()\n") is None


@pytest.mark.parametrize("strategy", ["greedy", "random"])
def test_every_strategy_screens_and_confirms(tmp_path: Path, strategy: str) -> None:
    report, _ = _search(tmp_path, strategy=strategy)
    assert report.budget["nodes"] >= 12, report.markdown()
    assert report.best is not None and report.best["status"] == "verified" and "screened_at" not in report.best
    assert report.best["screening"]["status"] == "screened_faster"
