"""Everything the server needs from verification and profiling, behind one module.

The server never touches `warpwise.verify` anywhere else. What it uses:

* **Verification of candidate rewrites** through the gate's `VerificationQueue` (priorities, de-duplication,
  generations, GPU-time budget, result cache) on the backend the settings choose: `local` (this machine's GPU),
  `cluster` (Dask) or none. Every gate job is wrapped in a server `Job` so it shares the server's queue, progress
  and cancellation; the gate's events come back from its threads to the event loop.
* **Compile-only resource reports** on save: one `nvcc -cubin -Xptxas -v` over the saved text gives registers,
  spills, shared memory and theoretical occupancy for every kernel of the file at once
  (`warpwise.server.resources`). The gate's compile-only backend builds one kernel per job (NVRTC, in a worker
  process); for the per-save report of a whole file one nvcc process is the cheaper build.
* **Trust.** In an untrusted workspace (`verification.trustedWorkspace` false) nothing compiles or runs here,
  whatever the command or trigger: the gate's queue (NVRTC, nvcc, the GPU, ncu, compute-sanitizer, problem
  files), the per-save nvcc report, `nvcc --version` and the LLM are all behind `require_trust`, which the lowest
  layer of each path calls at run time (trust may drop while a job waits).
* **Problem-spec inference** (`warpwise.verify.infer`) for the "insert problem-spec annotation" action.
* **GPU detection** for the status item (`nvidia-smi`, else the CUDA driver).

Nothing is labelled verified unless a `VerificationResult` with status `verified` for the same file content came
back from the gate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warpwise.analyzers.model import FileModel
from warpwise.server.documents import Snapshot
from warpwise.server.jobs import Job, JobQueue, Priority
from warpwise.server.resources import (
    CompilerMessage,
    KernelResources,
    Occupancy,
    occupancy,
    parse_nvcc_messages,
    parse_ptxas,
)
from warpwise.server.settings import Settings

log = logging.getLogger(__name__)

VERIFY_UNAVAILABLE = (
    "verification is not available: the verification gate (warpwise.verify) does not provide a verification "
    "queue in this installation yet"
)
SEARCH_UNAVAILABLE = "optimization search is not available: warpwise.search cannot be imported"
UNTRUSTED = (
    "this workspace is not trusted to run code (`warpwise.verification.trustedWorkspace` is false): nothing is "
    "compiled or run"
)


class UntrustedWorkspace(RuntimeError):
    """Raised where code would be compiled or run in an untrusted workspace."""


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """What the server knows about the GPU of this machine."""

    found: bool
    name: str | None
    detail: str


@dataclass(frozen=True, slots=True)
class LaunchShape:
    """The block size and dynamic shared memory a kernel is launched with in this file."""

    block_size: int
    dynamic_smem: int
    line: int  # zero-based line of the launch


@dataclass(frozen=True, slots=True)
class ProfileReport:
    """The profile of one saved version of a file."""

    uri: str
    version: int
    content_hash: str
    mode: str  # "compile-only" (GPU timing arrives with warpwise.verify)
    status: str  # ok / compile_failed / timed_out / no_compiler / crashed
    detail: str
    arch: str
    toolkit: str | None
    kernels: tuple[KernelResources, ...] = ()
    messages: tuple[CompilerMessage, ...] = ()
    launches: dict[str, LaunchShape] = field(default_factory=dict)
    elapsed_s: float = 0.0
    finished_at: float = field(default_factory=time.time)

    def resources(self, kernel: str) -> list[KernelResources]:
        """Return the compiler's records of one kernel (several for a template kernel)."""
        return [k for k in self.kernels if k.kernel == kernel]

    def occupancy(self, res: KernelResources) -> Occupancy | None:
        """Return the theoretical occupancy of one record at the block size of its launch in this file."""
        shape = self.launches.get(res.kernel)
        if shape is None:
            return None
        return occupancy(res, shape.block_size, shape.dynamic_smem)


@dataclass(frozen=True, slots=True)
class CandidateState:
    """What verification says about one candidate rewrite (for code-action titles and hovers)."""

    state: str  # unverified / queued / running / verified / not_faster / incorrect / ... (VerificationResult)
    speedup: float | None = None
    spread: float | None = None
    gpu: str | None = None
    detail: str = ""
    reported_by: str = ""  # the host of a result reported by another machine and not verified here


