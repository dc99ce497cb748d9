"""Shared test helpers: fixture paths, and markers that skip with a visible reason where a tool is missing."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The test run gets its own result and build cache, so that no cache of the user's (or of another checkout's run,
# written with another schema) decides a result. It is set when this file is imported, before any server process
# is configured (tests/server takes its environment at import time); a directory the caller set still wins.
if "WARPWISE_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="warpwise-test-cache-")
    os.environ["WARPWISE_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CUDA_VALID = FIXTURES / "cuda" / "valid"
CUDA_INVALID = FIXTURES / "cuda" / "invalid"
EXAMPLES = ROOT / "examples"
ANCHOR = ROOT.parent / "shared" / "bench" / "anchor_kernels.cu"

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")


def _has_gpu() -> bool:
    try:
        from cuda.bindings import driver
    except ImportError:
        return False
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, count = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and count > 0
    except Exception:
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests, with the reason shown, where no NVIDIA GPU is visible."""
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU visible to the CUDA driver (GPU tests run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
