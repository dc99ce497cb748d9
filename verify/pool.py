"""Worker processes seen from the parent: start, send a job, enforce its time limit, replace what died.

A `WorkerProcess` is one `python -m warpwise.verify.worker` child in its own process group. Its events arrive
on a pipe read by a thread into a queue, so waiting for the next event has a deadline. When the deadline passes
the whole process group is killed and the job becomes `timed_out`; when the pipe closes before a result the job
becomes `crashed` (with the tail of the worker's stderr). Either way the next job gets a fresh process.

A `WorkerSlot` owns one worker at a time and starts the replacement in the background as soon as one dies, so
the next job does not pay for the start (importing torch and creating a CUDA context take seconds).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from warpwise.verify.types import (
    DeviceIdentity,
    Durations,
    Status,
    VerificationResult,
    WorkerJob,
    to_json_line,
)

Progress = Callable[[str], None]
START_TIMEOUT_S = 300.0


class WorkerStartError(RuntimeError):
    """The worker process did not start (or did not say hello in time)."""


class WorkerProcess:
    """One worker child process and the pipes to it."""

    def __init__(self, compile_only: bool, build_cache: str | None = None, env: dict[str, str] | None = None) -> None:
        self.compile_only = compile_only
        # `-P` and a neutral working folder keep the user's workspace (a stray `torch.py`, a checkout of
        # warpwise itself) off the worker's import path.
        cmd = [sys.executable, "-P", "-m", "warpwise.verify.worker"]
        if compile_only:
            cmd.append("--compile-only")
        if build_cache:
            cmd += ["--build-cache", build_cache]
        child_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=child_env,
            cwd=tempfile.gettempdir(),
        )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        threading.Thread(target=self._read_events, daemon=True, name=f"worker-{self.proc.pid}-out").start()
        threading.Thread(target=self._read_stderr, daemon=True, name=f"worker-{self.proc.pid}-err").start()
        self.identity: DeviceIdentity | None = None
        self.init_error = ""
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        """Return the process id."""
        return self.proc.pid

    def _read_events(self) -> None:
        """Move protocol lines from the child's stdout into the event queue (None marks the end)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.stderr_tail.append(line.decode("utf-8", "replace"))
        self.events.put(None)

    def _read_stderr(self) -> None:
        """Keep the last lines the child wrote to stderr."""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip("\n"))

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> DeviceIdentity:
        """Wait for the worker's hello and return the device identity it reports."""
        try:
            msg = self.events.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise WorkerStartError(f"the worker did not start within {timeout:.0f} s") from None
        if msg is None or msg.get("event") != "hello":
            self.kill()
            tail = "\n".join(list(self.stderr_tail)[-20:])
            raise WorkerStartError(f"the worker exited while starting:\n{tail}")
        self.identity = DeviceIdentity.from_dict(msg["identity"])
        self.init_error = msg.get("init_error", "")
        return self.identity

    def alive(self) -> bool:
        """Return whether the process is still running."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """Kill the worker's whole process group and reap it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def close(self) -> None:
        """Ask the worker to exit, then make sure it did."""
        if self.alive():
            with contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.write(to_json_line({"op": "exit"}))
                self.proc.stdin.flush()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.kill()

    def request(self, msg: dict[str, Any]) -> None:
        """Send one request line."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(to_json_line(msg))
        self.proc.stdin.flush()

    def run(self, job: WorkerJob, progress: Progress | None = None) -> VerificationResult:
        """Run one job with its time limit; a hang or a death becomes a result."""
        t0 = time.perf_counter()
        limit = job.options.time_limit_s
        stage = "build"
        try:
            self.request({"op": "job", "job": job.to_dict()})
        except (OSError, ValueError):
            return self._crashed(job, stage, t0)
        deadline = time.monotonic() + limit
        while True:
            remaining = deadline - time.monotonic()
            try:
                msg = self.events.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                self.kill()
                return VerificationResult(
                    status=Status.TIMED_OUT,
                    message=f"the job ran past its {limit:.0f} s time limit in the {stage} stage "
                    f"(a kernel that never finishes?); the worker was replaced",
                    key=job.key,
                    device=self.identity,
                    durations=Durations(total_s=time.perf_counter() - t0),
                    worker=f"pid {self.pid}",
                    created=time.time(),
                )
            if msg is None:
                return self._crashed(job, stage, t0)
            event = msg.get("event")
            if event == "stage":
                stage = msg.get("stage", stage)
                if progress is not None:
                    progress(stage)
            elif event == "result":
                return VerificationResult.from_dict(msg["result"])

    def _crashed(self, job: WorkerJob, stage: str, t0: float) -> VerificationResult:
        """Return the result of a worker that died in the middle of a job."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        code = self.proc.poll()
        tail = "\n".join(list(self.stderr_tail)[-30:])
        how = f"exit code {code}" if code is None or code >= 0 else f"signal {-code}"
        return VerificationResult(
            status=Status.CRASHED,
            message=f"the worker died in the {stage} stage ({how}); it was replaced\n{tail}".rstrip(),
            key=job.key,
            device=self.identity,
            durations=Durations(total_s=time.perf_counter() - t0),
            worker=f"pid {self.pid}",
            created=time.time(),
        )

    def peaks(self, timeout: float = 120.0) -> dict[str, float]:
        """Ask the worker to measure the device's copy bandwidth and FMA rate."""
        self.request({"op": "peaks"})
        deadline = time.monotonic() + timeout
        while True:
            msg = self.events.get(timeout=max(deadline - time.monotonic(), 0.0))
            if msg is None:
                return {}
            if msg.get("event") == "peaks":
                return dict(msg["peaks"])


