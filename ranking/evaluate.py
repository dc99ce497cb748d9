"""Evaluating the ranking: leave-one-operator-out predictions, rank correlation, precision, and a queue replay.

* `leave_one_operator_out` trains the whole procedure (penalty choice included) without one operator's
  examples and predicts them, for every operator in turn: every figure below is on code the model never saw.
* `spearman` and `precision_at` score those predictions against the measured outcomes.
* `replay` re-runs the verification queue over recorded results without a GPU: each candidate's measured status
  and speedup, and its GPU-seconds (the recorded stage durations when the result has them, else an estimate from
  its recorded kernel times and the gate's timing policy, see `estimate_cost`), in a given order under a budget,
  optionally skipping predicted losers once the budget is short (what `VerificationQueue(skip_below=0)` does).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from warpwise.ranking import queue_priority
from warpwise.ranking.dataset import Example
from warpwise.ranking.features import GpuProfile
from warpwise.ranking.model import THRESHOLD, Prediction, train

# The gate's timing policy (`warpwise.verify.types.Options` defaults and `verify.device.time_pair`).
WARMUP_MS = 25.0
REP_MS = 100.0
MIN_REPS = 10
MAX_REPS = 2000
SEEDS = 3
# Stage medians measured on the H200 by bench/verify_throughput.py (bench/results/verify_throughput-2026-11-29):
# build of a pair 0.0623 s, check 0.0053 s, and 0.209 s a pair in all, of which 0.0095 s outside the stages.
BUILD_PAIR_S = 0.0623
CHECK_BASE_S = 0.0053
JOB_OVERHEAD_S = 0.0095


@dataclass(frozen=True, slots=True)
class HeldOut:
    """One example and what a model trained without its operator predicted for it."""

    example: Example
    prediction: Prediction


def leave_one_operator_out(
    examples: Sequence[Example],
    gpus: Mapping[str, GpuProfile],
    progress: Callable[[str], None] | None = None,
    **train_kw: Any,
) -> list[HeldOut]:
    """Return a held-out prediction for every labelled example (one model per operator left out)."""
    labelled = [e for e in examples if e.outcome.labelled]
    out: list[HeldOut] = []
    for op in sorted({e.operator for e in labelled}):
        if progress is not None:
            progress(op)
        model = train([e for e in labelled if e.operator != op], gpus, **train_kw)
        out += [HeldOut(e, model.predict(e.features)) for e in labelled if e.operator == op]
    return out


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Return Spearman's rank correlation (ties get their average rank)."""
    if len(xs) != len(ys) or len(xs) < 3:
        return math.nan
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    vy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (vx * vy) if vx and vy else math.nan


def precision_at(held: Sequence[HeldOut], threshold: float = THRESHOLD) -> dict[str, Any]:
    """Return how many pairs are predicted faster at the threshold, and how many of those verified."""
    chosen = [h for h in held if h.prediction.p_verified >= threshold]
    hits = sum(h.example.outcome.status == "verified" for h in chosen)
    positives = sum(h.example.outcome.status == "verified" for h in held)
    return {
        "threshold": threshold,
        "predicted_faster": len(chosen),
        "verified_among_them": hits,
        "precision": hits / len(chosen) if chosen else math.nan,
        "recall": hits / positives if positives else math.nan,
        "verified_total": positives,
    }


def base_rate_precision(held: Sequence[HeldOut]) -> float:
    """Return the precision of predicting "faster" for every pair (the share that verified)."""
    return sum(h.example.outcome.status == "verified" for h in held) / len(held) if held else math.nan


# -- the queue replay ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplayCandidate:
    """A recorded verification: what it measured, what it cost, and what the ranking predicted for it."""

    file: str
    kernel: str
    card: str
    status: str
    speedup: float | None
    cost_s: float
    cost_source: str  # "recorded" or "estimated"
    prediction: Prediction | None = None
    low: float | None = None  # the least favourable end of the measured speedup

    @property
    def priority(self) -> int:
        """Return the queue priority the ranking gives it."""
        return queue_priority(self.prediction)

    @property
    def gain(self) -> float:
        """Return the speedup it contributes when it runs (1 unless verified)."""
        return float(self.speedup) if self.status == "verified" and self.speedup else 1.0


def estimate_cost(
    original_ms: float | None, candidate_ms: float | None, status: str, build_pair_s: float = BUILD_PAIR_S
) -> float:
    """Return the GPU-seconds the gate spends on a candidate, from its recorded kernel times and timing policy.

    Build (both kernels), check (both kernels on each seed, one seed when a mismatch stops it), and timing: five
    estimating rounds, warm-up rounds for `WARMUP_MS`, then rounds for `REP_MS` (at least `MIN_REPS`, at most
    `MAX_REPS`), each round the original, the candidate and the original again (the A/A control). The L2 flush
    before each run is not included: its time is not recorded.
    """
    if status in ("spec_missing", "not_run"):
        return 0.0
    if status in ("compile_failed",) or original_ms is None:
        return build_pair_s + JOB_OVERHEAD_S
    cand = candidate_ms if candidate_ms is not None else original_ms
    seeds = 1 if status == "incorrect" else SEEDS
    check = CHECK_BASE_S + seeds * (original_ms + cand) / 1000
    if status in ("incorrect", "launch_failed"):
        return build_pair_s + check + JOB_OVERHEAD_S
    rnd = 2 * original_ms + cand
    warm = max(1, int(WARMUP_MS / rnd)) * rnd
    reps = max(MIN_REPS, min(MAX_REPS, int(REP_MS / rnd))) * rnd
    timing = (6 * rnd + warm + reps) / 1000
    return build_pair_s + check + timing + JOB_OVERHEAD_S