@dataclass(frozen=True, slots=True)
class OptimizeOutcome:
    """The search's report for one kernel of one document version (`report` is a `SearchReport`)."""

    uri: str
    version: int
    kernel: str
    mode: str
    report: Any
    detail: str
    text: bytes = b""


def launch_shapes(model: FileModel) -> dict[str, LaunchShape]:
    """Return, per kernel, the first launch in the file whose block size is a known number."""
    shapes: dict[str, LaunchShape] = {}
    for host, launch in model.launches:
        if launch.kernel in shapes or not launch.block_value:
            continue
        threads = 1
        for d in launch.block_value:
            threads *= d
        line = model.lines.position(host.span(launch.span)[0]).line
        shapes[launch.kernel] = LaunchShape(threads, launch.smem_value or 0, line)
    return shapes


def _verdict_state(result: Any) -> CandidateState:
    """Return a candidate's state from a `VerificationResult`."""
    status = str(getattr(result.status, "value", result.status))
    if status == "reported":
        # Another machine's claim: no speedup or GPU is shown as if it were measured here.
        return CandidateState(
            "reported", detail=str(result.message), reported_by=result.reported_by or "another machine"
        )
    speedup = spread = None
    if result.speedup is not None:
        speedup = float(result.speedup.median)
        spread = (float(result.speedup.high) - float(result.speedup.low)) / 2 / speedup if speedup else None
    gpu = result.device.gpu if result.device is not None and not result.device.compile_only else None
    return CandidateState(status, speedup, spread, gpu, str(result.message))


@dataclass(frozen=True, slots=True)
class KernelProfile:
    """A GPU profile of one kernel (original against itself through the gate, with the profiler pass)."""

    kernel: str
    status: str
    message: str
    median_ms: float | None = None
    iqr_ms: float | None = None
    gpu: str | None = None
    dram_gbps: float | None = None
    dram_pct: float | None = None
    gflops: float | None = None
    sm_pct: float | None = None
    occupancy_pct: float | None = None
    registers: int | None = None
    spills: int | None = None
    bottleneck: str | None = None
    finished_at: float = field(default_factory=time.time)


