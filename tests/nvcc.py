"""Compile CUDA sources with nvcc for sm_90, in parallel and cached by content hash.

Many tests only need to know that a source compiles. nvcc costs close to a second a file, so results are kept in
a cache folder (`WARPWISE_TEST_CACHE`, default `~/.cache/warpwise-tests`) keyed by a hash of the source, the flags
and the nvcc version, and batches are compiled on every core at once.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ("-arch=sm_90", "-c")


def _flags(source: bytes) -> tuple[str, ...]:
    """Return the flags for one source: the architecture-specific target for what only it has, as the gate's builder
    chooses (`target_arch`)."""
    from warpwise.verify.worker.nvbuild import target_arch

    arch = target_arch(source.decode("utf-8", "surrogateescape"), "sm_90")
    if arch == "sm_90":
        return FLAGS
    # `-arch=sm_90a` would also embed compute_90 PTX, which cannot hold the arch-specific instructions.
    return (f"-gencode=arch=compute_{arch[3:]},code={arch}", *FLAGS[1:])


@functools.cache
def _version() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return ""
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout


def _cache_dir() -> Path:
    root = Path(os.environ.get("WARPWISE_TEST_CACHE", Path.home() / ".cache" / "warpwise-tests")) / "nvcc"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _key(source: bytes, extra: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    h.update(_version().encode())
    h.update(" ".join(_flags(source) + extra).encode())
    h.update(source)
    return h.hexdigest()


def compile_source(source: bytes, extra: tuple[str, ...] = ()) -> tuple[bool, str]:
    """Compile one source (with `extra` flags); return (ok, compiler log). Passing builds are remembered with their
    log, so a cached answer carries the same warnings."""
    if not _version():
        return True, "nvcc is not installed"
    marker = _cache_dir() / f"{_key(source, extra)}.ok"
    if marker.exists():
        return True, marker.read_text() or "cached"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "source.cu"
        path.write_bytes(source)
        proc = subprocess.run(
            ["nvcc", *_flags(source), *extra, str(path), "-o", str(Path(tmp) / "out.o")],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    if proc.returncode == 0:
        marker.write_text(proc.stderr)
    return proc.returncode == 0, proc.stderr


def compile_many(sources: list[bytes], verbose: bool = False) -> list[tuple[bool, str]]:
    """Compile several sources on every core at once (`verbose`: with ptxas' resource report and warnings)."""
    workers = max(1, os.cpu_count() or 1)
    extra = ("-Xptxas=-v",) if verbose else ()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda s: compile_source(s, extra), sources))
