"""A Dask worker killed mid-run: no job lost, none completed twice, one cache row per key (CPU, compile-only jobs).

A real scheduler (`LocalCluster` without workers) and two `warpwise worker --gpus 1` processes; the verification
queue submits through `ClusterBackend`. A worker plugin writes one line per job execution on the worker side, so
that executions are counted where they happen. Once jobs are done and the second worker is executing one, that
worker gets SIGKILL; its job must be re-run on the other worker and its isolated job process must exit with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

import cloudpickle  # noqa: E402
from distributed.diagnostics.plugin import WorkerPlugin  # noqa: E402

from tests.verify.cluster_workers import start_logged, wait_for_workers  # noqa: E402
from tests.verify.helpers import candidate  # noqa: E402
from warpwise.verify.backends import ClusterBackend  # noqa: E402
from warpwise.verify.cache import ResultCache  # noqa: E402
from warpwise.verify.gate import Gate  # noqa: E402
from warpwise.verify.jobqueue import VerificationQueue  # noqa: E402
from warpwise.verify.types import Options, Status  # noqa: E402

# The workers cannot import this test module; send the plugin by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

OPTS = Options(compile_only=True)


class JobLog(WorkerPlugin):
    """One JSON line per start and end of a warpwise job's execution on a worker."""

    name = "test-job-log"

    def __init__(self, path: str) -> None:
        self.path = path
        self.worker_name = ""

    def setup(self, worker: Any) -> None:
        self.worker_name = str(worker.name)

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if not str(key).startswith("warpwise-"):
            return
        if finish == "executing":
            ev = "start"
        elif start == "executing":
            ev = "done" if finish == "memory" else f"left:{finish}"
        else:
            return
        rec = {"t": time.time(), "ev": ev, "key": str(key), "worker": self.worker_name}
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(rec) + "\n").encode())
        finally:
            os.close(fd)


def long_source(lines: int, salt: int = 0) -> str:
    """Return a distinct AXPY candidate whose build takes about 0.03 s a line (no loop for the compiler to judge)."""
    body = "".join(f"  v = sinf(v) * cosf(v + {i + salt}.0f);\n" for i in range(lines))
    return (
        "__global__ void axpy(int n, float a, const float* x, const float* y, float* out) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = x[i];\n"
        + body
        + "  if (i < n) out[i] = a * x[i] + y[i] + 0.0f * v;\n}\n"
    )


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _start_worker(address: str, name: str, tmp: Path) -> subprocess.Popen[bytes]:
    cache = tmp / name
    cache.mkdir()
    return start_logged(
        [sys.executable, "-P", "-m", "warpwise", "worker", "--scheduler", address, "--gpus", "1", "--name", name],
        tmp / f"{name}.log",
        env={**os.environ, "WARPWISE_CACHE_DIR": str(cache)},
        cwd=str(cache),
        stdout=subprocess.DEVNULL,
    )


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[Any, dict[str, subprocess.Popen[bytes]], Path]]:
    lc = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None)
    client = distributed.Client(lc)
    joblog = tmp_path / "joblog.jsonl"
    client.register_plugin(JobLog(str(joblog)), name=JobLog.name)
    procs = {name: _start_worker(lc.scheduler_address, name, tmp_path) for name in ("w0", "w1")}
    wait_for_workers(client, 2, [(p, tmp_path / f"{name}.log") for name, p in procs.items()])
    yield client, procs, joblog
    client.close()
    for p in procs.values():
        if p.poll() is None:
            p.terminate()
            p.wait(20)
    lc.close()


