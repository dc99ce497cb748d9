"""What the compiler says about a kernel's resources: registers, stack frame, spills, from a compile-only build.

Statements about local memory, spills, registers and occupancy come from the build, not from a guess (issue 18):
`kernel_resources` builds one kernel of a file model with NVRTC (device code only, as the gate extracts it; no GPU
needed, no code runs) and reads ptxas' report. Builds are cached on disk by content (the worker's `BuildCache`)
and in memory by (file text, kernel, arch), so the same text is compiled once; a build takes tens of milliseconds.
It runs in a long-lived child process: NVRTC crashes on some real sources, and a crash must not end the analysis.

When no compiler is available, or the kernel does not build on its own (missing headers, templates without known
arguments), the answer is a `Unconfirmed` value with the reason: callers then say that their claim is unconfirmed.
Only NVRTC is used here (nvcc would take seconds per file, too slow for matching as the user types).

NVRTC runs in a separate process (`warpwise.verify.resource_worker`, one per caller process, restarted when it dies;
the caller asks it for NVRTC's version rather than load the library itself): a source that crashes the compiler
costs that build an `Unconfirmed` answer, never the language server or `warpwise check`. The language server also
never waits for a build (`set_background(True)`): a build that is not memoised yet runs on a background thread, the
caller gets `Unconfirmed(PENDING)` at once (so NVRTC's first compilation in a process, seconds long, does not hold
up the first diagnostics of a file), and the listeners (`add_listener`) are called when the answer is in, to analyse
again and publish the confirmed claim. Matches computed with a pending answer are not cached as answered
(`pending_uses`); what a matcher was told can be recorded (`recording`) and asked again for the next version of the
file (`same_answers`), so that a function whose build is still pending is not matched again on every keystroke.
While the server holds the builds back (`hold`, from start until its first diagnostics are published), background
work is queued rather than started, so that neither the build process's start nor a build's device-source
extraction competes with the first analysis for the interpreter; `release` starts what was queued, in order.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warpwise.analyzers.model import FileModel

log = logging.getLogger(__name__)

DEFAULT_ARCH = "sm_90"
ENV_DISABLE = "WARPWISE_NO_RESOURCE_BUILDS"
"""Set to 1 to never build for resource claims (every claim is then unconfirmed)."""
_MEMO_SIZE = 256
ENV_WORKER = "WARPWISE_RESOURCE_WORKER_CMD"
"""A JSON list: the command of the build process (default: this Python running `warpwise.verify.resource_worker`)."""
BUILD_TIMEOUT_S = 120.0
"""How long one build (or the worker's start) may take before the worker is stopped and the claim unconfirmed."""
PENDING = "the compile-only build is running in the background; the claim is shown as soon as it is confirmed"


@dataclass(frozen=True, slots=True)
class KernelResources:
    """ptxas' report for one kernel built for one architecture."""

    kernel: str
    arch: str
    compiler: str
    registers: int | None
    stack_bytes: int
    spill_stores: int
    spill_loads: int
    code: str = ""
    """The SHA-256 of the built cubin: two builds with the same code compiled to the same machine code."""

    @property
    def uses_local_memory(self) -> bool:
        """Return whether the kernel has a stack frame or spills (its per-thread data lives in local memory)."""
        return self.stack_bytes > 0 or self.spill_stores > 0 or self.spill_loads > 0

    def describe(self) -> str:
        """Return ptxas' figures in one phrase."""
        regs = f"{self.registers} registers, " if self.registers is not None else ""
        return (
            f"{regs}{self.stack_bytes} bytes stack frame, {self.spill_stores} bytes spill stores, "
            f"{self.spill_loads} bytes spill loads ({self.compiler}, {self.arch})"
        )


@dataclass(frozen=True, slots=True)
class Unconfirmed:
    """Why no build could confirm a resource claim."""

    reason: str


@dataclass(frozen=True, slots=True)
class Lookup:
    """One answer `kernel_resources` gave: about which text (its SHA-256), kernel and architecture, and what."""

    text_hash: str
    kernel: str
    arch: str
    answer: KernelResources | Unconfirmed


_memo: OrderedDict[tuple[str, str, str], KernelResources | Unconfirmed] = OrderedDict()
_lock = threading.Lock()
_background = False
_pending: set[tuple[str, str, str]] = set()
_pending_uses = 0
_listeners: list[Callable[[], None]] = []
_executor: concurrent.futures.ThreadPoolExecutor | None = None
_held: list[Callable[[], None]] | None = None
"""Background work queued while the builds are held back (None: not held)."""
_nvrtc: list[str | None] = []
"""The build process's NVRTC version, once it answered (None: it has no NVRTC)."""
_recording = threading.local()
"""This thread's open `recording` (its `lookups` list), if any."""


class WorkerDied(Exception):
    """The build process stopped (crashed, or was stopped past its time limit) before it answered."""


class _Worker:
    """One build process, started on first use and again after it died; one request at a time."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def _command(self) -> list[str]:
        custom = os.environ.get(ENV_WORKER)
        if custom:
            cmd = json.loads(custom)
            if isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd):
                return cmd
            log.warning("%s is not a JSON list of strings; the default build process is used", ENV_WORKER)
        return [sys.executable, "-m", "warpwise.verify.resource_worker"]

    def request(self, payload: dict[str, Any], timeout_s: float = BUILD_TIMEOUT_S) -> dict[str, Any]:
        """Send one request and return the reply; raise `WorkerDied` when the process died or ran past the limit."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                proc = self._proc = subprocess.Popen(
                    self._command(),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    start_new_session=True,
                )
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps(payload) + "\n")
                proc.stdin.flush()
                ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
                line = proc.stdout.readline() if ready else None
            except (OSError, ValueError) as exc:
                self._stop()
                raise WorkerDied(f"the build process could not be reached ({exc})") from exc
            if line is None:
                self._stop()
                raise WorkerDied(f"the build ran past {timeout_s:.0f} s and was stopped")
            if not line:
                code = proc.wait()
                self._proc = None
                raise WorkerDied(f"the compiler crashed (the build process exited with status {code})")
            return dict(json.loads(line))

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)

    def close(self) -> None:
        """Stop the build process (it is started again when needed)."""
        with self._lock:
            self._stop()


