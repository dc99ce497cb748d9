"""Walking an expert kernel backwards into a lineage, every step verified by the gate.

`LineageBuilder.build(expert, problem)` starts from the expert kernel and repeats: run every deoptimizer
(`warpwise.lineages.deopt.candidates`), and try the candidates in order; each simpler kernel is verified
against the current one with the gate, the simpler kernel as the gate's *original* and the current one as its
*candidate*, so that `verified` means exactly what a forward step needs: the two compute the same outputs (both
match the problem's reference on every seed) and the optimization makes the kernel faster by more than the
measured spread. The first accepted candidate becomes the step, and the walk goes on from the simpler kernel
until no deoptimizer applies. A candidate that is rejected - the simpler kernel is incorrect, fails to build or
run, or is not slower - is recorded as risk evidence and not tried again in that walk (it is known by its pass
and label, `devectorize:global`).

The result is a plain dictionary (the JSON written to `lineages/results/<operator>/lineage.json`):
kernels K0 (the simplest the deoptimizers reach) ... Kn (the expert) with their sources and launch changes,
the forward steps with the card each maps to (or the card it proposes), the diff, the timings with their spread,
build resources and profile deltas, and the rejected attempts. In compile-only mode (no GPU) every candidate
that builds is accepted so that the walk can be previewed; such a lineage says `mode: compile-only`, its steps
have status `no_gpu`, and nothing in it is evidence.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warpwise import __version__
from warpwise.lineages.deopt import Deopt, KernelSource, candidates
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.launch import LaunchChange, describe, problem_source
from warpwise.verify.spec import (
    ProblemFileError,
    ProblemSpec,
    SpecMissing,
    problem_kernel,
    read_problem,
    resolve_spec,
)
from warpwise.verify.types import Options, Status, VerificationResult

SCHEMA = 1
Log = Callable[[str], None]


class LineageError(ValueError):
    """The expert or its problem cannot be walked (no kernel, no problem file, a spec that does not resolve)."""


@dataclass
class Budget:
    """A wall-clock budget shared by several walks: no new verification starts once it is spent."""

    seconds: float | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def spent(self) -> bool:
        """Return whether the budget is used up."""
        return self.seconds is not None and time.monotonic() - self.started >= self.seconds

    @property
    def left(self) -> float | None:
        """Return the seconds left, or None without a budget."""
        return None if self.seconds is None else max(0.0, self.seconds - (time.monotonic() - self.started))


@dataclass
class Expert:
    """An expert kernel to walk: its file, text, kernel name, operator and resolved problem spec."""

    path: Path
    text: str
    kernel: str
    operator: str
    problem: Path
    spec: ProblemSpec

    @property
    def problem_text(self) -> str:
        """Return the problem file's text (as the gate runs it)."""
        return self.spec.run.problem_source or ""


def display_path(path: Path) -> str:
    """Return a path relative to the working folder when it lies below it (stable across checkouts)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load_expert(
    path: str | Path, problem: str | Path | None = None, kernel: str | None = None, operator: str | None = None
) -> Expert:
    """Read an expert kernel and resolve its problem spec (the problem file beside it unless given)."""
    src = Path(path)
    try:
        text = src.read_text(encoding="utf-8")
    except OSError as exc:
        raise LineageError(f"cannot read {src}: {exc.strerror}") from exc
    prob = Path(problem) if problem else src.with_name(f"{src.name.rsplit('.', 1)[0]}.problem.py")
    if not prob.is_file():
        raise LineageError(f"no problem file: {prob} does not exist (give one with --problem)")
    try:
        prob_text = read_problem(prob)
    except ProblemFileError as exc:
        raise LineageError(str(exc)) from exc
    if kernel is None:
        kernel = problem_kernel(prob_text)
    if kernel is None:
        names = re.findall(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(", text)
        if len(names) != 1:
            raise LineageError(f"{src} has {len(names)} kernels; name one with --kernel or `kernel = ...`")
        kernel = names[0]
    with tempfile.TemporaryDirectory() as tmp:
        # The gate finds a problem file beside the source; resolve in a folder that holds exactly these two.
        shutil.copyfile(src, Path(tmp) / src.name)
        (Path(tmp) / f"{src.name.rsplit('.', 1)[0]}.problem.py").write_text(prob_text, encoding="utf-8")
        spec = resolve_spec(str(Path(tmp) / src.name), text, kernel)
    if isinstance(spec, SpecMissing):
        raise LineageError(f"{src}: {spec.message}")
    run = dataclasses.replace(spec.run, problem_name=display_path(prob))
    spec = dataclasses.replace(spec, run=run)
    op = operator or src.resolve().parent.name
    return Expert(src, text, kernel, op, prob, spec)


def _diff(before: str, after: str, name_before: str, name_after: str) -> str:
    """Return a unified diff (three lines of context)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), name_before, name_after
    )
    return "".join(lines)


