"""Compile-only resource reports on save: one `nvcc -cubin -Xptxas -v` over the saved text gives registers,
spills, shared memory and theoretical occupancy for every kernel of the file at once (`warpwise.server.resources`).

The gate's compile-only backend builds one kernel per job (NVRTC, in a worker process); for the per-save report of
a whole file one nvcc process is the cheaper build. Nothing is built in an untrusted workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warpwise.analyzers.model import FileModel
from warpwise.server.documents import Snapshot
from warpwise.server.jobs import Job
from warpwise.server.resources import (
    CompilerMessage,
    KernelResources,
    Occupancy,
    occupancy,
    parse_nvcc_messages,
    parse_ptxas,
)
from warpwise.server.settings import Settings
from warpwise.server.trust import UNTRUSTED


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


class CompileOnlyBuilds:
    """The per-save nvcc builds: the toolkit version per executable, the reports per text, the running builds."""

    def __init__(self, trusted: Callable[[], bool]) -> None:
        self.trusted = trusted
        self._toolkit: dict[str, str | None] = {}
        self._cache: dict[tuple, ProfileReport] = {}
        self._procs: set[asyncio.subprocess.Process] = set()

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

    def clear(self) -> int:
        """Forget the cached reports and toolkit versions; return how many reports were cached."""
        n = len(self._cache)
        self._cache.clear()
        self._toolkit.clear()
        return n

    def kill_all(self) -> None:
        """Kill every running build."""
        for proc in list(self._procs):
            kill_group(proc)
        self._procs.clear()

    async def build(
        self, job: Job, snap: Snapshot, settings: Settings, shapes: dict[str, LaunchShape]
    ) -> ProfileReport:
        """Build the saved text with `nvcc -cubin -Xptxas -v` and parse what the compiler reports."""
        t0 = time.perf_counter()
        arch = settings.compiler_arch
        cache_key = (snap.content_hash, compile_key(settings), snap.path)
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
                kill_group(proc)
                await proc.wait()
                return report(
                    "timed_out",
                    f"the compile-only build took longer than {settings.compiler_timeout_seconds:g} s "
                    "(`warpwise.compiler.timeoutSeconds`) and was stopped",
                    toolkit=toolkit,
                )
            except asyncio.CancelledError:
                kill_group(proc)
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


def kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill a build and every process it started (it runs in its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def compile_key(settings: Settings) -> tuple:
    return (settings.compiler_nvcc, settings.compiler_arch, settings.compiler_flags)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"
