"""The gate adapter: the server's jobs over the verification gate's queue (`warpwise.verify`).

Every gate job is wrapped in a server `Job` so it shares the server's queue, progress and cancellation; the gate's
events come back from its threads to the event loop. The backend the settings choose (`local`, `cluster`) gets
one `VerificationQueue` (priorities, de-duplication, generations, GPU-time budget, result cache), opened on first
use and closed when the backend changes. Results become `CandidateState`s per (document, content hash, card,
span): nothing is labelled verified unless a `VerificationResult` with status `verified` for the same content
came back from the gate. Also here: the gate's options under the editor's settings, a file's build flags, and
the problem-spec annotation the "insert problem-spec annotation" action offers (`warpwise.verify.infer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warpwise.analyzers.model import FileModel
from warpwise.server.documents import Snapshot
from warpwise.server.jobs import Job, Priority
from warpwise.server.settings import Settings

if TYPE_CHECKING:
    from warpwise.server.verification import VerificationService


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


def verdict_state(result: Any) -> CandidateState:
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


class GateAdapter:
    """The gate's queue for the current backend, and the server jobs that submit to it."""

    def __init__(self, owner: VerificationService) -> None:
        self.owner = owner
        self.candidates: dict[tuple[str, str, str, tuple[int, int]], CandidateState] = {}
        self.gpu_profiles: dict[str, tuple[str, dict[str, KernelProfile]]] = {}
        self.error = ""
        self._queue: Any = None
        self._config: tuple | None = None

    def backend_config(self) -> tuple:
        """Return what the gate's queue depends on (a change closes it)."""
        s = self.owner.settings
        return (self.owner.backend(), s.gpu_cluster_address, s.verification_gpu_time_budget_seconds)

    def stale(self) -> bool:
        """Return whether an open gate queue was made for other settings."""
        return self._config is not None and self._config != self.backend_config()

    def close(self) -> None:
        """Close the gate's queue and its backend."""
        q, self._queue, self._config = self._queue, None, None
        if q is not None:
            with contextlib.suppress(Exception):
                q.close()
            with contextlib.suppress(Exception):
                q.gate.backend.close()

    def queue(self) -> Any:
        """Return the gate's queue for the current backend, creating it (blocking: call from a thread)."""
        self.owner.require_trust("verification")
        config = self.backend_config()
        if self._queue is not None and self._config == config:
            return self._queue
        self.close()
        from warpwise.verify.backends import make_backend
        from warpwise.verify.cache import ResultCache
        from warpwise.verify.gate import Gate
        from warpwise.verify.jobqueue import VerificationQueue

        cache = ResultCache()
        name = config[0]
        try:
            backend = make_backend(name, scheduler=self.owner.settings.gpu_cluster_address or None, cache=cache)
        except Exception as exc:  # A cluster that cannot be reached is reported, not raised.
            self.error = f"the {name} verification backend did not start: {exc}"
            raise
        self.error = ""
        # Negative priorities are the learned ranking's predicted losers: skipped once the budget is short.
        self._queue = VerificationQueue(
            Gate(backend, cache), budget_s=self.owner.settings.verification_gpu_time_budget_seconds, skip_below=0
        )
        self._config = config
        return self._queue

    async def run(self, job: Job, candidate: Any, options: Any, priority: int, group: str, generation: int) -> Any:
        """Submit one candidate to the gate and wait for its result (None when cancelled or refused)."""
        loop = asyncio.get_running_loop()
        finished: asyncio.Future = loop.create_future()

        def on_event(event: Any) -> None:  # Called on the gate's threads.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_gate_event, job, event, finished)

        job.report("preparing (spec, builds)")
        queue = await asyncio.to_thread(self.queue)
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
        s = self.owner.settings
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
            self.candidates[key] = CandidateState("queued", detail="waiting for the GPU")  # type: ignore[index]
            try:
                gp = priority if gate_priority is None else gate_priority
                result = await self.run(job, candidate, tolerances, gp, group, snap.version)
            except BaseException:
                self.candidates.pop(key, None)  # type: ignore[arg-type]
                raise
            if result is None:
                self.candidates.pop(key, None)  # type: ignore[arg-type]
                return None
            state = verdict_state(result)
            self.candidates[key] = state  # type: ignore[index]
            return state

        return self.owner.queue.submit(
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
                flags = build_flags(snap.path, self.owner.settings)
                candidate = Candidate(snap.path, text, kernel, text, snap.path, original_model=model, flags=flags)
                options = Options(profile=True, time_limit_s=self.owner.settings.compiler_timeout_seconds)
                result = await self.run(
                    job, candidate, options, Priority.BACKGROUND, f"profile:{snap.uri}#{kernel}", snap.version
                )
                if result is not None:
                    out[kernel] = _kernel_profile(kernel, result)
            self.gpu_profiles[snap.uri] = (snap.content_hash, out)
            return out

        return self.owner.queue.submit(
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
        mode = "compile-only" if self.owner.backend() == "compile-only" else "gpu"
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
            queue = await asyncio.to_thread(self.queue)
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

        return self.owner.queue.submit(
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
        compile_only = self.owner.backend() == "compile-only"

        async def run(job: Job) -> Any:
            job.report("asking the LLM for a problem file and a kernel")
            queue = await asyncio.to_thread(self.queue)
            verifier = QueueVerifier(queue, priority=priority, group=f"generate:{folder}/{name}")
            client = LLMClient(llm)
            options = Options(compile_only=compile_only, time_limit_s=settings.compiler_timeout_seconds)
            try:
                return await asyncio.to_thread(
                    generate, description, name, folder, client, verifier, compile_only=compile_only, options=options
                )
            finally:
                client.close()

        return self.owner.queue.submit(
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


def verify_options(settings: Settings) -> Any:
    """Return the gate's options for a candidate's verification under the editor's settings."""
    from warpwise.verify.types import Options

    return Options(
        time_limit_s=settings.compiler_timeout_seconds,
        tolerance=(settings.verification_rtol, settings.verification_atol),
    )


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
