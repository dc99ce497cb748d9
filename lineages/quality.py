"""The quality report: warpwise run on every naive suite kernel, measured against naive, torch eager and the roofline.

A *strategy* takes one naive kernel and returns the best verified version it found, with the chain of steps
that led there. The built-in `greedy-cards` applies the verified rewrites warpwise proposes, in the order the
engine proposes them: it tries the cards that match, in order, until the gate verifies one (correct, faster by
more than the spread), takes it, matches again on the new text, and stops when no proposal is verified. Other
strategies (the search of `warpwise.search`) plug in with `register_strategy`, or by `module:function` on the
command line of `bench/quality.py`; they get the same `QualityContext` (gate, options, budget, accounting) and
return the same `Outcome`, so their rows are comparable.

For each kernel the report gives the speedup of the final version over the naive one (measured directly by the
gate, naive against final), its time against torch eager (the problem's `eager(inputs)`, timed the same way
as the gate times kernels: CUDA events, L2 flushed, median), its share of the roofline (the time the problem's
bytes and FLOPs need at the device's measured copy bandwidth and cuBLAS float32 rate, over the kernel's time),
the chain of cards applied, and the GPU-seconds spent.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from warpwise.lineages.lineage import Budget, summarize
from warpwise.lineages.suite import CardCandidate, SuiteKernel, card_candidates
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.launch import LaunchChange, problem_source
from warpwise.verify.types import Options, Status, VerificationResult

Log = Callable[[str], None]
Order = Callable[[SuiteKernel, str, list[CardCandidate], list[str]], list[CardCandidate]]
"""Puts card candidates in the order a strategy proposes them (the editor's: `warpwise.ranking.rank_candidates`)."""


@dataclass
class QualityContext:
    """What a strategy works with: the gate, the options, its budget, and the GPU-seconds it has spent."""

    gate: Gate
    options: Options
    budget: Budget
    log: Log = lambda _m: None
    order: Order | None = None
    gpu_s: float = 0.0
    jobs: int = 0

    def verify(
        self,
        kernel: SuiteKernel,
        original: str,
        original_launch: tuple[LaunchChange, ...],
        candidate: str,
        candidate_launch: tuple[LaunchChange, ...],
    ) -> VerificationResult:
        """Verify a candidate against an original version of a suite kernel, each with its own launch changes."""
        expert = kernel.expert
        spec = expert.spec
        if original_launch or candidate_launch:
            src = problem_source(expert.problem_text, original_launch, candidate_launch)
            spec = dataclasses.replace(spec, run=dataclasses.replace(spec.run, problem_source=src))
        path = str(expert.path)
        result = self.gate.verify(Candidate(path, original, expert.kernel, candidate, path, spec=spec), self.options)
        if not result.cached:
            d = result.durations
            self.gpu_s += d.check_s + d.time_s + d.profile_s
        self.jobs += 1
        return result


@dataclass
class Outcome:
    """What a strategy found for one kernel: the final text and launch, the chain of steps, every attempt."""

    strategy: str
    text: str
    launch: tuple[LaunchChange, ...] = ()
    chain: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Strategy(Protocol):
    """Improve one naive kernel under a context's budget."""

    name: str

    def run(self, kernel: SuiteKernel, ctx: QualityContext) -> Outcome:
        """Return the best verified version found."""
        ...


STRATEGIES: dict[str, Callable[[], Strategy]] = {}


def register_strategy(name: str) -> Callable[[Callable[[], Strategy]], Callable[[], Strategy]]:
    """Register a strategy factory under a name (`bench/quality.py --strategy NAME`)."""

    def wrap(factory: Callable[[], Strategy]) -> Callable[[], Strategy]:
        STRATEGIES[name] = factory
        return factory

    return wrap


def strategy(name: str) -> Strategy:
    """Return a strategy by registered name, or by `module:attribute` (a factory or a class)."""
    if name in STRATEGIES:
        return STRATEGIES[name]()
    module, sep, attr = name.partition(":")
    if not sep:
        known = ", ".join(sorted(STRATEGIES))
        raise ValueError(f"unknown strategy `{name}` (registered: {known}; or give module:function)")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"strategy `{name}`: {exc}") from exc
    made = factory()
    if not hasattr(made, "run"):
        raise ValueError(f"`{name}` did not make a strategy (an object with run(kernel, ctx))")
    return made


