"""The Dask backend on CPU: a real scheduler, a plain worker and a `warpwise worker` declaring a GPU resource."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from tests.verify.cluster_workers import start_logged, wait_for_workers  # noqa: E402
from tests.verify.helpers import candidate, variant  # noqa: E402
from warpwise.verify.backends import ClusterBackend  # noqa: E402
from warpwise.verify.gate import PreparedJob, prepare  # noqa: E402
from warpwise.verify.types import Options, Status  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, subprocess.Popen[bytes]]]:
    cache = tmp_path_factory.mktemp("cache")
    log = cache / "gpu-box.log"
    lc = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, resources={"warpwise-build": 1}, dashboard_address=None
    )
    env = {"WARPWISE_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
    gpu_worker = start_logged(
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
        log,
        env=env,
    )
    client = distributed.Client(lc)
    wait_for_workers(client, 2, [(gpu_worker, log)])
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


def test_waiting_for_workers_fails_clearly(tmp_path: Path) -> None:
    with (
        distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as lc,
        distributed.Client(lc) as client,
    ):
        log = tmp_path / "dead.log"
        dead = start_logged([sys.executable, "-c", "import sys; sys.stderr.write('no scheduler'); sys.exit(3)"], log)
        dead.wait(60)
        with pytest.raises(pytest.fail.Exception, match=r"exited with status 3 .*no scheduler"):
            wait_for_workers(client, 1, [(dead, log)])
        with pytest.raises(pytest.fail.Exception, match="has not 1 running workers after 1 s"):
            wait_for_workers(client, 1, [], timeout_s=1)


def test_the_cluster_backend_without_dask_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ValueError, match=r"warpwise\[cluster\]"):
        ClusterBackend("tcp://127.0.0.1:1")
