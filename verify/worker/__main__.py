"""The worker process: builds, checks and times one job at a time, isolated from the editor and the queue.

A worker is started with `python -m warpwise.verify.worker` and speaks JSON lines: it reads requests on stdin
(`{"op": "job", "job": {...}}`, `{"op": "peaks"}`, `{"op": "exit"}`) and writes events on a private copy of
stdout (`hello`, `stage`, `result`, `peaks`); the real stdout is pointed at stderr so that stray prints from
compilers or user code cannot corrupt the protocol. After a sticky CUDA error (an illegal address, a misaligned
access, a failed launch) the context is unusable, so the worker reports the result and exits; the parent
(`warpwise.verify.pool`) starts a fresh one. Hangs and crashes are the parent's business: it enforces the time
limit by killing the process group.

`--once JOBFILE --side SIDE` runs the sides of a job once on seed 0 and exits; the parent wraps that mode in
`compute-sanitizer` and `ncu`.

Imports: the standard library, `warpwise.verify.types`, `warpwise.verify.provenance` and
`warpwise.verify.worker.nvbuild` at start; numpy, torch and `warpwise.verify.worker.device` (GPU mode only) once
the GPU is used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from warpwise.verify import provenance
from warpwise.verify.types import (
    PROTOCOL_VERSION,
    BuildInfo,
    DeviceIdentity,
    Durations,
    Side,
    Status,
    VerificationResult,
    WorkerJob,
    to_json_line,
)
from warpwise.verify.worker import nvbuild

EXIT_STICKY = 3
EXIT_ORPHANED = 4
DEFAULT_ARCH = "sm_90"

Emit = Callable[[dict[str, Any]], None]


class _Exit(Exception):
    """Raised after a result when the worker must not take another job (its CUDA context is lost)."""


def _compile_failed(which: str, info: BuildInfo) -> str:
    """Return the one-line message of a failed build."""
    first = next((ln for ln in info.log.splitlines() if "error" in ln.lower()), info.log.splitlines()[0:1])
    line = first if isinstance(first, str) else (first[0] if first else "")
    return f"the {which} kernel does not compile: {line.strip()}"


class Worker:
    """The state of one worker process: build cache, and the GPU when there is one."""

    def __init__(self, compile_only: bool, build_cache: str | None) -> None:
        self.cache = nvbuild.BuildCache(build_cache)
        self.toolkit = nvbuild.toolkit_label()
        self.device: Any = None
        self.compile_only = compile_only
        self.init_error = ""
        if not compile_only:
            try:
                from warpwise.verify.worker import device as dev

                self.device = dev.Device()
            except Exception as exc:
                self.init_error = f"{type(exc).__name__}: {exc}"
                self.compile_only = True

    @property
    def arch(self) -> str:
        """Return the architecture builds target."""
        return self.device.arch if self.device is not None else DEFAULT_ARCH

    def identity(self, arch: str | None = None) -> DeviceIdentity:
        """Return what results from this worker are tagged with."""
        if self.device is not None:
            return self.device.identity(self.toolkit)
        return DeviceIdentity("none", "none", self.toolkit, arch or DEFAULT_ARCH, compile_only=True)

    def run(self, job: WorkerJob, emit: Emit) -> VerificationResult:
        """Build, check and time one job; expected failures become results."""
        t0 = time.perf_counter()
        arch = job.options.arch or self.arch
        compile_only = self.compile_only or job.options.compile_only
        identity = self.identity(arch)
        base = VerificationResult(status=Status.NO_GPU, message="", key=job.key, device=identity, worker=_worker_id())
        emit({"event": "stage", "job_id": job.job_id, "stage": "build"})
        ob = nvbuild.build(job.original, arch, self.cache)
        cb = nvbuild.build(job.candidate, arch, self.cache)
        build_s = (0.0 if ob.info.cached else ob.info.seconds) + (0.0 if cb.info.cached else cb.info.seconds)
        base = base.with_(original_build=ob.info, candidate_build=cb.info)
        if not ob.info.ok:
            return _done(base, Status.COMPILE_FAILED, _compile_failed("original", ob.info), t0, build_s=build_s)
        if not cb.info.ok:
            return _done(base, Status.COMPILE_FAILED, _compile_failed("candidate", cb.info), t0, build_s=build_s)
        if compile_only:
            why = f" ({self.init_error})" if self.init_error else ""
            msg = f"compile-only: both kernels build for {arch}; nothing was run or timed because no GPU is used{why}"
            return _done(base, Status.NO_GPU, msg, t0, build_s=build_s)
        if job.spec is None:
            return _done(base, Status.SPEC_MISSING, "no problem spec was given, so nothing can be run", t0)
        from warpwise.verify.worker import gpu_job

        return gpu_job.check_and_time(self.device, job, ob, cb, base, emit, t0, build_s)


def _done(
    base: VerificationResult, status: Status, message: str, t0: float, *, build_s: float = 0.0
) -> VerificationResult:
    """Return a finished result with its durations."""
    total = time.perf_counter() - t0
    return base.with_(
        status=status,
        message=message,
        durations=Durations(build_s=build_s, total_s=total),
        created=time.time(),
    )


def _worker_id() -> str:
    """Return a label of this worker process (host and pid)."""
    return f"{os.uname().nodename}:{os.getpid()}"


def _exception_result(exc: Exception, job: WorkerJob, worker: Worker) -> tuple[VerificationResult, bool]:
    """Turn an exception into a result; say whether this worker must exit afterwards."""
    if worker.device is not None:
        from warpwise.verify.worker import gpu_job

        return gpu_job.result_of_exception(exc, job, worker.identity())
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    msg = f"the worker raised {type(exc).__name__}: {exc}\n{tb}"
    return VerificationResult(status=Status.CRASHED, message=msg, key=job.key, created=time.time()), True


def _protocol_out() -> Any:
    """Return a private binary stream for protocol messages and point fd 1 at stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "wb", buffering=0)