_worker = _Worker()


def set_background(on: bool) -> None:
    """Never wait for a build: answer `Unconfirmed(PENDING)` and build on a background thread (the server)."""
    global _background
    _background = on


def add_listener(callback: Callable[[], None]) -> None:
    """Call `callback` (on the build thread) whenever a background build has answered."""
    with _lock:
        _listeners.append(callback)


def hold() -> None:
    """Queue background builds (and the build process's start) instead of starting them, until `release`."""
    global _held
    with _lock:
        if _held is None:
            _held = []


def release() -> None:
    """Start the background work queued since `hold`, in the order it was asked for (a no-op when not held)."""
    global _held
    with _lock:
        queued, _held = _held, None
    for work in queued or ():
        _pool().submit(work)


def _submit(work: Callable[[], None]) -> None:
    """Run `work` on the build thread, or queue it while the builds are held back."""
    with _lock:
        if _held is not None:
            _held.append(work)
            return
    _pool().submit(work)


def pending_uses() -> int:
    """Return how many times a pending answer was given (a match computed across a change is not to be cached)."""
    return _pending_uses


@contextlib.contextmanager
def recording() -> Iterator[list[Lookup]]:
    """Record, in the list this yields, every answer `kernel_resources` gives on this thread inside the block."""
    outer: list[Lookup] | None = getattr(_recording, "lookups", None)
    lookups: list[Lookup] = []
    _recording.lookups = lookups
    try:
        yield lookups
    finally:
        _recording.lookups = outer
        if outer is not None:
            outer.extend(lookups)


def text_hash(model: FileModel) -> str:
    """Return the SHA-256 of a model's text (what a `Lookup` is about), hashed once per model."""
    return _text_hash(model)


def same_answers(model: FileModel, lookups: list[Lookup]) -> bool:
    """Ask again, about `model`, what `lookups` asked about another version of the file; return whether every answer
    is the same one (a pending build stays pending, a report is the same report).

    Asking is what the matcher would do on `model` up to the first answer that differs: a build `model`'s text does
    not have yet is started (in the background) as the matcher would start it.
    """
    return all(kernel_resources(model, q.kernel, q.arch) == q.answer for q in lookups)


def warm_up() -> None:
    """Start the build process and its compiler now, on the background thread (the server calls it at start)."""
    if os.environ.get(ENV_DISABLE) == "1":
        return

    def run() -> None:
        t0 = time.perf_counter()
        try:
            if _nvrtc_version() is None:
                return
            _worker.request({})
        except WorkerDied as exc:
            log.warning("the resource build warm-up failed: %s", exc)
            return
        log.info("resource builds warmed up in %.0f ms", 1000 * (time.perf_counter() - t0))

    _submit(run)


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="warpwise-resources")
        return _executor