class VerificationService:
    """The server's view of verification, profiling and the job queue."""

    def __init__(self, listener: Callable[[Job, str], None]) -> None:
        self.queue = JobQueue(listener)
        self.reports: dict[str, ProfileReport] = {}
        self.gpu_profiles: dict[str, tuple[str, dict[str, KernelProfile]]] = {}
        self.gpu: GpuInfo | None = None
        self.settings = Settings()
        self._toolkit: dict[str, str | None] = {}
        self._cache: dict[tuple, ProfileReport] = {}
        self._procs: set[asyncio.subprocess.Process] = set()
        self._candidates: dict[tuple[str, str, str, tuple[int, int]], CandidateState] = {}
        self._gate_queue: Any = None
        self._gate_config: tuple | None = None
        self._gate_error = ""

    def configure(self, settings: Settings) -> None:
        """Take new settings; a different backend closes the old gate queue (a new one starts on first use)."""
        self.settings = settings
        if not settings.verification_trusted_workspace:
            # Losing trust stops what runs: queued and running jobs are cancelled, the workers closed.
            self.queue.cancel_all("the workspace is no longer trusted")
            self._kill_all()
            self._close_gate()
        elif self._gate_config is not None and self._gate_config != self._backend_config():
            self._close_gate()

    def trusted(self) -> bool:
        """Return whether code of this workspace may be compiled or run."""
        return bool(self.settings.verification_trusted_workspace)

    def require_trust(self, what: str) -> None:
        """Raise `UntrustedWorkspace` when the workspace is not trusted (call where code is compiled or run)."""
        if not self.trusted():
            raise UntrustedWorkspace(f"{what}: {UNTRUSTED}")

    def start(self) -> None:
        """Start the queue actor."""
        self.queue.start()

    async def stop(self) -> None:
        """Cancel every job, stop the queue and close the gate."""
        await self.queue.stop()
        self._kill_all()
        self._close_gate()

    # -- availability ------------------------------------------------------------------------------------------

    def backend(self) -> str:
        """Return the backend verification uses now: `local`, `cluster`, `compile-only` or `off`."""
        s = self.settings
        if s.gpu_backend == "off" or not s.verification_trusted_workspace:
            return "off"
        if s.gpu_backend == "cluster":
            return "cluster"
        if s.gpu_backend == "local" or (self.gpu is not None and self.gpu.found):
            return "local"
        return "compile-only"

    def verification_available(self) -> tuple[bool, str]:
        """Return whether candidate rewrites can be verified now, and why not."""
        backend = self.backend()
        if not self.settings.verification_trusted_workspace:
            return (
                False,
                "this workspace is not trusted to run code on a GPU (`warpwise.verification.trustedWorkspace`)",
            )
        if backend == "off":
            return False, "GPU verification is off (`warpwise.gpu.backend` is `off`)"
        if backend == "compile-only":
            detail = self.gpu.detail if self.gpu is not None else "no GPU found"
            return False, f"{detail}; candidates cannot be timed here (set `warpwise.gpu.backend` to `cluster`)"
        if self._gate_error:
            return False, self._gate_error
        return True, ""

    def candidate_state(self, uri: str, content_hash: str, card_id: str, span: tuple[int, int]) -> CandidateState:
        """Return what verification knows about one candidate of this exact text."""
        state = self._candidates.get((uri, content_hash, card_id, tuple(span)))  # type: ignore[arg-type]
        if state is not None:
            return state
        available, reason = self.verification_available()
        return CandidateState("unverified", detail="" if available else reason)

    def candidates_for(self, uri: str, content_hash: str) -> list[tuple[str, tuple[int, int], CandidateState]]:
        """Return the verification states known for candidates of this exact text."""
        return [(k[2], k[3], v) for k, v in self._candidates.items() if k[0] == uri and k[1] == content_hash]

    def forget(self, uri: str) -> None:
        """Drop what is kept about a closed document."""
        self.reports.pop(uri, None)
        self.gpu_profiles.pop(uri, None)
        for key in [k for k in self._candidates if k[0] == uri]:
            del self._candidates[key]

    async def detect_gpu(self) -> GpuInfo:
        """Look for an NVIDIA GPU (with `nvidia-smi`, else the CUDA driver), once; the result is kept."""
        if self.gpu is not None:
            return self.gpu
        exe = shutil.which("nvidia-smi")
        if exe is not None:
            try:
                proc = await asyncio.create_subprocess_exec(
                    exe,
                    "--query-gpu=name,memory.total,driver_version",
                    "--format=csv,noheader",
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                out, _ = await asyncio.wait_for(proc.communicate(), 20)
                lines = [ln.strip() for ln in out.decode(errors="replace").splitlines() if ln.strip()]
                if proc.returncode == 0 and lines:
                    name = lines[0].split(",")[0].strip()
                    more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
                    self.gpu = GpuInfo(True, name, f"{name}{more}, driver {lines[0].split(',')[-1].strip()}")
                    return self.gpu
            except (OSError, TimeoutError) as exc:
                log.info("nvidia-smi did not answer: %s", exc)
        count = await asyncio.to_thread(_driver_gpu_count)
        if count > 0:
            self.gpu = GpuInfo(True, "NVIDIA GPU", f"{count} CUDA device{'s' if count > 1 else ''} (no nvidia-smi)")
        else:
            self.gpu = GpuInfo(False, None, "no NVIDIA GPU found")
        return self.gpu

    # -- the gate ----------------------------------------------------------------------------------------------

    def _backend_config(self) -> tuple:
        s = self.settings
        return (self.backend(), s.gpu_cluster_address, s.verification_gpu_time_budget_seconds)

    def _close_gate(self) -> None:
        q, self._gate_queue, self._gate_config = self._gate_queue, None, None
        if q is not None:
            with contextlib.suppress(Exception):
                q.close()
            with contextlib.suppress(Exception):
                q.gate.backend.close()

    def _gate(self) -> Any:
        """Return the gate's queue for the current backend, creating it (blocking: call from a thread)."""
        self.require_trust("verification")
        config = self._backend_config()
        if self._gate_queue is not None and self._gate_config == config:
            return self._gate_queue
        self._close_gate()
        from warpwise.verify.backends import make_backend
        from warpwise.verify.cache import ResultCache
        from warpwise.verify.gate import Gate
        from warpwise.verify.jobqueue import VerificationQueue

        cache = ResultCache()
        name = config[0]
        try:
            backend = make_backend(name, scheduler=self.settings.gpu_cluster_address or None, cache=cache)
        except Exception as exc:  # A cluster that cannot be reached is reported, not raised.
            self._gate_error = f"the {name} verification backend did not start: {exc}"
            raise
        self._gate_error = ""
        # Negative priorities are the learned ranking's predicted losers: skipped once the budget is short.
        self._gate_queue = VerificationQueue(
            Gate(backend, cache), budget_s=self.settings.verification_gpu_time_budget_seconds, skip_below=0
        )
        self._gate_config = config
        return self._gate_queue

    async def _run_gate(
        self, job: Job, candidate: Any, options: Any, priority: int, group: str, generation: int
    ) -> Any:
        """Submit one candidate to the gate and wait for its result (None when cancelled or refused)."""
        loop = asyncio.get_running_loop()
        finished: asyncio.Future = loop.create_future()

        def on_event(event: Any) -> None:  # Called on the gate's threads.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_gate_event, job, event, finished)

        job.report("preparing (spec, builds)")
        queue = await asyncio.to_thread(self._gate)
        handle = await asyncio.to_thread(
            queue.submit, candidate, options, priority=priority, group=group, generation=generation, on_event=on_event
        )
        if handle.finished and not finished.done():
            finished.set_result(handle.result)
        try:
            result = await finished
        except asyncio.CancelledError:
            queue.cancel(group, generation + 1)
            raise
        if handle.superseded:
            return None
        return result

    def submit_verify(
        self,
        snap: Snapshot,
        card_id: str,
        span: tuple[int, int],
        kernel: str,
        candidate_text: bytes,
        title: str,
        priority: int = Priority.INTERACTIVE,
        gate_priority: int | None = None,
        model: FileModel | None = None,
    ) -> Job:
        """Queue the verification of one candidate rewrite of a kernel.

        `gate_priority` is its priority in the gate's queue (higher first; the learned ranking's), when it differs
        from the server job's `priority`. `model` is the analysis of the snapshot's text, which the gate then
        reads instead of parsing the original again.
        """
        from warpwise.verify.gate import Candidate

        key = (snap.uri, snap.content_hash, card_id, tuple(span))
        s = self.settings
        candidate = Candidate(
            original_path=snap.path,
            original_text=snap.text.decode("utf-8", "replace"),
            kernel=kernel,
            candidate_text=candidate_text.decode("utf-8", "replace"),
            candidate_path=snap.path,
            original_model=model,
            flags=build_flags(snap.path, s),
        )
        tolerances = verify_options(s)
        group = f"{snap.uri}#{kernel}#{card_id}"

        async def run(job: Job) -> CandidateState | None:
            self._candidates[key] = CandidateState("queued", detail="waiting for the GPU")  # type: ignore[index]
            try:
                gp = priority if gate_priority is None else gate_priority
                result = await self._run_gate(job, candidate, tolerances, gp, group, snap.version)
            except BaseException:
                self._candidates.pop(key, None)  # type: ignore[arg-type]
                raise
            if result is None:
                self._candidates.pop(key, None)  # type: ignore[arg-type]
                return None
            state = _verdict_state(result)
            self._candidates[key] = state  # type: ignore[index]
            return state

        return self.queue.submit(
            Job(
                kind="verify",
                title=f"Verify {title} in `{kernel}`",
                key=("verify", *key),
                supersede=("verify", snap.uri, kernel, card_id),
                run=run,
                priority=priority,
                uri=snap.uri,
                kernel=kernel,
                version=snap.version,
            )
        )

    def submit_gpu_profile(
        self, snap: Snapshot, kernels: list[str], priority: int = Priority.BACKGROUND, model: FileModel | None = None
    ) -> Job:
        """Queue GPU profiles of kernels (each run against itself through the gate, with the profiler pass)."""
        from warpwise.verify.gate import Candidate
        from warpwise.verify.types import Options

        text = snap.text.decode("utf-8", "replace")
        name = Path(snap.path).name or "document.cu"

        async def run(job: Job) -> dict[str, KernelProfile]:
            out: dict[str, KernelProfile] = {}
            for i, kernel in enumerate(kernels):
                job.report(f"{kernel} ({i + 1} of {len(kernels)})", int(100 * i / max(len(kernels), 1)))
                flags = build_flags(snap.path, self.settings)
                candidate = Candidate(snap.path, text, kernel, text, snap.path, original_model=model, flags=flags)
                options = Options(profile=True, time_limit_s=self.settings.compiler_timeout_seconds)
                result = await self._run_gate(
                    job, candidate, options, Priority.BACKGROUND, f"profile:{snap.uri}#{kernel}", snap.version
                )
                if result is not None:
                    out[kernel] = _kernel_profile(kernel, result)
            self.gpu_profiles[snap.uri] = (snap.content_hash, out)
            return out

        return self.queue.submit(
            Job(
                kind="gpu-profile",
                title=f"GPU profile of {name}",
                key=("gpu-profile", snap.uri, snap.content_hash, tuple(kernels)),
                supersede=("gpu-profile", snap.uri),
                run=run,
                priority=priority,
                uri=snap.uri,
                version=snap.version,
            )
        )

    def submit_optimize(
        self,
        snap: Snapshot,
        kernel: str,
        *,
        strategy: str = "mcts",
        budget_s: float = 120.0,
        candidates: int = 30,
        priority: int = Priority.INTERACTIVE,
    ) -> Job:
        """Queue a search for a faster version of one kernel (`warpwise.search`), its jobs through the gate's queue.

        Without a GPU the search is a compile-only dry run. The LLM takes part only when `llm.endpoint` is set.
        Progress reports versions evaluated, the best verified speedup and GPU-seconds; cancelling the job stops
        the search before its next candidate.
        """
        from warpwise.search.evaluate import QueueVerifier
        from warpwise.search.llm import LLMConfig
        from warpwise.search.optimize import OptimizeOptions, optimize
        from warpwise.skills.library import builtin_library

        s = snap.settings
        text = snap.text.decode("utf-8", "replace")
        mode = "compile-only" if self.backend() == "compile-only" else "gpu"
        llm = LLMConfig.resolve(s.llm_endpoint, s.llm_model) if s.llm_endpoint else None
        enabled = {c.skill_id for c in builtin_library() if s.rule_enabled(c.skill_id)}

        async def run(job: Job) -> OptimizeOutcome:
            loop = asyncio.get_running_loop()
            cancel = threading.Event()

            def progress(p: Any) -> None:  # Called on the search's thread.
                best = f"{p.best_speedup:.2f}x" if p.best_speedup is not None else "none yet"
                unit = "build-s" if mode == "compile-only" else "GPU-s"
                message = f"{p.nodes} versions · best {best} · {p.gpu_seconds:.1f} {unit}"
                percentage = min(99, int(100 * p.candidates / candidates)) if candidates else None
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(job.report, message, percentage)

            job.report("preparing the search")
            queue = await asyncio.to_thread(self._gate)
            verifier = QueueVerifier(queue, priority=priority, group=f"optimize:{snap.uri}#{kernel}", cancel=cancel)
            opts = OptimizeOptions(
                strategy=strategy,
                budget_s=budget_s,
                candidates=candidates,
                compile_only=mode == "compile-only",
                llm=llm,
                time_limit_s=s.compiler_timeout_seconds,
                enabled_cards=enabled,
            )
            try:
                report = await asyncio.to_thread(
                    optimize, snap.path, kernel, opts, text=text, verifier=verifier, progress=progress, cancel=cancel
                )
            except asyncio.CancelledError:
                cancel.set()
                raise
            if report.speedup is not None:
                detail = f"`{kernel}`: verified {report.speedup:.2f}x in {report.budget.get('nodes', 0)} versions"
            elif mode == "compile-only":
                detail = f"`{kernel}`: built {report.budget.get('nodes', 0)} versions (compile-only, nothing timed)"
            else:
                detail = f"`{kernel}`: no version verified faster ({report.stop_reason})"
            return OptimizeOutcome(snap.uri, snap.version, kernel, mode, report, detail, snap.text)

        return self.queue.submit(
            Job(
                kind="optimize",
                title=f"Optimize `{kernel}`",
                key=("optimize", snap.uri, snap.content_hash, kernel, strategy, budget_s, candidates),
                supersede=("optimize", snap.uri, kernel),
                run=run,
                priority=priority,
                uri=snap.uri,
                kernel=kernel,
                version=snap.version,
            )
        )

    def submit_generate(
        self, settings: Settings, description: str, name: str, folder: str, *, priority: int = Priority.INTERACTIVE
    ) -> Job:
        """Queue the generation of a problem file and a first kernel from a description (`warpwise.search.generate`).

        The LLM writes `NAME.problem.py` and `NAME.cu` into `folder`; the gate checks the kernel against the
        problem's `reference()` (compile-only without a GPU), and a failing kernel goes back with the gate's message.
        The caller has checked that an LLM is configured. The result is the `GenerateReport`.
        """
        from warpwise.search.evaluate import QueueVerifier
        from warpwise.search.generate import generate
        from warpwise.search.llm import LLMClient, LLMConfig
        from warpwise.verify.types import Options

        llm = LLMConfig.resolve(settings.llm_endpoint, settings.llm_model)
        if llm is None:
            raise ValueError("no LLM is configured")
        compile_only = self.backend() == "compile-only"

        async def run(job: Job) -> Any:
            job.report("asking the LLM for a problem file and a kernel")
            queue = await asyncio.to_thread(self._gate)
            verifier = QueueVerifier(queue, priority=priority, group=f"generate:{folder}/{name}")
            client = LLMClient(llm)
            options = Options(compile_only=compile_only, time_limit_s=settings.compiler_timeout_seconds)
            try:
                return await asyncio.to_thread(
                    generate, description, name, folder, client, verifier, compile_only=compile_only, options=options
                )
            finally:
                client.close()

        return self.queue.submit(
            Job(
                kind="generate",
                title=f"Generate `{name}`",
                key=("generate", folder, name, description),
                supersede=("generate", folder, name),
                run=run,
                priority=priority,
                kernel=name,
            )
        )

    # -- compile-only reports ----------------------------------------------------------------------------------

    async def toolkit(self, nvcc: str) -> str | None:
        """Return the CUDA toolkit version `nvcc` reports (cached per executable)."""
        if not self.trusted():
            return None
        if nvcc in self._toolkit:
            return self._toolkit[nvcc]
        exe = shutil.which(nvcc)
        version = None
        if exe is not None:
            try:
                proc = await asyncio.create_subprocess_exec(
                    exe, "--version", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
                )
                out, _ = await asyncio.wait_for(proc.communicate(), 30)
                for line in out.decode(errors="replace").splitlines():
                    if "release" in line:
                        version = "CUDA " + line.split("release", 1)[1].split(",")[0].strip()
            except (OSError, TimeoutError):
                version = None
        self._toolkit[nvcc] = version
        return version

    def submit_profile(self, snap: Snapshot, model: FileModel, priority: int = Priority.ON_SAVE) -> Job:
        """Queue the compile-only resource report of a saved version."""
        settings = snap.settings
        shapes = launch_shapes(model)
        name = Path(snap.path).name or "document.cu"

        async def run(job: Job) -> ProfileReport:
            return await self._compile_only(job, snap, settings, shapes)

        return self.queue.submit(
            Job(
                kind="profile",
                title=f"Resource report for {name} (compile-only)",
                key=("profile", snap.uri, snap.content_hash, _compile_key(settings)),
                supersede=("profile", snap.uri),
                run=run,
                priority=priority,
                uri=snap.uri,
                version=snap.version,
            )
        )

    def clear_cache(self) -> str:
        """Forget cached reports and results; return what was cleared."""
        n = len(self._cache)
        self._cache.clear()
        self._toolkit.clear()
        self._candidates.clear()
        parts = [f"{n} cached resource report{'s' if n != 1 else ''}"]
        from warpwise.verify.cache import ResultCache

        removed = ResultCache().clear()
        parts.append(f"{removed} verification result{'s' if removed != 1 else ''}")
        return "cleared " + " and ".join(parts)

    async def restart(self) -> str:
        """Cancel every job, kill build processes and restart the verification workers."""
        n = self.queue.cancel_all("the worker was restarted")
        self._kill_all()
        self._close_gate()
        self.gpu = None
        await self.detect_gpu()
        return f"cancelled {n} job{'s' if n != 1 else ''}; build processes and verification workers stopped"

    def _kill_all(self) -> None:
        for proc in list(self._procs):
            _kill_group(proc)
        self._procs.clear()

    async def _compile_only(
        self, job: Job, snap: Snapshot, settings: Settings, shapes: dict[str, LaunchShape]
    ) -> ProfileReport:
        """Build the saved text with `nvcc -cubin -Xptxas -v` and parse what the compiler reports."""
        t0 = time.perf_counter()
        arch = settings.compiler_arch
        cache_key = (snap.content_hash, _compile_key(settings), snap.path)
        cached = self._cache.get(cache_key)

        def report(status: str, detail: str, **kw: Any) -> ProfileReport:
            return ProfileReport(
                uri=snap.uri,
                version=snap.version,
                content_hash=snap.content_hash,
                mode="compile-only",
                status=status,
                detail=detail,
                arch=arch,
                launches=shapes,
                elapsed_s=time.perf_counter() - t0,
                **kw,
            )

        if not self.trusted():
            return report("untrusted", f"no resource report: {UNTRUSTED}", toolkit=None)
        if cached is not None:
            job.report("cached")
            return report(
                cached.status,
                cached.detail,
                toolkit=cached.toolkit,
                kernels=cached.kernels,
                messages=cached.messages,
            )
        exe = shutil.which(settings.compiler_nvcc)
        if exe is None:
            return report(
                "no_compiler",
                f"`{settings.compiler_nvcc}` was not found; set `warpwise.compiler.nvcc` to the nvcc executable "
                "to get resource reports",
                toolkit=None,
            )
        job.report("checking the toolkit", 5)
        toolkit = await self.toolkit(settings.compiler_nvcc)
        name = Path(snap.path).name or "document.cu"
        src_dir = str(Path(snap.path).parent) if snap.path else ""
        with tempfile.TemporaryDirectory(prefix="warpwise-build-") as tmp:
            src = Path(tmp) / name
            src.write_bytes(snap.text)
            cmd = [
                exe,
                "-x",
                "cu",
                "-cubin",
                f"-arch={arch}",
                "-Xptxas",
                "-v",
                "-o",
                str(Path(tmp) / "out.cubin"),
            ]
            if src_dir and os.path.isdir(src_dir):
                cmd += ["-I", src_dir]
            cmd += [*settings.compiler_flags, str(src)]
            job.report(f"compiling for {arch}", 10)
            # Its own process group, so stopping the build also stops nvcc's children (cicc, ptxas).
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=tmp, start_new_session=True
            )
            self._procs.add(proc)
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), settings.compiler_timeout_seconds)
            except TimeoutError:
                _kill_group(proc)
                await proc.wait()
                return report(
                    "timed_out",
                    f"the compile-only build took longer than {settings.compiler_timeout_seconds:g} s "
                    "(`warpwise.compiler.timeoutSeconds`) and was stopped",
                    toolkit=toolkit,
                )
            except asyncio.CancelledError:
                _kill_group(proc)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(proc.wait()), 5)
                raise
            finally:
                self._procs.discard(proc)
        text = out.decode("utf-8", "replace")
        job.report("reading the resource report", 90)
        kernels = tuple(parse_ptxas(text))
        messages = tuple(parse_nvcc_messages(text, name))
        if proc.returncode != 0:
            errors = [m for m in messages if m.severity == "error"]
            detail = (
                f"nvcc failed: {errors[0].message} (line {errors[0].line + 1})"
                if errors
                else f"nvcc exited with status {proc.returncode}: {_last_line(text)}"
            )
            result = report("compile_failed", detail, toolkit=toolkit, kernels=kernels, messages=messages)
        else:
            result = report(
                "ok",
                f"{len(kernels)} kernel build{'s' if len(kernels) != 1 else ''} reported",
                toolkit=toolkit,
                kernels=kernels,
                messages=messages,
            )
        if len(self._cache) > 64:
            self._cache.pop(next(iter(self._cache)))
        self._cache[cache_key] = result
        return result


