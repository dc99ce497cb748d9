"""What the compiler says about a kernel's resources: registers, stack frame, spills, from a compile-only build.

Statements about local memory, spills, registers and occupancy come from the build, not from a guess (issue 18):
`kernel_resources` builds one kernel of a file model with NVRTC (device code only, as the gate extracts it; no GPU
needed, no code runs) and reads ptxas' report. Builds are cached on disk by content (the worker's `BuildCache`)
and in memory by (file text, kernel, arch), so the same text is compiled once; a build takes tens of milliseconds.
It runs in a long-lived child process: NVRTC crashes on some real sources, and a crash must not end the analysis.

When no compiler is available, or the kernel does not build on its own (missing headers, templates without known
arguments), the answer is a `Unconfirmed` value with the reason: callers then say that their claim is unconfirmed.
Only NVRTC is used here (nvcc would take seconds per file, too slow for matching as the user types).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warpwise.analyzers.model import FileModel

log = logging.getLogger(__name__)

DEFAULT_ARCH = "sm_90"
ENV_DISABLE = "WARPWISE_NO_RESOURCE_BUILDS"
"""Set to 1 to never build for resource claims (every claim is then unconfirmed)."""
_MEMO_SIZE = 256


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


_memo: OrderedDict[tuple[str, str, str], KernelResources | Unconfirmed] = OrderedDict()
_lock = threading.Lock()


def kernel_resources(model: FileModel, kernel: str, arch: str = DEFAULT_ARCH) -> KernelResources | Unconfirmed:
    """Return ptxas' resource report for one kernel of a file model (never raises)."""
    key = (hashlib.sha256(model.text).hexdigest(), kernel, arch)
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            _memo.move_to_end(key)
            return hit
    result = _build(model, kernel, arch)
    with _lock:
        _memo[key] = result
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return result


def _build(model: FileModel, kernel: str, arch: str) -> KernelResources | Unconfirmed:
    if os.environ.get(ENV_DISABLE) == "1":
        return Unconfirmed(f"resource builds are off ({ENV_DISABLE}=1)")
    from warpwise.verify.worker import nvbuild

    if nvbuild.nvrtc_version() is None:
        return Unconfirmed("no CUDA compiler: NVRTC (the nvidia-cuda-nvrtc wheel with cuda-bindings) is not installed")
    try:
        source = _source(model, kernel)
        if isinstance(source, Unconfirmed):
            return source
        built = _isolated_build(source, arch)
    except Exception as exc:  # A build that raises is an unconfirmed claim, never a failed analysis.
        log.exception("resource build of %s failed", kernel)
        return Unconfirmed(f"the build of `{kernel}` raised {type(exc).__name__}")
    if isinstance(built, Unconfirmed):
        return built
    info = built.info
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
    )


_CHILD = (
    "import json, sys\n"
    "from warpwise.verify.types import Source\n"
    "from warpwise.verify.worker import nvbuild\n"
    "for line in sys.stdin:\n"
    "    req = json.loads(line)\n"
    "    built = nvbuild.build(Source.from_dict(req['source']), req['arch'], nvbuild.BuildCache(req['cache']))\n"
    "    sys.stdout.write(built.info.to_json() + '\\n')\n"
    "    sys.stdout.flush()\n"
)
_CHILD_TIMEOUT_S = 120.0


class _Compiler:
    """One long-lived child process that compiles for resource reports, one request at a time (JSON lines).

    Starting Python and importing the CUDA bindings costs about a second on a loaded machine, so the child is
    kept and reused; when it crashes (NVRTC's own segmentation faults) or hangs, it is replaced by the next request.
    """

    def __init__(self) -> None:
        self.proc: Any = None
        self.lock = threading.Lock()

    def ask(self, request: str, timeout: float) -> tuple[str | None, str]:
        """Return (the child's reply line, "") or (None, why there is none)."""
        import select
        import subprocess
        import sys

        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                try:
                    self.proc = subprocess.Popen(
                        [sys.executable, "-c", _CHILD],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                        text=True,
                        bufsize=1,
                    )
                except OSError as exc:
                    self.proc = None
                    return None, f"could not start ({exc.strerror or exc})"
            proc = self.proc
            try:
                proc.stdin.write(request + "\n")
                proc.stdin.flush()
                ready, _, _ = select.select([proc.stdout], [], [], timeout)
                line = proc.stdout.readline() if ready else None
            except OSError:
                line = ""
            if line is None:
                proc.kill()
                proc.wait()
                self.proc = None
                return None, f"took over {timeout:.0f} s"
            if not line:
                try:
                    code = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = proc.wait()
                self.proc = None
                how = f"signal {-code}" if code < 0 else f"exit status {code}"
                return None, f"crashed ({how})"
            return line, ""


_compiler = _Compiler()


def _isolated_build(source: Any, arch: str) -> Any:
    """Build one kernel, compiling in a child process: NVRTC crashes on some real sources (a segmentation fault
    inside `nvrtcCompileProgram` on a LeetCUDA flash-attention file), and a crash must cost one unconfirmed claim,
    never the analysis. A build the on-disk cache already holds is read here without asking the child."""
    import json

    from warpwise.verify.types import BuildInfo
    from warpwise.verify.worker import nvbuild

    folder = _cache_dir()
    cache = nvbuild.BuildCache(folder)
    compiler = nvbuild.nvrtc_version() or ""
    hit = cache.get(cache.key(source, arch, compiler)) if compiler and not source.host_text else None
    if hit is not None:
        return hit
    request = json.dumps({"source": source.to_dict(), "arch": arch, "cache": folder})
    reply, why = _compiler.ask(request, _CHILD_TIMEOUT_S)
    if reply is None:
        if why.startswith("crashed"):
            return Unconfirmed(f"the compiler crashed building `{source.name_expression}` ({why[9:-1]})")
        return Unconfirmed(f"the build of `{source.name_expression}` {why}")
    try:
        info = BuildInfo.from_dict(json.loads(reply))
    except (ValueError, TypeError, KeyError):
        return Unconfirmed(f"the build of `{source.name_expression}` gave no report")
    return nvbuild.Build(b"", info)


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
    path = model.path if model.path and Path(model.path).is_file() else None
    dev = device_source(model.source, Path(model.path or "kernel.cu").name or "kernel.cu", path=path)
    return Source(dev.text, name, Path(model.path or "kernel.cu").name or "kernel.cu")


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
