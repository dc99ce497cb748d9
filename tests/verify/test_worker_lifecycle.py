"""Worker processes with real subprocesses: results, time limits, deaths, replacement, and import isolation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from tests.verify.helpers import AXPY, candidate, slow_source, variant
from warpwise.verify.gate import PreparedJob, prepare
from warpwise.verify.pool import WorkerSlot
from warpwise.verify.types import Options, Status, WorkerJob


def job(text: str, **opts: object) -> WorkerJob:
    prepared = prepare(candidate(text), Options(compile_only=True, **opts))  # type: ignore[arg-type]
    assert isinstance(prepared, PreparedJob)
    return prepared.job


@pytest.fixture
def slot(tmp_path: object) -> Iterator[WorkerSlot]:
    s = WorkerSlot(True, str(tmp_path))
    yield s
    s.close()


def test_compile_only_job_reports_builds(slot: WorkerSlot) -> None:
    stages: list[str] = []
    res = slot.run(job(variant(1)), stages.append)
    assert res.status is Status.NO_GPU, res.message
    assert res.device is not None and res.device.compile_only and res.device.arch == "sm_90"
    assert res.original_build is not None and res.original_build.ok and res.original_build.registers
    assert res.candidate_build is not None and res.candidate_build.ok
    assert stages == ["build"]
    assert res.durations.build_s > 0 and res.durations.check_s == 0 and res.durations.time_s == 0


def test_compile_error_is_a_result(slot: WorkerSlot) -> None:
    res = slot.run(job(AXPY.replace("y[i];", "z[i];")))
    assert res.status is Status.COMPILE_FAILED
    assert res.candidate_build is not None and 'identifier "z" is undefined' in res.candidate_build.log


def test_hang_past_the_time_limit_is_timed_out_and_the_worker_replaced(slot: WorkerSlot) -> None:
    slot.run(job(variant(2)))
    pid = slot.current_pid
    t0 = time.perf_counter()
    res = slot.run(job(slow_source(40000), time_limit_s=1.0))
    assert res.status is Status.TIMED_OUT, res.message
    assert time.perf_counter() - t0 < 10
    assert "build stage" in res.message
    after = slot.run(job(variant(3)))
    assert after.status is Status.NO_GPU
    assert slot.current_pid != pid and slot.restarts == 1


def test_killed_worker_is_crashed_and_replaced(slot: WorkerSlot) -> None:
    slot.run(job(variant(4)))
    pid = slot.current_pid
    assert pid is not None
    threading.Timer(0.5, lambda: os.kill(pid, signal.SIGKILL)).start()
    res = slot.run(job(slow_source(8000), time_limit_s=60.0))
    assert res.status is Status.CRASHED, res.message
    assert "signal 9" in res.message
    after = slot.run(job(variant(5)))
    assert after.status is Status.NO_GPU
    assert slot.current_pid not in (None, pid)


def test_worker_imports_only_plain_types() -> None:
    code = (
        "import sys, warpwise.verify.worker.__main__ as w; w.Worker(True, None);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('warpwise','tree_sitter','tree_sitter_cuda','yaml','pygls','lsprotocol','dask','distributed')))"
    )
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True, cwd="/")
    mods = eval(out.stdout)
    assert set(mods) <= {
        "warpwise",
        "warpwise.verify",
        "warpwise.verify.types",
        "warpwise.verify.worker.nvbuild",
        "warpwise.verify.provenance",
        "warpwise.verify.worker",
        "warpwise.verify.worker.__main__",
    }