def _build(info: Any) -> dict[str, Any] | None:
    """Return the resource figures of a build."""
    if info is None:
        return None
    return {
        "ok": info.ok,
        "registers": info.registers,
        "spill_stores": info.spill_stores,
        "shared_bytes": info.shared_bytes,
        "stack_bytes": info.stack_bytes,
        "seconds": round(info.seconds, 3),
    }


def _timing(t: Any) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"median_ms": t.median_ms, "q1_ms": t.q1_ms, "q3_ms": t.q3_ms, "reps": t.reps}


def _profile(p: Any) -> dict[str, Any] | None:
    if p is None:
        return None
    keys = ("duration_ms", "dram_pct", "sm_pct", "occupancy_pct", "registers", "dram_gbps", "gflops", "bottleneck")
    return {k: getattr(p, k) for k in keys}


def _delta(before: dict[str, Any] | None, after: dict[str, Any] | None, keys: tuple[str, ...]) -> dict[str, Any]:
    """Return after - before for the numeric keys both have."""
    out: dict[str, Any] = {}
    for k in keys:
        a = (before or {}).get(k)
        b = (after or {}).get(k)
        if isinstance(a, int | float) and isinstance(b, int | float):
            out[k] = round(b - a, 4)
    return out


def summarize(result: VerificationResult) -> dict[str, Any]:
    """Return what a lineage keeps of one gate result (the gate's original is the simpler kernel)."""
    d: dict[str, Any] = {"status": result.status.value, "message": result.message, "cached": result.cached}
    if result.device is not None:
        d["device"] = result.device.to_dict()
    d["before_build"] = _build(result.original_build)
    d["after_build"] = _build(result.candidate_build)
    d["before_timing"] = _timing(result.original_timing)
    d["after_timing"] = _timing(result.candidate_timing)
    d["control_timing"] = _timing(result.control_timing)
    if result.speedup is not None:
        s = result.speedup
        d["speedup"] = {"median": s.median, "low": s.low, "high": s.high, "noise": s.noise}
    if result.mismatch is not None:
        d["mismatch"] = result.mismatch.to_dict()
    d["before_profile"] = _profile(result.original_profile)
    d["after_profile"] = _profile(result.candidate_profile)
    d["resource_delta"] = _delta(d["before_build"], d["after_build"], ("registers", "shared_bytes", "spill_stores"))
    if d["before_profile"] and d["after_profile"]:
        d["profile_delta"] = _delta(
            d["before_profile"], d["after_profile"], ("duration_ms", "dram_pct", "sm_pct", "occupancy_pct", "registers")
        )
    du = result.durations
    d["gpu_s"] = 0.0 if result.cached else round(du.check_s + du.time_s + du.profile_s, 3)
    d["durations"] = du.to_dict()
    return d


def not_slower_reason(sp: Any) -> str:
    """Return why a simpler kernel that was not slower was rejected: it did not matter, or it was faster."""
    what = f" ({sp.median:.2f}x, spread {sp.low:.2f}x..{sp.high:.2f}x)" if sp else ""
    if sp is not None and sp.high < 1.0:
        return f"the simpler kernel is faster{what}: here the optimization costs time"
    return f"the simpler kernel is not slower by more than the spread{what}: it did not matter"


