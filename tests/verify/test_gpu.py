"""The gate on a real GPU: every status, every fault class, every cheating candidate.

All tests share one local backend (one worker process at a time, replaced after each fault) and check, after
each fault, that the next job runs normally on a fresh worker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from warpwise.verify.backends import LocalBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.types import Options, Status, VerificationResult

pytestmark = pytest.mark.gpu

V = FIXTURES / "verify"
ORIGINAL = V / "axpy.cu"
FAST = Options(warmup_ms=10, rep_ms=40, time_limit_s=60)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBackend]:
    cache = ResultCache(tmp_path_factory.mktemp("cache") / "results.sqlite3")
    b = LocalBackend(gpus=1, cache=cache)
    yield b
    b.close()


def verify(
    backend: LocalBackend, candidate: Path, original: Path = ORIGINAL, kernel: str = "axpy", **opts: Any
) -> VerificationResult:
    """Verify a fixture candidate against a fixture original without the result cache."""
    options = dataclasses.replace(FAST, **opts)
    return Gate(backend).verify(Candidate.from_files(str(original), kernel, str(candidate)), options)


def assert_next_job_normal(backend: LocalBackend, pid_before: int | None) -> None:
    """After a fault the worker is new and a correct candidate verifies."""
    res = verify(backend, V / "fast_axpy.cu")
    assert res.status is Status.VERIFIED, res.message
    assert backend.slot_pids()[0] != pid_before


def test_faster_candidate_is_verified(backend: LocalBackend) -> None:
    res = verify(backend, V / "fast_axpy.cu")
    assert res.status is Status.VERIFIED, res.message
    assert res.seeds_checked == (0, 1, 2)
    assert res.speedup is not None and res.speedup.low > 1.0
    assert res.original_timing is not None and res.candidate_timing is not None
    assert res.candidate_timing.median_ms < res.original_timing.median_ms
    assert res.device is not None and not res.device.compile_only and res.device.arch.startswith("sm_")
    assert res.durations.check_s > 0 and res.durations.time_s > 0


def test_slower_candidate_is_not_faster(backend: LocalBackend) -> None:
    res = verify(backend, V / "slow_axpy.cu")
    assert res.status is Status.NOT_FASTER, res.message
    assert res.speedup is not None and not res.speedup.clears_spread


def test_self_check_is_not_faster(backend: LocalBackend) -> None:
    res = verify(backend, ORIGINAL)
    assert res.status is Status.NOT_FASTER, res.message


def test_wrong_candidate_is_incorrect_with_error_and_seed(backend: LocalBackend) -> None:
    res = verify(backend, V / "wrong_axpy.cu")
    assert res.status is Status.INCORRECT
    assert res.mismatch is not None and res.mismatch.buffer == "out" and res.mismatch.seed == 0
    assert res.mismatch.max_abs_error > 0.1


def test_compile_error_is_compile_failed_with_log(backend: LocalBackend) -> None:
    res = verify(backend, V / "broken_axpy.cu")
    assert res.status is Status.COMPILE_FAILED
    assert res.candidate_build is not None and 'identifier "z" is undefined' in res.candidate_build.log
    assert "broken_axpy.cu(4)" in res.candidate_build.log


@pytest.mark.parametrize(
    ("fixture", "error"),
    [
        ("fault_illegal_address.cu", "ILLEGAL_ADDRESS"),
        ("fault_misaligned.cu", "MISALIGNED_ADDRESS"),
        ("fault_trap.cu", "LAUNCH_FAILED"),
    ],
)
def test_sticky_faults_are_launch_failed_and_worker_replaced(backend: LocalBackend, fixture: str, error: str) -> None:
    verify(backend, V / "fast_axpy.cu")
    pid = backend.slot_pids()[0]
    res = verify(backend, V / fixture)
    assert res.status is Status.LAUNCH_FAILED, res.message
    assert error in res.message
    assert_next_job_normal(backend, pid)


def test_infinite_loop_times_out_and_worker_replaced(backend: LocalBackend) -> None:
    verify(backend, V / "fast_axpy.cu")
    pid = backend.slot_pids()[0]
    res = verify(backend, V / "fault_infinite_loop.cu", time_limit_s=15.0)
    assert res.status is Status.TIMED_OUT, res.message
    assert "check stage" in res.message
    assert_next_job_normal(backend, pid)


def test_out_of_memory_is_launch_failed(backend: LocalBackend) -> None:
    verify(backend, V / "fast_axpy.cu")
    pid = backend.slot_pids()[0]
    res = verify(backend, V / "oom.cu", original=V / "oom.cu")
    assert res.status is Status.LAUNCH_FAILED, res.message
    assert "out of memory" in res.message.lower()
    assert_next_job_normal(backend, pid)


def test_worker_killed_by_user_code_is_crashed(backend: LocalBackend) -> None:
    verify(backend, V / "fast_axpy.cu")
    pid = backend.slot_pids()[0]
    crash = V / "problem" / "crash.cu"
    res = verify(backend, crash, original=crash, kernel="crash")
    assert res.status is Status.CRASHED, res.message
    assert "signal 9" in res.message
    assert_next_job_normal(backend, pid)


@pytest.mark.parametrize(
    ("fixture", "why"),
    [
        ("cheat_stale_output.cu", "left unwritten"),
        ("cheat_unwritten.cu", "left unwritten"),
        ("cheat_zero_inputs.cu", "modified the input `x`"),
        ("cheat_out_of_bounds.cu", "outside the bounds of `out`"),
    ],
)
def test_cheating_candidates_are_rejected(backend: LocalBackend, fixture: str, why: str) -> None:
    res = verify(backend, V / fixture)
    assert res.status is Status.INCORRECT, res.message
    assert why in res.message


def test_cheat_on_another_stream_cannot_be_built(backend: LocalBackend) -> None:
    res = verify(backend, V / "cheat_other_stream.cu")
    assert res.status is Status.COMPILE_FAILED
    assert not res.verified


def test_problem_file_reference(backend: LocalBackend) -> None:
    relu = V / "problem" / "relu.cu"
    ok = verify(backend, relu, original=relu, kernel="relu")
    assert ok.status is Status.NOT_FASTER, ok.message
    bad = verify(backend, V / "problem" / "relu_identity.cu", original=relu, kernel="relu")
    assert bad.status is Status.INCORRECT
    assert bad.mismatch is not None and bad.mismatch.buffer == "y"


def test_kernelbench_problem_file(backend: LocalBackend) -> None:
    scale = V / "problem" / "scale.cu"
    res = verify(backend, scale, original=scale, kernel="scale")
    assert res.status is Status.NOT_FASTER, res.message


def test_inferred_spec_on_example(backend: LocalBackend) -> None:
    example = FIXTURES.parent.parent / "examples" / "vector_ops.cu"
    res = Gate(backend).verify(Candidate.from_files(str(example), "center", str(example)), FAST)
    assert res.status is Status.NOT_FASTER, res.message
    # The file holds three kernels; the resource figures are those of `center` (from the driver).
    assert res.original_build is not None and res.original_build.registers == res.candidate_build.registers
    assert res.original_build.registers is not None and res.original_build.registers > 0


def test_sanitizer_and_profile(backend: LocalBackend) -> None:
    res = verify(backend, V / "fast_axpy.cu", sanitizer=True, profile=True)
    assert res.status is Status.VERIFIED, res.message
    assert "memcheck" in res.sanitizer_log
    assert res.original_profile is not None and res.candidate_profile is not None, res.message
    assert res.candidate_profile.bottleneck in ("memory-bound", "compute-bound", "latency-bound")
    assert res.candidate_profile.duration_ms is not None and res.candidate_profile.duration_ms > 0


def test_timing_records_the_gpu_conditions(backend: LocalBackend) -> None:
    res = verify(backend, V / "fast_axpy.cu")
    assert res.status in (Status.VERIFIED, Status.NOT_FASTER), res.message
    c = res.conditions
    assert c is not None and c.source in ("nvml", "nvidia-smi"), c
    assert c.samples >= 2 and c.sm_mhz_min > 0 and c.sm_mhz_max >= c.sm_mhz_min and c.temp_c_max > 0
    assert 1 <= c.attempts <= 3 and len(c.retried_because) == c.attempts - 1
    if c.retried_because:
        assert "measured" in res.message or "never settled" in res.message
    if res.status is Status.VERIFIED:
        assert c.sm_mhz_max - c.sm_mhz_min <= 0.05 * c.sm_mhz_max and c.other_processes <= 0


def test_a_candidate_that_changes_after_timing_is_incorrect(backend: LocalBackend) -> None:
    res = verify(backend, V / "cheat_after_timing.cu")
    assert res.status is Status.INCORRECT, res.message
    assert "matched before timing but not after it" in res.message
    assert res.seeds_checked == (0, 1, 2)


def test_a_byte_written_with_the_poisons_value_is_not_unwritten(backend: LocalBackend) -> None:
    fill = V / "bytes_fill.cu"
    res = verify(backend, fill, original=fill, kernel="quantize")
    assert res.status is Status.NOT_FASTER, res.message


def test_bytes_left_unwritten_are_caught_when_the_poison_equals_the_value(backend: LocalBackend) -> None:
    res = verify(backend, V / "cheat_bytes_unwritten.cu", original=V / "bytes_fill.cu", kernel="quantize")
    assert res.status is Status.INCORRECT, res.message
    assert "left unwritten" in res.message