@register_strategy("greedy-cards")
class GreedyCards:
    """Apply the verified card rewrites warpwise proposes, in the order it proposes them, re-matching after each.

    The order is the context's `order` (the caller passes the editor's: the learned ranking's expected gain,
    `warpwise.ranking.rank_candidates`), else the engine's order of matches. A card whose rewrite was not verified
    on a kernel is not proposed again for that kernel (its text changes between steps, but GPU time is better spent
    on the proposals not yet tried), and at most `max_steps` steps are taken.
    """

    name = "greedy-cards"

    def __init__(self, max_steps: int = 8) -> None:
        self.max_steps = max_steps

    def run(self, kernel: SuiteKernel, ctx: QualityContext) -> Outcome:
        """Return the kernel after every verified step the cards offer."""
        out = Outcome(self.name, kernel.expert.text)
        rejected: set[str] = set()
        for _ in range(self.max_steps):
            accepted = None
            cands = card_candidates(kernel, out.text)
            for cand in ctx.order(kernel, out.text, cands, out.notes) if ctx.order else cands:
                if cand.card in rejected:
                    continue
                if ctx.budget.spent:
                    out.notes.append("the time budget was spent")
                    return out
                result = ctx.verify(kernel, out.text, out.launch, cand.candidate, out.launch + cand.launch)
                row = {"card": cand.card, "applicability": cand.applicability, **summarize(result)}
                row["launch_text"] = "; ".join(c.text for c in cand.launch)
                out.attempts.append(row)
                ctx.log(f"quality: {kernel.name}: {cand.card}: {result.status.value} {result.message}")
                if result.status is Status.VERIFIED:
                    accepted = cand
                    out.chain.append(row)
                    break
                rejected.add(cand.card)
            if accepted is None:
                break
            out.text = accepted.candidate
            out.launch = out.launch + accepted.launch
        return out


def roofline_ms(ns: dict[str, Any], inputs: dict[str, Any], peaks: dict[str, float]) -> float | None:
    """Return the time the problem needs at the measured peaks: max(bytes / copy bandwidth, FLOPs / SGEMM rate)."""
    nbytes = int(ns["bytes_moved"](inputs)) if "bytes_moved" in ns else 0
    nflops = int(ns["flops"](inputs)) if "flops" in ns and ns.get("roofline") == "compute" else 0
    t = 0.0
    if nbytes and peaks.get("copy_gbps"):
        t = max(t, nbytes / (peaks["copy_gbps"] * 1e9) * 1e3)
    if nflops and peaks.get("cublas_sgemm_tflops"):
        t = max(t, nflops / (peaks["cublas_sgemm_tflops"] * 1e12) * 1e3)
    return t or None