def kernel_resources(model: FileModel, kernel: str, arch: str = DEFAULT_ARCH) -> KernelResources | Unconfirmed:
    """Return ptxas' resource report for one kernel of a file model (never raises).

    In background mode (`set_background`) a report that is not memoised yet is `Unconfirmed(PENDING)`."""
    key = (_text_hash(model), kernel, arch)
    answer = _kernel_resources(model, key)
    lookups: list[Lookup] | None = getattr(_recording, "lookups", None)
    if lookups is not None:
        lookups.append(Lookup(*key, answer))
    return answer


def _kernel_resources(model: FileModel, key: tuple[str, str, str]) -> KernelResources | Unconfirmed:
    global _pending_uses
    _, kernel, arch = key
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            _memo.move_to_end(key)
            return hit
        if _background and os.environ.get(ENV_DISABLE) != "1":
            _pending_uses += 1
            if key not in _pending:
                _pending.add(key)
                submit = True
            else:
                submit = False
        else:
            submit = None
    if submit is not None:
        if submit:
            _submit(functools.partial(_build_in_background, model, kernel, arch, key))
        return Unconfirmed(PENDING)
    result = _build(model, kernel, arch)
    _remember(key, result)
    return result


def _text_hash(model: FileModel) -> str:
    """Return the SHA-256 of a model's text, hashed once per model (each kernel of a version asks for it)."""
    digest: str | None = model.memo.get(f"{__name__}.text_sha256")
    if digest is None:
        digest = model.memo[f"{__name__}.text_sha256"] = hashlib.sha256(model.text).hexdigest()
    return digest


def _remember(key: tuple[str, str, str], result: KernelResources | Unconfirmed) -> None:
    with _lock:
        _memo[key] = result
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)


def _build_in_background(model: FileModel, kernel: str, arch: str, key: tuple[str, str, str]) -> None:
    try:
        _remember(key, _build(model, kernel, arch))
    finally:
        with _lock:
            _pending.discard(key)
            listeners = list(_listeners)
    for callback in listeners:
        try:
            callback()
        except Exception:  # A listener that fails never stops the builds.
            log.exception("a resource build listener failed")


def _nvrtc_version() -> str | None:
    """Return the build process's NVRTC version (None when it has none), asked once; raise `WorkerDied`.

    NVRTC is loaded only in the build process: loading the library takes about 40 MiB of a process's memory, which
    the language server would otherwise hold for nothing but this question."""
    with _lock:
        if _nvrtc:
            return _nvrtc[0]
    reply = _worker.request({"query": "nvrtc"})
    version = reply.get("nvrtc")
    answer = str(version) if version else None
    with _lock:
        _nvrtc[:] = [answer]
    if answer is None:
        _worker.close()  # Without NVRTC nothing will be built: the process is not kept waiting.
    return answer


def _build(model: FileModel, kernel: str, arch: str) -> KernelResources | Unconfirmed:
    if os.environ.get(ENV_DISABLE) == "1":
        return Unconfirmed(f"resource builds are off ({ENV_DISABLE}=1)")
    try:
        if _nvrtc_version() is None:
            return Unconfirmed(
                "no CUDA compiler: NVRTC (the nvidia-cuda-nvrtc wheel with cuda-bindings) is not installed"
            )
        source = _source(model, kernel)
        if isinstance(source, Unconfirmed):
            return source
        reply = _worker.request({"source": source.to_dict(), "arch": arch, "cache_dir": _cache_dir()})
    except WorkerDied as exc:
        log.warning("resource build of %s: %s", kernel, exc)
        return Unconfirmed(f"no build of `{kernel}`: {exc}")
    except Exception as exc:  # A build that raises is an unconfirmed claim, never a failed analysis.
        log.exception("resource build of %s failed", kernel)
        return Unconfirmed(f"the build of `{kernel}` raised {type(exc).__name__}")
    if "info" not in reply:
        return Unconfirmed(f"the build of `{kernel}` raised {reply.get('error', 'an unknown error')}"[:200])
    from warpwise.verify.types import BuildInfo

    info = BuildInfo.from_dict(reply["info"])
    if not info.ok:
        first = next((ln.strip() for ln in info.log.splitlines() if "error" in ln), info.log.strip()[:160])
        return Unconfirmed(f"`{kernel}` does not build on its own with NVRTC ({first[:160]})")
    return KernelResources(
        kernel,
        arch,
        info.compiler,
        info.registers,
        info.stack_bytes or 0,
        info.spill_stores or 0,
        info.spill_loads or 0,
        str(reply.get("code") or ""),
    )


