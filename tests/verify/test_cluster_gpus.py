"""One `warpwise worker --gpus 2` (the default on a machine with two GPUs): concurrent jobs never share a process.

The Dask worker runs two jobs at once; each must run in a worker process of its own and come back with its own
result. (They used to share one worker process and its result pipe: results were swapped between jobs and cached
under the wrong key, or jobs timed out waiting for a result another thread had taken.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")

from tests.verify.cluster_workers import start_logged, wait_for_workers  # noqa: E402
from tests.verify.helpers import candidate, variant  # noqa: E402
from tests.verify.test_cluster_kill import long_source  # noqa: E402
from warpwise.verify.backends import ClusterBackend  # noqa: E402
from warpwise.verify.cache import ResultCache  # noqa: E402
from warpwise.verify.gate import Gate, PreparedJob  # noqa: E402
from warpwise.verify.jobqueue import VerificationQueue  # noqa: E402
from warpwise.verify.types import Options, Status  # noqa: E402


@pytest.fixture
def two_gpu_worker(tmp_path: Path) -> Iterator[Any]:
    lc = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None)
    client = distributed.Client(lc)
    proc = start_logged(
        [sys.executable, "-P", "-m", "warpwise", "worker", "--scheduler", lc.scheduler_address, "--gpus", "2"],
        tmp_path / "worker.log",
        env={**os.environ, "WARPWISE_CACHE_DIR": str(tmp_path / "worker")},
        cwd=str(tmp_path),
        stdout=subprocess.DEVNULL,
    )
    wait_for_workers(client, 1, [(proc, tmp_path / "worker.log")])
    yield client
    client.close()
    proc.terminate()
    proc.wait(20)
    lc.close()


def test_concurrent_jobs_on_one_dask_worker_get_their_own_results(two_gpu_worker: Any, tmp_path: Path) -> None:
    backend = ClusterBackend(two_gpu_worker)
    assert backend.capacity() == 2
    cache = ResultCache(tmp_path / "results.sqlite3")
    queue = VerificationQueue(Gate(backend, cache))
    sources = [long_source(20, 7 * k) if k % 2 else variant(k) for k in range(6)]
    handles = [queue.submit(candidate(s), Options(compile_only=True, time_limit_s=90)) for s in sources]
    results = [h.wait(180) for h in handles]
    queue.close()
    pids = set()
    for h, r in zip(handles, results, strict=True):
        assert r is not None and r.status is Status.NO_GPU, r and r.message
        assert isinstance(h.prepared, PreparedJob)
        assert r.key == h.prepared.job.key
        stored = cache.find(h.prepared.key.original_hash, h.prepared.key.candidate_hash, h.prepared.key.spec_hash)
        assert [s.key for s in stored] == [h.prepared.job.key]
        pids.add(r.worker.rsplit(":", 1)[-1])
    assert len(pids) == 2, pids
