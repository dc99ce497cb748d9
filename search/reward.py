"""The reward of a kernel version: the gate's measured speedup over the starting kernel, with guardrails.

Every gate job times the starting kernel and the candidate in the same run, so the speedup of a result is the
speedup over the start. The reward is the share of the starting kernel's time saved, `1 - 1/speedup`: 0 for no
change, 0.5 for twice as fast, negative when slower, clipped to [-1, 1]. It is additive in the sense that matters
for comparing branches (a 2x kernel is worth the same in any subtree) and bounded, which UCT needs.

Guardrails:
- a candidate that does not compile, launches badly, gives wrong results, hangs or crashes is a terminal
  penalty (`FAILURE_PENALTY`, the lowest reward): nothing is expanded below it;
- a result the gate calls `not_faster` (correct, but the gain is inside the measured spread) counts as no gain
  (reward 0), even when its median speedup is above 1; only a slowdown beyond the spread counts as a loss;
- `no_gpu` (compile-only) results carry no measurement: reward 0, and they never become a proposed edit.

Profiler signals, when the gate profiled both kernels, add a small shaping term (at most `PROFILE_WEIGHT`) for a
candidate that uses more of the device's peak (DRAM or SM throughput) than the start, or that moved from
latency-bound to memory- or compute-bound. It steers the search only; it never makes a result verified.
"""

from __future__ import annotations

from dataclasses import dataclass

from warpwise.verify.types import Status, VerificationResult

FAILURE_PENALTY = -1.0
PROFILE_WEIGHT = 0.05
FAILED = frozenset({Status.INCORRECT, Status.COMPILE_FAILED, Status.LAUNCH_FAILED, Status.TIMED_OUT, Status.CRASHED})


@dataclass(frozen=True, slots=True)
class Reward:
    """The reward of one result, whether the node is terminal, and the reason in words."""

    value: float
    terminal: bool
    gain: float
    reason: str


def time_saved(speedup: float) -> float:
    """Return the share of time saved, `1 - 1/speedup`, clipped to [-1, 1]."""
    if speedup <= 0:
        return FAILURE_PENALTY
    return max(-1.0, min(1.0, 1.0 - 1.0 / speedup))


def clearly_slower(result: VerificationResult) -> bool:
    """Return whether a correct candidate is slower than the start by more than the measured spread."""
    s = result.speedup
    return s is not None and s.high < 1.0 / (1.0 + s.noise)


def profile_bonus(result: VerificationResult) -> float:
    """Return the shaping term from profiler signals (0 when the gate did not profile both kernels)."""
    o, c = result.original_profile, result.candidate_profile
    if o is None or c is None:
        return 0.0
    before = max(o.dram_pct or 0.0, o.sm_pct or 0.0)
    after = max(c.dram_pct or 0.0, c.sm_pct or 0.0)
    bonus = max(-1.0, min(1.0, (after - before) / 100.0))
    if o.bottleneck.startswith("latency") and not c.bottleneck.startswith("latency"):
        bonus += 0.5
    return PROFILE_WEIGHT * max(-1.0, min(1.0, bonus))


def measured_faster(result: VerificationResult) -> bool:
    """Return whether a correct result's timing clears its spread in the candidate's favour.

    For screening only: a reduced problem ranks candidates, so a result the gate declined to call verified for
    reasons other than its timing (the GPU's clock or other processes moved during the measurement, timing stopped
    early against a better candidate) still says which candidate is faster. Never used for the user's size.
    """
    s = result.speedup
    ok = result.status in (Status.VERIFIED, Status.NOT_FASTER)
    return ok and s is not None and s.clears_spread and s.median > 1.0


def screening_reward(result: VerificationResult) -> Reward:
    """Return the reward of a screening result: its measured gain whenever the timing clears the spread."""
    r = reward_of(result)
    if result.status is Status.NOT_FASTER and measured_faster(result):
        assert result.speedup is not None
        gain = time_saved(result.speedup.median)
        return Reward(gain + profile_bonus(result), False, gain, f"faster {result.speedup.median:.3f}x")
    return r


def reward_of(result: VerificationResult) -> Reward:
    """Return the reward of a gate result (see the module docstring for the rules)."""
    status = result.status
    if status in FAILED or status is Status.SPEC_MISSING:
        return Reward(FAILURE_PENALTY, True, 0.0, f"{status.value}: terminal penalty")
    if status is Status.NO_GPU:
        return Reward(0.0, False, 0.0, "compile-only: built, not measured")
    s = result.speedup
    if s is None:
        return Reward(0.0, False, 0.0, f"{status.value}: no timing")
    if status is Status.VERIFIED:
        gain = time_saved(s.median)
        return Reward(gain + profile_bonus(result), False, gain, f"verified {s.median:.3f}x")
    if clearly_slower(result):
        gain = time_saved(s.median)
        return Reward(gain + profile_bonus(result), False, gain, f"slower: {s.median:.3f}x")
    return Reward(
        profile_bonus(result), False, 0.0, f"not faster: {s.median:.3f}x is inside the spread, counted as no gain"
    )