class WorkerSlot:
    """One worker at a time, replaced when it dies; the replacement starts in the background."""

    def __init__(self, compile_only: bool, build_cache: str | None = None, env: dict[str, str] | None = None) -> None:
        self.compile_only = compile_only
        self.build_cache = build_cache
        self.env = env
        self._lock = threading.Lock()
        self._worker: WorkerProcess | None = None
        self._next: WorkerProcess | None = None
        self.restarts = 0
        self._closed = False

    def _spawn(self) -> WorkerProcess:
        """Start a new worker process."""
        return WorkerProcess(self.compile_only, self.build_cache, self.env)

    def worker(self) -> WorkerProcess:
        """Return a live, ready worker (starting one if needed)."""
        with self._lock:
            if self._worker is not None and self._worker.alive():
                return self._worker
            if self._worker is not None:
                self.restarts += 1
            w = self._next if self._next is not None else self._spawn()
            self._next = None
            w.wait_ready()
            self._worker = w
            return w

    @property
    def current_pid(self) -> int | None:
        """Return the pid of the current worker, if any."""
        return self._worker.pid if self._worker is not None else None

    def identity(self) -> DeviceIdentity:
        """Return the identity of this slot's device."""
        w = self.worker()
        assert w.identity is not None
        return w.identity

    def run(self, job: WorkerJob, progress: Progress | None = None) -> VerificationResult:
        """Run one job on the current worker; replace the worker if it did not survive."""
        try:
            w = self.worker()
        except WorkerStartError as exc:
            return VerificationResult(
                status=Status.CRASHED, message=f"no worker: {exc}", key=job.key, created=time.time()
            )
        result = w.run(job, progress)
        if result.status in (Status.TIMED_OUT, Status.CRASHED):
            w.kill()
        if result.status in (Status.LAUNCH_FAILED, Status.CRASHED, Status.TIMED_OUT):
            # A sticky fault makes the worker exit after its result; give it a moment, then start a replacement.
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.proc.wait(timeout=2)
        if not w.alive():
            self._prestart()
        return result

    def _prestart(self) -> None:
        """Start the replacement worker now so that the next job finds it warm."""
        with self._lock:
            if self._closed or self._next is not None:
                return
            self._next = self._spawn()

    def close(self) -> None:
        """Stop the worker and any replacement being started."""
        with self._lock:
            self._closed = True
            for w in (self._worker, self._next):
                if w is not None:
                    w.close()
            self._worker = self._next = None
