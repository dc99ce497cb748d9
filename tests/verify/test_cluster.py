"""The Dask backend on CPU: a real scheduler, a plain worker and a `warpwise worker` declaring a GPU resource."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

distributed = pytest.importorskip("distributed")

from tests.verify.helpers import candidate, variant  # noqa: E402
from warpwise.verify.backends import ClusterBackend  # noqa: E402
from warpwise.verify.gate import PreparedJob, prepare  # noqa: E402
from warpwise.verify.types import Options, Status  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, subprocess.Popen[bytes]]]:
    cache = tmp_path_factory.mktemp("cache")
    lc = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, resources={"warpwise-build": 1}, dashboard_address=None
    )
    env = {"WARPWISE_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
    gpu_worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "warpwise",
            "worker",
            "--scheduler",
            lc.scheduler_address,
            "--gpus",
            "1",
            "--name",
            "gpu-box",
        ],
        env=env,
        stderr=subprocess.PIPE,
    )
    client = distributed.Client(lc)
    deadline = time.time() + 60
    while len(client.scheduler_info()["workers"]) < 2 and time.time() < deadline:
        time.sleep(0.2)
    assert len(client.scheduler_info()["workers"]) == 2
    yield client, gpu_worker
    client.close()
    gpu_worker.terminate()
    gpu_worker.wait(20)
    lc.close()


def _job(k: int) -> PreparedJob:
    prepared = prepare(candidate(variant(k)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob)
    return prepared


def test_gpu_jobs_go_only_to_workers_with_the_gpu_resource(cluster: tuple[object, object]) -> None:
    client, _ = cluster
    backend = ClusterBackend(client, require_gpu=True)
    assert backend.capacity() == 1
    gpu_addr = next(a for a, w in client.scheduler_info()["workers"].items() if w.get("name") == "gpu-box")
    results = [backend.run(_job(k).job) for k in range(4)]
    for r in results:
        assert r.status is Status.NO_GPU, r.message
        assert r.worker.startswith(gpu_addr), (r.worker, gpu_addr)


def test_compile_only_jobs_run_on_any_worker(cluster: tuple[object, object]) -> None:
    client, _ = cluster
    backend = ClusterBackend(client, require_gpu=False)
    assert backend.capacity() == 2
    futures = [backend.run(_job(100 + k).job) for k in range(3)]
    assert all(r.status is Status.NO_GPU and r.device is not None and r.device.compile_only for r in futures)