def exit_with_parent(interval_s: float = 0.2) -> None:
    """Exit as soon as the parent process is gone.

    The parent enforces the time limit and reads the result; when it dies (a Dask worker killed with SIGKILL, an
    editor that crashed) the job in flight must not run on, unwatched, beside its re-run elsewhere (a hung
    kernel would hold the GPU for good). The worker sits in its own session, so nothing else would stop it.
    """
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval_s)
            if os.getppid() != parent:
                os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def serve(compile_only: bool, build_cache: str | None) -> int:
    """Answer requests on stdin until `exit`, end of input, or a sticky fault."""
    exit_with_parent()
    out = _protocol_out()

    def emit(msg: dict[str, Any]) -> None:
        out.write(to_json_line(msg))

    worker = Worker(compile_only, build_cache)
    emit(
        {
            "event": "hello",
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "identity": worker.identity().to_dict(),
            "init_error": worker.init_error,
        }
    )
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        if op == "exit":
            return 0
        if op == "peaks":
            from warpwise.verify.worker import gpu_job

            emit({"event": "peaks", "peaks": gpu_job.measure_peaks(worker.device)})
            continue
        if op != "job":
            emit({"event": "error", "message": f"unknown request {op!r}"})
            continue
        job = WorkerJob.from_dict(req["job"])
        try:
            result = worker.run(job, emit)
            sticky = False
        except Exception as exc:
            result, sticky = _exception_result(exc, job, worker)
        result = result.with_(provenance=provenance.provenance_for(result.device or worker.identity()))
        emit({"event": "result", "job_id": job.job_id, "result": result.to_dict()})
        if sticky:
            return EXIT_STICKY
    return 0


def run_once(job_file: str, side: str) -> int:
    """Run the chosen sides of a job once on seed 0 (for compute-sanitizer and ncu); exit 0 when all went well."""
    with open(job_file) as fh:
        job = WorkerJob.from_dict(json.load(fh))
    worker = Worker(False, os.environ.get("WARPWISE_BUILD_CACHE"))
    if worker.device is None:
        print(f"warpwise worker: no GPU: {worker.init_error}", file=sys.stderr)
        return 2
    from warpwise.verify.worker import gpu_job

    sides = [Side.ORIGINAL, Side.CANDIDATE] if side == "both" else [Side(side)]
    return gpu_job.run_sides_once(worker.device, job, sides, worker.arch, worker.cache)


def main(argv: list[str] | None = None) -> int:
    """Run the worker process."""
    p = argparse.ArgumentParser(prog="python -m warpwise.verify.worker")
    p.add_argument("--compile-only", action="store_true", help="never touch a GPU; build and report resources only")
    p.add_argument("--build-cache", default=None, help="folder for cached builds")
    p.add_argument("--once", metavar="JOBFILE", help="run one job's kernels once and exit (for profilers)")
    p.add_argument("--side", default="both", choices=("original", "candidate", "both"))
    args = p.parse_args(argv)
    if args.once:
        return run_once(args.once, args.side)
    return serve(args.compile_only, args.build_cache)


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except BrokenPipeError:
        raise SystemExit(0) from None
    except Exception:
        traceback.print_exc()
        raise SystemExit(1) from None