def time_torch(fn: Callable[[], Any], rep_ms: float = 100.0, min_reps: int = 10, max_reps: int = 500) -> dict[str, Any]:
    """Time a torch callable like the gate times kernels: warm-up, L2 flushed before every run, CUDA events."""
    import torch

    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device=dev)
    fn()
    torch.cuda.synchronize(dev)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(3):
        flush.zero_()
        fn()
    e.record()
    torch.cuda.synchronize(dev)
    estimate = max(s.elapsed_time(e) / 3, 1e-3)
    reps = max(min_reps, min(max_reps, int(rep_ms / estimate)))
    events = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        a.record()
        fn()
        b.record()
        events.append((a, b))
    torch.cuda.synchronize(dev)
    ms = torch.tensor([a.elapsed_time(b) for a, b in events], dtype=torch.float64)
    q = torch.quantile(ms, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    return {"median_ms": float(q[1]), "q1_ms": float(q[0]), "q3_ms": float(q[2]), "reps": reps}


def eager_and_roofline(kernel: SuiteKernel, peaks: dict[str, float], measure: bool) -> dict[str, Any]:
    """Return torch eager's time (when measured) and the roofline time of a suite kernel's full-size problem."""
    ns: dict[str, Any] = {"__name__": "warpwise_problem", "__file__": str(kernel.expert.problem)}
    exec(compile(kernel.expert.problem_text, str(kernel.expert.problem), "exec"), ns)
    out: dict[str, Any] = {"roofline": ns.get("roofline", "memory")}
    if not measure:
        return out
    import torch

    t0 = time.monotonic()
    inputs = ns["make_inputs"](0)
    out["roofline_ms"] = roofline_ms(ns, inputs, peaks)
    eager = ns.get("eager") or ns["reference"]
    with torch.no_grad():
        out["eager"] = time_torch(lambda: eager(inputs))
    inputs.clear()
    torch.cuda.empty_cache()
    out["eager_gpu_s"] = round(time.monotonic() - t0, 3)
    return out


def run_kernel(
    kernel: SuiteKernel, strat: Strategy, ctx: QualityContext, peaks: dict[str, float], measure_eager: bool
) -> dict[str, Any]:
    """Run one strategy on one naive kernel and return its report row."""
    t0 = time.monotonic()
    outcome = strat.run(kernel, ctx)
    row: dict[str, Any] = {
        "operator": kernel.name,
        "kernel": kernel.kernel,
        "file": str(kernel.path),
        "strategy": outcome.strategy,
        "chain": [r["card"] for r in outcome.chain],
        "steps": outcome.chain,
        "attempts": outcome.attempts,
        "notes": outcome.notes,
        "final_source": outcome.text,
        "final_launch": "; ".join(c.text for c in outcome.launch),
    }
    if outcome.chain and not ctx.budget.spent:
        final = ctx.verify(kernel, kernel.expert.text, (), outcome.text, outcome.launch)
        row["final"] = summarize(final)
    elif outcome.chain:
        row["notes"] = [*outcome.notes, "no naive-against-final measurement: the time budget was spent"]
    naive_t = (row.get("final") or {}).get("before_timing") or _first_before(outcome)
    final_t = (row.get("final") or {}).get("after_timing") if outcome.chain else naive_t
    row["naive_ms"] = naive_t["median_ms"] if naive_t else None
    row["final_ms"] = final_t["median_ms"] if final_t else None
    sp = (row.get("final") or {}).get("speedup")
    row["speedup"] = sp if sp else ({"median": 1.0, "low": 1.0, "high": 1.0, "noise": 0.0} if naive_t else None)
    try:
        extra = eager_and_roofline(kernel, peaks, measure_eager and row["final_ms"] is not None)
    except Exception as exc:  # The eager timing is a comparison, not a verdict: a failure is noted, the row stays.
        extra = {"eager_error": f"{type(exc).__name__}: {exc}"}
    row.update(extra)
    if row.get("eager") and row["final_ms"]:
        row["vs_eager"] = row["eager"]["median_ms"] / row["final_ms"]
    if row.get("roofline_ms") and row["final_ms"]:
        row["pct_roofline"] = 100.0 * row["roofline_ms"] / row["final_ms"]
        if row["naive_ms"]:
            row["naive_pct_roofline"] = 100.0 * row["roofline_ms"] / row["naive_ms"]
    row["gpu_s"] = round(ctx.gpu_s + float(row.get("eager_gpu_s", 0.0)), 3)
    row["jobs"] = ctx.jobs
    row["wall_s"] = round(time.monotonic() - t0, 3)
    return row


def _first_before(outcome: Outcome) -> dict[str, Any] | None:
    """Return the naive kernel's timing from the first measured attempt (its original is the naive kernel)."""
    for a in outcome.attempts:
        if a.get("before_timing"):
            return a["before_timing"]
    return None


def quality_markdown(doc: dict[str, Any], chart_file: str | None = None) -> str:
    """Return the quality report as Markdown."""
    from warpwise.lineages.report import text_bar_chart

    meta = doc.get("meta", {})
    rows = doc.get("rows", [])
    peaks = meta.get("peaks", {})
    out = [
        f"# Quality on the naive suite ({str(meta.get('date', ''))[:10]})",
        "",
        f"Strategy `{meta.get('strategy')}` on {meta.get('device') or 'no GPU'}; command `{meta.get('command', '')}`.",
        f"Peaks: copy {peaks.get('copy_gbps', 0):.0f} GB/s, cuBLAS float32 {peaks.get('cublas_sgemm_tflops', 0):.1f} "
        f"TFLOP/s ({peaks.get('source', 'unknown source')}). Times are gate medians at full size, L2 flushed; eager is "
        "timed the same way in the same run.",
        "",
        *[f"- {n}" for n in sorted({n for r in rows for n in r.get("notes", [])})],
        "",
        "| kernel | chain of cards | naive ms | final ms | speedup over naive (low..high) | vs torch eager | "
        "% of roofline (naive -> final) | GPU-s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        sp = r.get("speedup")
        spt = f"{sp['median']:.2f}x ({sp['low']:.2f}..{sp['high']:.2f})" if sp else ""
        chain = " -> ".join(f"`{c}`" for c in r.get("chain", [])) or "(none verified)"
        eager = f"{r['vs_eager']:.2f}x" if r.get("vs_eager") else ""
        pct = (
            f"{r.get('naive_pct_roofline', 0):.0f}% -> {r['pct_roofline']:.0f}%"
            if r.get("pct_roofline") is not None
            else ""
        )
        nm = f"{r['naive_ms']:.4g}" if r.get("naive_ms") else ""
        fm = f"{r['final_ms']:.4g}" if r.get("final_ms") else ""
        gs = f"{r.get('gpu_s', 0.0):.1f}"
        out.append(f"| {r['operator']} (`{r['kernel']}`) | {chain} | {nm} | {fm} | {spt} | {eager} | {pct} | {gs} |")
    out += ["", "## Speedup over naive", ""]
    if chart_file:
        out += [f"![speedup over naive]({chart_file})", ""]
    labels = [r["operator"] for r in rows]
    values = [(r.get("speedup") or {}).get("median") for r in rows]
    out += ["```", text_bar_chart(labels, values, "x"), "```", ""]
    total = sum(r.get("gpu_s", 0.0) for r in rows)
    out.append(f"{len(rows)} kernels, {total:.1f} GPU-seconds in all.")
    out.append("")
    return "\n".join(out)


def quality_chart(doc: dict[str, Any]) -> str | None:
    """Return the SVG chart of speedup over naive per kernel (None without matplotlib)."""
    from warpwise.lineages.report import svg_bar_chart

    rows = [r for r in doc.get("rows", []) if r.get("speedup")]
    if not rows:
        return None
    return svg_bar_chart(
        f"warpwise ({doc.get('meta', {}).get('strategy')}) on the naive suite: speedup over naive",
        [r["operator"] for r in rows],
        [r["speedup"]["median"] for r in rows],
        "speedup over naive (x)",
        [r["speedup"]["low"] for r in rows],
        [r["speedup"]["high"] for r in rows],
        log=True,
        reference=(1.0, "naive"),
    )


def load_peaks(path: Path | None = None) -> dict[str, Any]:
    """Return the device peaks measured by bench/gpu/corpus_check.py (the newest committed run by default)."""
    import json

    candidates = [path] if path else sorted(Path("bench", "results").glob("corpus_check-*.json"))
    for p in reversed(candidates):
        if p is None or not p.is_file():
            continue
        doc = json.loads(p.read_text(encoding="utf-8"))
        peaks = doc.get("peaks", {})
        if peaks.get("copy_gbps"):
            return {
                "copy_gbps": float(peaks["copy_gbps"]),
                "cublas_sgemm_tflops": float(peaks.get("cublas_sgemm_tflops", 0.0)),
                "source": str(p),
            }
    return {}