def _gate_event(job: Job, event: Any, finished: asyncio.Future) -> None:
    """Apply one gate event to its server job (event loop)."""
    if event.kind == "started":
        job.report("running")
    elif event.kind == "stage":
        job.report(str(event.stage))
    elif event.kind == "finished" and not finished.done():
        finished.set_result(event.result)
    elif event.kind in ("cancelled", "refused") and not finished.done():
        job.report(f"{event.kind}: {event.message}")
        finished.set_result(None)


def _kernel_profile(kernel: str, result: Any) -> KernelProfile:
    """Return a kernel's GPU profile from the gate's result of running it against itself."""
    status = str(getattr(result.status, "value", result.status))
    t = result.original_timing
    p = result.original_profile
    b = result.original_build
    spills = (b.spill_stores or 0) + (b.spill_loads or 0) if b is not None and b.spill_stores is not None else None
    return KernelProfile(
        kernel=kernel,
        status=status,
        message=str(result.message),
        median_ms=t.median_ms if t is not None else None,
        iqr_ms=t.iqr_ms if t is not None else None,
        gpu=result.device.gpu if result.device is not None else None,
        dram_gbps=p.dram_gbps if p is not None else None,
        dram_pct=p.dram_pct if p is not None else None,
        gflops=p.gflops if p is not None else None,
        sm_pct=p.sm_pct if p is not None else None,
        occupancy_pct=p.occupancy_pct if p is not None else None,
        registers=(p.registers if p is not None and p.registers is not None else (b.registers if b else None)),
        spills=spills,
        bottleneck=p.bottleneck if p is not None else None,
    )


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill a build and every process it started (it runs in its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def verify_options(settings: Settings) -> Any:
    """Return the gate's options for a candidate's verification under the editor's settings."""
    from warpwise.verify.types import Options

    return Options(
        time_limit_s=settings.compiler_timeout_seconds,
        tolerance=(settings.verification_rtol, settings.verification_atol),
    )


def _driver_gpu_count() -> int:
    from warpwise.verify.backends import gpu_count

    return gpu_count()


def _compile_key(settings: Settings) -> tuple:
    return (settings.compiler_nvcc, settings.compiler_arch, settings.compiler_flags)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


@dataclass(frozen=True, slots=True)
class SpecAnnotation:
    """A problem-spec annotation to insert above a kernel, and what inference could not fill in."""

    kernel: str
    text: str
    line: int  # zero-based line to insert before
    complete: bool
    note: str


def has_spec_annotation(model: FileModel, kernel: str) -> bool:
    """Return whether a kernel already has a `// warpwise:` annotation."""
    from warpwise.verify import annotation

    fn = next((f for f in model.kernels if f.name == kernel), None)
    return fn is not None and annotation.find(model, fn) is not None


def spec_annotation(model: FileModel, kernel: str) -> SpecAnnotation | str:
    """Infer a kernel's problem spec from the file and write it as an annotation; or say why it cannot."""
    from warpwise.verify import annotation, infer
    from warpwise.verify.spec import ProblemSpec, element_type

    fn = next((f for f in model.kernels if f.name == kernel), None)
    if fn is None:
        return f"`{kernel}` is not a kernel of this file"
    result = infer.infer(model, fn)
    if not isinstance(result, ProblemSpec):
        if not result.annotation:
            return result.message
        return SpecAnnotation(kernel, result.annotation, result.insert_line, False, result.message)
    run = result.run
    bindings = dict(zip([t.name for t in fn.template_params], result.template_args, strict=False))
    buffers = {b.name: b for b in run.buffers}
    scalars: dict[str, str] = {}
    offered: dict[str, tuple[str, str]] = {}
    for arg in run.args:
        if arg.buffer is None:
            scalars[arg.param] = repr(arg.value) if isinstance(arg.value, float) else str(arg.value)
            continue
        buf = buffers[arg.buffer]
        param = fn.param(arg.param)
        et = element_type(param.base_type, bindings) if param is not None else None
        lanes = et[1] if et is not None else 1
        offered[arg.param] = (buf.role.value, str(buf.count // lanes))
    geom = run.original_geometry
    line = annotation.kernel_line(model, fn)
    text_lines = model.text.decode("utf-8", "replace").split("\n")
    indent = (
        text_lines[line][: len(text_lines[line]) - len(text_lines[line].lstrip())] if line < len(text_lines) else ""
    )
    text = annotation.format_annotation(
        fn,
        {},
        scalars,
        offered,
        ",".join(str(v) for v in _trim(geom.grid)),
        ",".join(str(v) for v in _trim(geom.block)),
        str(geom.smem) if geom.smem else None,
        bindings,
        indent,
    )
    return SpecAnnotation(kernel, text, line, True, result.origin)


def _trim(d: tuple[int, ...]) -> tuple[int, ...]:
    out = list(d)
    while len(out) > 1 and out[-1] == 1:
        out.pop()
    return tuple(out)


def build_flags(path: str, settings: Settings) -> Any:
    """Return a file's build flags: the project's, with the editor's `warpwise.build.*` and
    `warpwise.compiler.flags` on top (the `build.*` keys map onto the same model as `[tool.warpwise]`)."""
    from dataclasses import replace as _replace

    from warpwise.verify import project

    folder = Path(path).resolve().parent
    keys = {
        "includeDirs": list(settings.build_include_dirs),
        "defines": list(settings.build_defines),
        "std": settings.build_std,
        "nvrtcFlags": list(settings.build_nvrtc_flags),
        "nvccFlags": list(settings.build_nvcc_flags),
        "arch": settings.build_arch,
    }
    editor = project.flags_from_mapping(
        {k: v for k, v in keys.items() if v}, "the editor settings `warpwise.build.*`", folder
    )
    flags = project.parse_command_line(list(settings.compiler_flags), folder)
    if flags.include_dirs or flags.defines:
        editor = editor.merged(_replace(flags, origins=("the editor setting `warpwise.compiler.flags`",)))
    return project.flags_for(path, editor=editor)
