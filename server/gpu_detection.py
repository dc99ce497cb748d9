"""GPU detection for the status item: `nvidia-smi`, else the CUDA driver (through `warpwise.verify.backends`)."""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """What the server knows about the GPU of this machine."""

    found: bool
    name: str | None
    detail: str


async def detect_gpu() -> GpuInfo:
    """Look for an NVIDIA GPU (with `nvidia-smi`, else the CUDA driver)."""
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
                return GpuInfo(True, name, f"{name}{more}, driver {lines[0].split(',')[-1].strip()}")
        except (OSError, TimeoutError) as exc:
            log.info("nvidia-smi did not answer: %s", exc)
    count = await asyncio.to_thread(_driver_gpu_count)
    if count > 0:
        return GpuInfo(True, "NVIDIA GPU", f"{count} CUDA device{'s' if count > 1 else ''} (no nvidia-smi)")
    return GpuInfo(False, None, "no NVIDIA GPU found")


def _driver_gpu_count() -> int:
    from warpwise.verify.backends import gpu_count

    return gpu_count()
