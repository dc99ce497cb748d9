"""Where jobs run: one interface, three backends.

- `LocalBackend`: worker processes on this machine's GPUs (one `WorkerSlot` per GPU, pinned with
  `CUDA_VISIBLE_DEVICES`). Sanitizer and profiler passes run here too, next to the GPU.
- `CompileOnlyBackend`: worker processes that never touch a GPU; results are `no_gpu` with build reports.
- `ClusterBackend`: a Dask distributed scheduler. GPU machines join with `warpwise worker --scheduler ADDR`,
  which declares the `GPU` resource; jobs that need a GPU ask for one unit of it, so the scheduler routes them
  only to such workers. Each Dask worker runs jobs in its own isolated worker process (the same `WorkerSlot`),
  so a faulty kernel cannot take down the Dask worker.

`make_backend(name, ...)` picks one by name (`local`, `compile-only`, `cluster`).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from warpwise.verify import profile, provenance
from warpwise.verify.cache import ResultCache, cache_dir
from warpwise.verify.pool import WorkerSlot
from warpwise.verify.types import DeviceIdentity, Status, VerificationResult, WorkerJob

Progress = Callable[[str], None]
GPU_RESOURCE = "GPU"
BUILD_RESOURCE = "warpwise-build"


class Backend(Protocol):
    """Runs worker jobs somewhere and returns their results."""

    name: str

    def identity(self) -> DeviceIdentity | None:
        """Return the device results will be measured on, or None when it is not known in advance."""
        ...

    def capacity(self) -> int:
        """Return how many jobs can run at once."""
        ...

    def run(self, job: WorkerJob, progress: Progress | None = None) -> VerificationResult:
        """Run one job to its result (blocking); expected failures are results, never exceptions."""
        ...

    def close(self) -> None:
        """Release workers and connections."""
        ...


def build_cache_dir() -> str:
    """Return the folder where builds are cached."""
    return str(cache_dir() / "builds")


def run_with_extras(
    slot: WorkerSlot, job: WorkerJob, progress: Progress | None, cache: ResultCache | None
) -> VerificationResult:
    """Run a job on a slot, then the sanitizer and profiler passes it asks for."""
    result = slot.run(job, progress)
    passed = result.status in (Status.VERIFIED, Status.NOT_FASTER)
    if job.options.sanitizer and passed:
        if progress:
            progress("sanitize")
        result = profile.sanitize(job, result)
    if job.options.profile and result.status in (Status.VERIFIED, Status.NOT_FASTER, Status.INCORRECT):
        if progress:
            progress("profile")
        t0 = time.perf_counter()
        peaks = device_peaks(slot, cache)
        result = profile.profile(job, result, peaks)
        result = result.with_(
            durations=result.durations.__class__(
                **{**result.durations.to_dict(), "profile_s": time.perf_counter() - t0}
            )
        )
    # The measuring machine signs last, over everything the extra passes added.
    return provenance.stamp(result)


def device_peaks(slot: WorkerSlot, cache: ResultCache | None) -> dict[str, float] | None:
    """Return the device's measured peaks, measuring them once per GPU and driver."""
    ident = slot.identity()
    if ident.compile_only:
        return None
    if cache is not None:
        known = cache.get_peaks(ident.gpu, ident.driver)
        if known:
            return known
    peaks = slot.worker().peaks()
    if peaks and cache is not None:
        cache.put_peaks(ident.gpu, ident.driver, peaks)
    return peaks or None


class _SlotPool:
    """Slots handed out one job at a time."""

    def __init__(self, slots: list[WorkerSlot]) -> None:
        self.slots = slots
        self.free: queue.Queue[WorkerSlot] = queue.Queue()
        for s in slots:
            self.free.put(s)

    def run(self, fn: Callable[[WorkerSlot], VerificationResult]) -> VerificationResult:
        """Run `fn` on the next free slot."""
        slot = self.free.get()
        try:
            return fn(slot)
        finally:
            self.free.put(slot)

    def close(self) -> None:
        """Close every slot."""
        for s in self.slots:
            s.close()


def gpu_count() -> int:
    """Return the number of CUDA devices visible to the driver (0 without a driver or GPU)."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return 0
    try:
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return 0
        err, n = driver.cuDeviceGetCount()
        return int(n) if int(err) == 0 else 0
    except Exception:
        return 0


class LocalBackend:
    """Worker processes on this machine's GPUs."""

    name = "local"

    def __init__(self, gpus: int | None = None, cache: ResultCache | None = None) -> None:
        n = gpus if gpus is not None else max(gpu_count(), 1)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else [str(i) for i in range(n)]
        self.cache = cache
        slots = [
            WorkerSlot(False, build_cache_dir(), env={"CUDA_VISIBLE_DEVICES": ids[i % len(ids)]}) for i in range(n)
        ]
        self._pool = _SlotPool(slots)
        self._identity: DeviceIdentity | None = None

    def identity(self) -> DeviceIdentity | None:
        """Return the identity of the first GPU (all slots of one machine are assumed alike)."""
        if self._identity is None:
            self._identity = self._pool.slots[0].identity()
        return self._identity

    def capacity(self) -> int:
        """Return the number of GPUs used."""
        return len(self._pool.slots)

    def run(self, job: WorkerJob, progress: Progress | None = None) -> VerificationResult:
        """Run a job on a free GPU."""
        return self._pool.run(lambda slot: run_with_extras(slot, job, progress, self.cache))

    def slot_pids(self) -> list[int | None]:
        """Return the pids of the current worker processes (for tests and diagnostics)."""
        return [s.current_pid for s in self._pool.slots]

    def close(self) -> None:
        """Stop the workers."""
        self._pool.close()