def _source(model: FileModel, kernel: str) -> Any:
    """Return the NVRTC build input of one kernel of the model, or why there is none."""
    from warpwise.verify.extract import device_source, qualified_name
    from warpwise.verify.gate import kernel_instantiations
    from warpwise.verify.types import Source

    fn = model.function(kernel)
    if fn is None or not fn.is_kernel:
        return Unconfirmed(f"`{kernel}` is not a kernel of this file")
    args: tuple[str, ...] = ()
    if fn.template_params:
        found = kernel_instantiations(model.text, model.path, kernel, model)
        if not found or any("?" in a for a in found[0]):
            return Unconfirmed(f"the template arguments of `{kernel}` are not known from this file")
        args = found[0]
    name = qualified_name(model.source, fn.base, kernel)
    if args:
        name = f"{name}<{', '.join(args)}>"
    filename = Path(model.path or "kernel.cu").name or "kernel.cu"
    # One extraction per model: every kernel of a version is built from the same device-only file.
    key = f"{__name__}.device_text"
    text: str | None = model.memo.get(key)
    if text is None:
        path = model.path if model.path and Path(model.path).is_file() else None
        text = model.memo[key] = device_source(model.source, filename, path=path, host=False).text
    return Source(text, name, filename)


def _cache_dir() -> str | None:
    """Return the on-disk build cache the gate uses too (None keeps builds in memory only)."""
    try:
        from warpwise.verify.backends import build_cache_dir

        return build_cache_dir()
    except Exception:  # A cache folder that cannot be made only costs rebuilds.
        return None


def resource_regression(before: FileModel, after: FileModel, kernel: str, arch: str = DEFAULT_ARCH) -> str | None:
    """Return why a rewrite of a kernel is not safe for its resources (None when the builds show it is).

    The rewrite is safe only when the build of the rewritten kernel has no more spills and no larger stack frame
    than the original's; without a build to show it, it is not safe either (the reason says the claim is
    unconfirmed).
    """
    old = kernel_resources(before, kernel, arch)
    new = kernel_resources(after, kernel, arch)
    for res in (old, new):
        if isinstance(res, Unconfirmed):
            return f"unconfirmed: no build shows that the fix adds no spills ({res.reason})"
    assert isinstance(old, KernelResources) and isinstance(new, KernelResources)
    spills = (new.spill_stores + new.spill_loads) - (old.spill_stores + old.spill_loads)
    stack = new.stack_bytes - old.stack_bytes
    if spills > 0 or stack > 0:
        parts = [
            f"{spills} bytes of spills" if spills > 0 else "",
            f"{stack} bytes of stack frame" if stack > 0 else "",
        ]
        return (
            f"the build of the fixed `{kernel}` adds {' and '.join(parts)} "
            f"({old.describe()} before, {new.stack_bytes} bytes stack and "
            f"{new.spill_stores + new.spill_loads} bytes of spills after)"
        )
    return None


def same_machine_code(
    before: FileModel, after: FileModel | Callable[[], FileModel], kernel: str, arch: str = DEFAULT_ARCH
) -> bool | Unconfirmed:
    """Return whether a kernel builds to byte-identical machine code before and after a rewrite (or why unknown).

    A rewrite that only tells the compiler what it already does (`#pragma unroll` on a loop nvcc unrolls anyway)
    leaves the cubin unchanged: the finding behind it would change nothing. `after` may be a function that makes
    the rewritten model: it is called only once the original's build has answered (analysing a whole rewritten
    file while the original's build is still pending, as on a first open in the editor, would be wasted).
    """
    old = kernel_resources(before, kernel, arch)
    if isinstance(old, Unconfirmed):
        return old
    new = kernel_resources(after() if callable(after) else after, kernel, arch)
    if isinstance(new, Unconfirmed):
        return new
    if not old.code or not new.code:
        return Unconfirmed("the build process gave no machine code to compare")
    return old.code == new.code
