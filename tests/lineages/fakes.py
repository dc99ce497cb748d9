"""A scripted stand-in for a GPU backend, so the lineage, admission and quality logic can be tested on the CPU.

`ScriptedBackend(rule)` answers every job with the status that `rule(original_text, candidate_text)` picks,
and invented timings that fit it (a verified candidate is `speedup` times faster, a `not_faster` one is not).
Nothing produced here is a measurement: it only drives the code paths that handle the gate's verdicts.
"""

from __future__ import annotations

from collections.abc import Callable

from warpwise.verify.types import (
    BuildInfo,
    DeviceIdentity,
    Durations,
    ProfileReport,
    Status,
    Timing,
    VerificationResult,
    WorkerJob,
    speedup_of,
)

FAKE_DEVICE = DeviceIdentity("Scripted GPU (test stand-in)", "0", "NVRTC 0.0", "sm_90")

Rule = Callable[[str, str], tuple[Status, float]]


def _timing(ms: float) -> Timing:
    return Timing(ms, ms * 0.99, ms * 1.01, 20)


def _profile(ms: float, dram_pct: float) -> ProfileReport:
    return ProfileReport(ms, dram_pct, 10.0, 50.0, 32, dram_pct * 48.0, 0.0, "memory-bound", "scripted")


class ScriptedBackend:
    """A backend whose verdicts come from a rule over the two texts."""

    name = "scripted"

    def __init__(self, rule: Rule, base_ms: float = 1.0) -> None:
        self.rule = rule
        self.base_ms = base_ms
        self.jobs: list[WorkerJob] = []

    def identity(self) -> DeviceIdentity | None:
        return FAKE_DEVICE

    def capacity(self) -> int:
        return 1

    def run(self, job: WorkerJob, progress: object = None) -> VerificationResult:
        self.jobs.append(job)
        status, factor = self.rule(job.original.text, job.candidate.text)
        build = BuildInfo(True, "scripted", 0.0, "", registers=32, spill_stores=0, shared_bytes=0, stack_bytes=0)
        base = VerificationResult(
            status=status,
            message=f"scripted {status.value}",
            device=FAKE_DEVICE,
            original_build=build,
            candidate_build=build,
            durations=Durations(check_s=0.1, time_s=0.2),
        )
        if status not in (Status.VERIFIED, Status.NOT_FASTER):
            return base
        original = _timing(self.base_ms * factor)
        candidate = _timing(self.base_ms)
        out = base.with_(
            original_timing=original,
            candidate_timing=candidate,
            control_timing=original,
            speedup=speedup_of(original, candidate, original),
        )
        if job.options.profile:  # Invented metrics that fit the timings: the faster kernel moves more bytes.
            out = out.with_(
                original_profile=_profile(self.base_ms * factor, 40.0 / factor),
                candidate_profile=_profile(self.base_ms, 40.0),
            )
        return out

    def close(self) -> None:
        pass