class CompileOnlyBackend(LocalBackend):
    """Worker processes that build but never run: results are `no_gpu`, labelled compile-only."""

    name = "compile-only"

    def __init__(self, workers: int = 1, cache: ResultCache | None = None) -> None:
        self.cache = cache
        self._pool = _SlotPool([WorkerSlot(True, build_cache_dir()) for _ in range(workers)])
        self._identity = None


# The worker slots of this Dask worker process, created on first use: one per thread of the Dask worker (one per
# GPU that `warpwise worker --gpus N` declared), GPU slots pinned to one visible device each. A job takes a free
# slot for its whole run, so that concurrent jobs never share a worker process (and its result pipe).
_REMOTE_POOLS: dict[bool, _SlotPool] = {}
_REMOTE_LOCK = threading.Lock()


def _remote_width() -> int:
    """Return how many jobs this Dask worker runs at once (1 outside a Dask worker)."""
    try:
        from distributed import get_worker

        return max(int(get_worker().state.nthreads), 1)
    except (ImportError, ValueError, AttributeError):
        return 1


def _remote_pool(compile_only: bool) -> _SlotPool:
    """Return this process's slots for compile-only or GPU jobs."""
    with _REMOTE_LOCK:
        pool = _REMOTE_POOLS.get(compile_only)
        if pool is None:
            n = _remote_width()
            if compile_only:
                slots = [WorkerSlot(True, build_cache_dir()) for _ in range(n)]
            else:
                visible = os.environ.get("CUDA_VISIBLE_DEVICES")
                ids = visible.split(",") if visible else [str(i) for i in range(n)]
                env = [{"CUDA_VISIBLE_DEVICES": ids[i % len(ids)]} for i in range(n)]
                slots = [WorkerSlot(False, build_cache_dir(), env=env[i]) for i in range(n)]
            pool = _REMOTE_POOLS[compile_only] = _SlotPool(slots)
        return pool


def remote_run(job_doc: dict[str, Any], compile_only: bool) -> dict[str, Any]:
    """Run a job inside a Dask worker, in an isolated worker process of its own; return the result as a dict."""
    job = WorkerJob.from_dict(job_doc)
    result = _remote_pool(compile_only).run(lambda slot: run_with_extras(slot, job, None, None))
    try:
        from distributed import get_worker

        where = get_worker().address
    except (ImportError, ValueError):
        where = result.worker
    return result.with_(worker=f"{where} ({result.worker})").to_dict()


class ClusterBackend:
    """Jobs on a Dask distributed cluster; GPU jobs go only to workers that declared the `GPU` resource."""

    name = "cluster"

    def __init__(self, address: str | Any, *, require_gpu: bool = True, slots: int | None = None) -> None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise ValueError("the cluster backend needs Dask: pip install 'warpwise[cluster]'") from exc

        self.client: Any = address if hasattr(address, "submit") else Client(address, timeout="30s")
        self.require_gpu = require_gpu
        self._slots = slots

    def identity(self) -> DeviceIdentity | None:
        """Return None: which worker (and GPU) runs a job is the scheduler's choice."""
        return None

    def capacity(self) -> int:
        """Return the number of workers that can take jobs."""
        if self._slots is not None:
            return self._slots
        info = self.client.scheduler_info()
        want = GPU_RESOURCE if self.require_gpu else BUILD_RESOURCE
        n = sum(int(w.get("resources", {}).get(want, 0)) for w in info.get("workers", {}).values())
        return max(n, 1)

    def run(self, job: WorkerJob, progress: Progress | None = None) -> VerificationResult:
        """Submit a job to the cluster and wait for its result."""
        resources = {GPU_RESOURCE: 1} if self.require_gpu else {BUILD_RESOURCE: 1}
        if progress:
            progress("queued on cluster")
        future = self.client.submit(
            remote_run,
            job.to_dict(),
            not self.require_gpu,
            resources=resources,
            pure=False,
            key=f"warpwise-{job.job_id}",
        )
        try:
            doc = future.result(timeout=job.options.time_limit_s * 3 + 300)
        except Exception as exc:
            return VerificationResult(
                status=Status.CRASHED,
                message=f"the cluster did not return a result: {type(exc).__name__}: {exc}",
                key=job.key,
                created=time.time(),
            )
        return VerificationResult.from_dict(doc)

    def close(self) -> None:
        """Close the connection (the cluster keeps running)."""
        self.client.close()


def make_backend(name: str, *, scheduler: str | None = None, cache: ResultCache | None = None) -> Backend:
    """Return a backend by name: `local`, `compile-only` or `cluster`."""
    if name == "local":
        return LocalBackend(cache=cache)
    if name == "compile-only":
        return CompileOnlyBackend(cache=cache)
    if name == "cluster":
        if not scheduler:
            raise ValueError("the cluster backend needs a scheduler address (--scheduler tcp://HOST:8786)")
        return ClusterBackend(scheduler)
    raise ValueError(f"unknown backend `{name}` (local, compile-only, cluster)")