def classify(result: VerificationResult, compile_only: bool) -> tuple[bool, str, str]:
    """Return (accepted, outcome, reason) of one attempt at removing an optimization."""
    s = result.status
    if compile_only:
        built = (
            s is Status.NO_GPU
            and result.original_build is not None
            and result.original_build.ok
            and result.candidate_build is not None
            and result.candidate_build.ok
        )
        if built:
            return True, "built", "both kernels build (compile-only: not measured)"
        return False, s.value, result.message
    if s is Status.VERIFIED:
        return True, "accepted", f"the optimization is {result.speedup.median:.2f}x faster" if result.speedup else ""
    if s is Status.NOT_FASTER:
        return False, "not_slower", not_slower_reason(result.speedup)
    if s is Status.INCORRECT:
        return False, "incorrect", f"the optimization is not removable here: {result.message}"
    return False, s.value, result.message


@dataclass
class Attempt:
    """One deoptimizer candidate tried at one point of the walk."""

    walk_index: int
    deopt: Deopt
    accepted: bool
    outcome: str
    reason: str
    result: dict[str, Any]
    diff: str
    wall_s: float

    def to_dict(self, n: int) -> dict[str, Any]:
        """Return a JSON-safe form; `n` is the lineage's last kernel index (the expert)."""
        d = self.deopt
        return {
            "at_kernel": n - self.walk_index,
            "key": d.key,
            "pass": d.pass_id,
            "label": d.label,
            "description": d.description,
            "card": d.card,
            "proposed": dataclasses.asdict(d.proposed) if d.proposed else None,
            "launch_change": [c.to_dict() for c in d.launch],
            "launch_text": describe(d.launch),
            "outcome": self.outcome,
            "reason": self.reason,
            "wall_s": round(self.wall_s, 3),
            "diff": self.diff,
            **self.result,
        }


class LineageBuilder:
    """Walk experts backwards with one gate, one set of options and one budget."""

    def __init__(
        self,
        gate: Gate,
        options: Options | None = None,
        budget: Budget | None = None,
        log: Log | None = None,
    ) -> None:
        self.gate = gate
        self.options = options or Options()
        self.compile_only = self.options.compile_only
        self.budget = budget or Budget()
        self.log = log or (lambda _msg: None)

    def verify_step(
        self,
        expert: Expert,
        simpler: str,
        simpler_launch: tuple[LaunchChange, ...],
        current: str,
        current_launch: tuple[LaunchChange, ...],
    ) -> VerificationResult:
        """Verify the current kernel (candidate) against the simpler one (original) on the expert's problem."""
        run = dataclasses.replace(
            expert.spec.run, problem_source=problem_source(expert.problem_text, simpler_launch, current_launch)
        )
        spec = dataclasses.replace(expert.spec, run=run)
        path = str(expert.path)
        return self.gate.verify(Candidate(path, simpler, expert.kernel, current, path, spec=spec), self.options)

    def build(self, expert: Expert) -> dict[str, Any]:
        """Walk one expert backwards and return its lineage."""
        t0 = time.monotonic()
        texts = [expert.text]
        launches: list[tuple[LaunchChange, ...]] = [()]
        attempts: list[Attempt] = []
        tried: set[str] = set()
        complete = True
        while True:
            if self.budget.spent:
                complete = False
                break
            current, current_launch = texts[-1], launches[-1]
            walk = len(texts) - 1
            src = KernelSource.parse(current, expert.kernel, str(expert.path))
            todo = [d for d in candidates(src) if d.key not in tried]
            if not todo:
                break
            accepted: Attempt | None = None
            for d in todo:
                if self.budget.spent:
                    complete = False
                    break
                tried.add(d.key)
                simpler = d.apply(current)
                simpler_launch = current_launch + d.launch
                t1 = time.monotonic()
                result = self.verify_step(expert, simpler, simpler_launch, current, current_launch)
                ok, outcome, reason = classify(result, self.compile_only)
                diff = _diff(simpler, current, f"a/{expert.path.name}", f"b/{expert.path.name}")
                att = Attempt(walk, d, ok, outcome, reason, summarize(result), diff, time.monotonic() - t1)
                attempts.append(att)
                self.log(f"{expert.operator}: {d.key}: {outcome} ({result.status.value}) {reason}")
                if ok:
                    accepted = att
                    texts.append(simpler)
                    launches.append(simpler_launch)
                    break
            if accepted is None:
                break
        return self._lineage(expert, texts, launches, attempts, complete, time.monotonic() - t0)

    def _lineage(
        self,
        expert: Expert,
        texts: list[str],
        launches: list[tuple[LaunchChange, ...]],
        attempts: list[Attempt],
        complete: bool,
        wall_s: float,
    ) -> dict[str, Any]:
        """Return the lineage dictionary, kernels and steps in forward order (K0 simplest, Kn the expert)."""
        n = len(texts) - 1
        kernels = [
            {
                "index": i,
                "name": f"K{i}",
                "source": texts[n - i],
                "launch_changes": [c.to_dict() for c in launches[n - i]],
                "launch_text": describe(launches[n - i]),
                "is_expert": i == n,
            }
            for i in range(n + 1)
        ]
        accepted = [a for a in attempts if a.accepted]
        steps = []
        for a in sorted(accepted, key=lambda a: -a.walk_index):
            d = a.to_dict(n)
            to = d.pop("at_kernel")
            d.update({"index": to, "from": to - 1, "to": to})
            steps.append(d)
        rejected = [a.to_dict(n) for a in attempts if not a.accepted]
        device = next((s.get("device") for s in [*steps, *rejected] if s.get("device")), None)
        mode = "compile-only" if self.compile_only else "gpu"
        return {
            "schema": SCHEMA,
            "operator": expert.operator,
            "kernel": expert.kernel,
            "expert": display_path(expert.path),
            "problem": display_path(expert.problem),
            "mode": mode,
            "evidence": mode == "gpu",
            "device": device,
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "warpwise": __version__,
            "options": self.options.to_dict(),
            "complete": complete,
            "kernels": kernels,
            "steps": steps,
            "rejected": rejected,
            "gpu_seconds": round(sum(a.result.get("gpu_s", 0.0) for a in attempts), 3),
            "wall_seconds": round(wall_s, 3),
            "attempts": len(attempts),
        }