def test_killed_worker_loses_no_job_and_completes_none_twice(
    two_workers: tuple[Any, dict[str, subprocess.Popen[bytes]], Path], tmp_path: Path
) -> None:
    client, procs, joblog = two_workers
    cache_path = tmp_path / "results.sqlite3"
    cache = ResultCache(cache_path)
    queue = VerificationQueue(Gate(ClusterBackend(client), cache))
    # Distinct candidates whose builds take about a second, so that the victim is surely mid-job when it is killed.
    n = 6
    handles = [queue.submit(candidate(long_source(40, 7 * k)), OPTS) for k in range(n)]
    key_of = {f"warpwise-{h.job_id}": k for k, h in enumerate(handles)}

    victim = procs["w1"]
    in_flight: list[str] = []
    children: list[int] = []
    deadline = time.time() + 120
    while not in_flight and time.time() < deadline:
        recs = _records(joblog)
        done = sum(r["ev"] == "done" for r in recs)
        mine = [r for r in recs if r["worker"] == "w1"]
        ended = {r["key"] for r in mine if r["ev"] != "start"}
        running = {r["key"]: r["t"] for r in mine if r["ev"] == "start" and r["key"] not in ended}
        if done >= 1 and running and time.time() - max(running.values()) < 0.2:
            children = [c.pid for c in psutil.Process(victim.pid).children(recursive=True)]
            victim.send_signal(signal.SIGKILL)
            killed_at = time.time()
            in_flight = sorted(running)
        time.sleep(0.005)
    assert in_flight, "the second worker never ran a job"
    victim.wait(10)

    results = [h.wait(180) for h in handles]
    queue.close()
    time.sleep(0.3)

    # The killed worker's isolated job process went with it (it would otherwise finish the job unwatched).
    gone = time.time() + 3
    while any(_alive(p) for p in children) and time.time() < gone:
        time.sleep(0.05)
    assert children and not [p for p in children if _alive(p)]

    # No job lost: every one came back with its result, none crashed.
    assert all(r is not None and r.status is Status.NO_GPU for r in results), [r and r.status for r in results]

    # Worker side: every job completed exactly once; the interrupted one(s) started on the victim, ended elsewhere.
    recs = [r for r in _records(joblog) if r["key"] in key_of]
    starts = Counter(r["key"] for r in recs if r["ev"] == "start")
    dones = Counter(r["key"] for r in recs if r["ev"] == "done")
    assert dones == Counter(dict.fromkeys(key_of, 1))
    for key in in_flight:
        assert [r["worker"] for r in recs if r["key"] == key and r["ev"] == "start"] == ["w1", "w0"]
        assert [r["worker"] for r in recs if r["key"] == key and r["ev"] == "done"] == ["w0"]
    assert sum(starts.values()) == n + len(in_flight)
    assert not [r for r in recs if r["worker"] == "w1" and r["t"] > killed_at + 0.5]

    # The cache: one row per key, one per pair, n in all.
    import sqlite3

    db = sqlite3.connect(cache_path)
    total, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM results").fetchone()
    per_pair = db.execute("SELECT COUNT(*) FROM results GROUP BY original_hash, candidate_hash, spec_hash").fetchall()
    db.close()
    assert total == distinct == n
    assert [c for (c,) in per_pair] == [1] * n


def test_job_process_exits_when_its_parent_dies(tmp_path: Path) -> None:
    """A worker process whose parent (a Dask worker, an editor) is killed stops its job instead of finishing it."""
    parent = tmp_path / "parent.py"
    (tmp_path / "long.cu").write_text(long_source(150))  # a build of several seconds
    parent.write_text(
        "import pathlib\n"
        "from tests.verify.helpers import candidate\n"
        "from warpwise.verify.gate import prepare\n"
        "from warpwise.verify.pool import WorkerSlot\n"
        "from warpwise.verify.types import Options\n"
        f"text = pathlib.Path({str(tmp_path / 'long.cu')!r}).read_text()\n"
        "job = prepare(candidate(text), Options(compile_only=True)).job\n"
        f"slot = WorkerSlot(True, {str(tmp_path / 'builds')!r})\n"
        "print(slot.worker().pid, flush=True)\n"
        "print(slot.run(job).status, flush=True)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(parent)], stdout=subprocess.PIPE, text=True, env=env, cwd=root)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    time.sleep(0.5)  # the child is building (seconds), not idle on its input
    assert _alive(child)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    t0 = time.time()
    while _alive(child) and time.time() - t0 < 10:
        time.sleep(0.02)
    assert not _alive(child)
    assert time.time() - t0 < 2.0