@dataclass
class ReplayResult:
    """What one replay ran, skipped and reached."""

    order: str
    budget_s: float | None
    spent_s: float = 0.0
    ran: list[ReplayCandidate] = field(default_factory=list)
    skipped: list[ReplayCandidate] = field(default_factory=list)
    not_reached: list[ReplayCandidate] = field(default_factory=list)
    trace: list[tuple[float, float]] = field(default_factory=list)  # (GPU-seconds spent, geomean speedup)
    final: float = 1.0
    # GPU-seconds spent when every kernel had a verified rewrite as fast as its best one, to within the best one's
    # measured spread (None when that never happened).
    seconds_to_best: float | None = None

    def seconds_to_reach(self, target: float) -> float | None:
        """Return the GPU-seconds spent when the geomean speedup first reached the target (None if never)."""
        if target <= 1.0 + 1e-12:
            return 0.0
        for spent, value in self.trace:
            if value >= target - 1e-9:
                return spent
        return None

    @property
    def never_run(self) -> list[ReplayCandidate]:
        """Return the candidates that were skipped or not reached."""
        return self.skipped + self.not_reached


def geomean_best(kernels: Sequence[str], best: Mapping[str, float]) -> float:
    """Return the geometric mean over kernels of the best verified speedup (1 where none verified)."""
    if not kernels:
        return 1.0
    return math.exp(sum(math.log(best.get(k, 1.0)) for k in kernels) / len(kernels))


def replay(
    candidates: Sequence[ReplayCandidate],
    order: str,
    budget_s: float | None = None,
    *,
    skip_losers_when_short: bool = False,
    key: Callable[[ReplayCandidate], Any] | None = None,
) -> ReplayResult:
    """Replay the queue over recorded results in an order; return what ran and the speedup reached.

    As in `VerificationQueue`: a job starts only while the spent GPU-seconds are below the budget, and then runs to
    the end. With `skip_losers_when_short`, a job with a negative priority is skipped when the budget left is less
    than the mean cost of the jobs run so far times the number of jobs still waiting.
    """
    seq = sorted(candidates, key=key) if key is not None else list(candidates)
    kernels = sorted({(c.file, c.kernel) for c in candidates})
    names = [f"{f}:{k}" for f, k in kernels]
    res = ReplayResult(order, budget_s)
    best: dict[str, float] = {}
    res.trace.append((0.0, 1.0))
    targets: dict[str, float] = {}
    for c in candidates:
        if c.status == "verified" and c.speedup:
            name = f"{c.file}:{c.kernel}"
            top = max(
                (o for o in candidates if f"{o.file}:{o.kernel}" == name and o.status == "verified"),
                key=lambda o: o.speedup or 0.0,
            )
            targets[name] = top.low if top.low is not None else float(top.speedup or 1.0)
    reached: set[str] = set()
    if not targets:
        res.seconds_to_best = 0.0
    for i, c in enumerate(seq):
        if budget_s is not None and res.spent_s >= budget_s:
            res.not_reached.append(c)
            continue
        if skip_losers_when_short and budget_s is not None and c.priority < 0 and res.ran:
            mean = res.spent_s / len(res.ran)
            if budget_s - res.spent_s < mean * (len(seq) - i):
                res.skipped.append(c)
                continue
        res.spent_s += c.cost_s
        res.ran.append(c)
        name = f"{c.file}:{c.kernel}"
        best[name] = max(best.get(name, 1.0), c.gain)
        res.trace.append((res.spent_s, geomean_best(names, best)))
        if name in targets and c.status == "verified" and c.gain >= targets[name]:
            reached.add(name)
            if res.seconds_to_best is None and len(reached) == len(targets):
                res.seconds_to_best = res.spent_s
    res.final = res.trace[-1][1]
    return res


def ranked_key(c: ReplayCandidate) -> tuple[float, float, str, str]:
    """Order by the ranking's priority (higher first), then by expected gain, then by name."""
    score = c.prediction.score if c.prediction is not None else 0.0
    return (-float(c.priority), -score, c.file + c.kernel, c.card)


def random_orders(candidates: Sequence[ReplayCandidate], n: int, seed: int = 0) -> list[list[ReplayCandidate]]:
    """Return `n` seeded random permutations of the candidates."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        perm = list(candidates)
        rng.shuffle(perm)
        out.append(perm)
    return out
