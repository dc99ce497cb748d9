"""Everything the server needs from verification and profiling, behind one service (`VerificationService`).

The server touches `warpwise.verify` nowhere but here and in the three modules this one puts together and
re-exports: `gate_adapter.py` (the gate's queue and the jobs that use it), `compile_only.py`
(the per-save nvcc report) and `gpu_detection.py`; `trust.py` says what an untrusted workspace may not do. What
the server uses:

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

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warpwise.analyzers.model import FileModel
from warpwise.server import gpu_detection
from warpwise.server.compile_only import (
    CompileOnlyBuilds,
    LaunchShape,
    ProfileReport,
    compile_key,
    launch_shapes,
)
from warpwise.server.documents import Snapshot
from warpwise.server.gate_adapter import (
    CandidateState,
    GateAdapter,
    KernelProfile,
    OptimizeOutcome,
    SpecAnnotation,
    build_flags,
    has_spec_annotation,
    spec_annotation,
    verdict_state,
    verify_options,
)
from warpwise.server.gpu_detection import GpuInfo
from warpwise.server.jobs import Job, JobQueue, Priority
from warpwise.server.settings import Settings
from warpwise.server.trust import UNTRUSTED, UntrustedWorkspace

__all__ = [
    "UNTRUSTED",
    "CandidateState",
    "GpuInfo",
    "KernelProfile",
    "LaunchShape",
    "OptimizeOutcome",
    "ProfileReport",
    "SpecAnnotation",
    "UntrustedWorkspace",
    "VerificationService",
    "build_flags",
    "has_spec_annotation",
    "launch_shapes",
    "spec_annotation",
    "verify_options",
]

log = logging.getLogger(__name__)

_verdict_state = verdict_state  # The name the security tests read the conversion by.

VERIFY_UNAVAILABLE = (
    "verification is not available: the verification gate (warpwise.verify) does not provide a verification "
    "queue in this installation yet"
)
SEARCH_UNAVAILABLE = "optimization search is not available: warpwise.search cannot be imported"


class VerificationService:
    """The server's view of verification, profiling and the job queue."""

    def __init__(self, listener: Callable[[Job, str], None]) -> None:
        self.queue = JobQueue(listener)
        self.reports: dict[str, ProfileReport] = {}
        self.gpu: GpuInfo | None = None
        self.settings = Settings()
        self.builds = CompileOnlyBuilds(self.trusted)
        self.gate = GateAdapter(self)

    @property
    def gpu_profiles(self) -> dict[str, tuple[str, dict[str, KernelProfile]]]:
        """Return the GPU profile of each document's last profiled text (content hash, profile per kernel)."""
        return self.gate.gpu_profiles

    def configure(self, settings: Settings) -> None:
        """Take new settings; a different backend closes the old gate queue (a new one starts on first use)."""
        self.settings = settings
        if not settings.verification_trusted_workspace:
            # Losing trust stops what runs: queued and running jobs are cancelled, the workers closed.
            self.queue.cancel_all("the workspace is no longer trusted")
            self.builds.kill_all()
            self.gate.close()
        elif self.gate.stale():
            self.gate.close()

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
        self.builds.kill_all()
        self.gate.close()

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
        if self.gate.error:
            return False, self.gate.error
        return True, ""

    def candidate_state(self, uri: str, content_hash: str, card_id: str, span: tuple[int, int]) -> CandidateState:
        """Return what verification knows about one candidate of this exact text."""
        state = self.gate.candidates.get((uri, content_hash, card_id, tuple(span)))
        if state is not None:
            return state
        available, reason = self.verification_available()
        return CandidateState("unverified", detail="" if available else reason)

    def verified(self, uri: str, content_hash: str, card_id: str, span: tuple[int, int]) -> bool:
        """Return whether the gate verified one candidate of this exact text (what `candidate_state` says, cheaply:
        the quiet default asks for every finding on each keystroke)."""
        state = self.gate.candidates.get((uri, content_hash, card_id, tuple(span)))
        return state is not None and state.state == "verified"

    def candidates_for(self, uri: str, content_hash: str) -> list[tuple[str, tuple[int, int], CandidateState]]:
        """Return the verification states known for candidates of this exact text."""
        return [(k[2], k[3], v) for k, v in self.gate.candidates.items() if k[0] == uri and k[1] == content_hash]

    def forget(self, uri: str) -> None:
        """Drop what is kept about a closed document."""
        self.reports.pop(uri, None)
        self.gate.gpu_profiles.pop(uri, None)
        for key in [k for k in self.gate.candidates if k[0] == uri]:
            del self.gate.candidates[key]

    async def detect_gpu(self) -> GpuInfo:
        """Look for an NVIDIA GPU (with `nvidia-smi`, else the CUDA driver), once; the result is kept."""
        if self.gpu is None:
            self.gpu = await gpu_detection.detect_gpu()
        return self.gpu

    # -- the gate (gate_adapter.py) ----------------------------------------------------------------------------

    def _gate(self) -> Any:
        """Return the gate's queue for the current backend, creating it (blocking: call from a thread)."""
        return self.gate.queue()

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
        """Queue the verification of one candidate rewrite of a kernel (`GateAdapter.submit_verify`)."""
        return self.gate.submit_verify(
            snap, card_id, span, kernel, candidate_text, title, priority, gate_priority=gate_priority, model=model
        )

    def submit_gpu_profile(
        self, snap: Snapshot, kernels: list[str], priority: int = Priority.BACKGROUND, model: FileModel | None = None
    ) -> Job:
        """Queue GPU profiles of kernels (`GateAdapter.submit_gpu_profile`)."""
        return self.gate.submit_gpu_profile(snap, kernels, priority, model=model)

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
        """Queue a search for a faster version of one kernel (`GateAdapter.submit_optimize`)."""
        return self.gate.submit_optimize(
            snap, kernel, strategy=strategy, budget_s=budget_s, candidates=candidates, priority=priority
        )

    def submit_generate(
        self, settings: Settings, description: str, name: str, folder: str, *, priority: int = Priority.INTERACTIVE
    ) -> Job:
        """Queue the generation of a problem file and a first kernel (`GateAdapter.submit_generate`)."""
        return self.gate.submit_generate(settings, description, name, folder, priority=priority)

    # -- compile-only reports (compile_only.py) ----------------------------------------------------------------

    async def toolkit(self, nvcc: str) -> str | None:
        """Return the CUDA toolkit version `nvcc` reports (cached per executable)."""
        return await self.builds.toolkit(nvcc)

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
                key=("profile", snap.uri, snap.content_hash, compile_key(settings)),
                supersede=("profile", snap.uri),
                run=run,
                priority=priority,
                uri=snap.uri,
                version=snap.version,
            )
        )

    async def _compile_only(
        self, job: Job, snap: Snapshot, settings: Settings, shapes: dict[str, LaunchShape]
    ) -> ProfileReport:
        """Build the saved text with `nvcc -cubin -Xptxas -v` and parse what the compiler reports."""
        return await self.builds.build(job, snap, settings, shapes)

    def clear_cache(self) -> str:
        """Forget cached reports and results; return what was cleared."""
        n = self.builds.clear()
        self.gate.candidates.clear()
        parts = [f"{n} cached resource report{'s' if n != 1 else ''}"]
        from warpwise.verify.cache import ResultCache

        removed = ResultCache().clear()
        parts.append(f"{removed} verification result{'s' if removed != 1 else ''}")
        return "cleared " + " and ".join(parts)

    async def restart(self) -> str:
        """Cancel every job, kill build processes and restart the verification workers."""
        n = self.queue.cancel_all("the worker was restarted")
        self.builds.kill_all()
        self.gate.close()
        self.gpu = None
        await self.detect_gpu()
        return f"cancelled {n} job{'s' if n != 1 else ''}; build processes and verification workers stopped"