def kernel_times(lineage: dict[str, Any]) -> list[dict[str, Any] | None]:
    """Return each kernel's timing: K0 from the first step's `before`, every other from its own step's `after`."""
    steps = {s["to"]: s for s in lineage.get("steps", [])}
    out: list[dict[str, Any] | None] = []
    for k in lineage.get("kernels", []):
        i = k["index"]
        if i in steps:
            out.append(steps[i].get("after_timing"))
        elif i + 1 in steps:
            out.append(steps[i + 1].get("before_timing"))
        else:
            out.append(None)
    return out


def profile_steps(builder: LineageBuilder, expert: Expert, lineage: dict[str, Any]) -> int:
    """Add Nsight Compute profiles to the accepted steps of a built lineage; return how many steps were profiled.

    Each step's two kernels (K<i-1> as the gate's original, K<i> as its candidate, with their launches) are run
    again with profiling on. The walk's own timings, speedups and verdicts are kept: the profile run only adds
    `before_profile`, `after_profile` and `profile_delta` (with `profile_run` saying where they come from), so a
    step's measured speedup is never replaced by a run that profiling slowed down.
    """
    from warpwise.verify.launch import LaunchChange

    kernels = {int(k["index"]): k for k in lineage.get("kernels", [])}

    def launch_of(i: int) -> tuple[LaunchChange, ...]:
        return tuple(LaunchChange.from_dict(c) for c in kernels[i].get("launch_changes") or [])

    done = 0
    for step in lineage.get("steps", []):
        if builder.budget.spent:
            break
        a, b = int(step["from"]), int(step["to"])
        if a not in kernels or b not in kernels:
            continue
        result = builder.verify_step(
            expert, str(kernels[a]["source"]), launch_of(a), str(kernels[b]["source"]), launch_of(b)
        )
        got = summarize(result)
        if not (got.get("before_profile") and got.get("after_profile")):
            builder.log(f"{expert.operator}: K{a} -> K{b}: no profile ({result.status.value}: {result.message})")
            continue
        step["before_profile"], step["after_profile"] = got["before_profile"], got["after_profile"]
        step["profile_delta"] = got.get("profile_delta", {})
        step["profile_run"] = {
            "status": got["status"],
            "date": _dt.date.today().isoformat(),
            "note": "profiled in a separate run; the step's timings and speedup are the walk's",
        }
        builder.log(f"{expert.operator}: K{a} -> K{b}: profile delta {step['profile_delta']}")
        done += 1
    return done
