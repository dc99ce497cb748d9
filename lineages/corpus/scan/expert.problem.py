"""Problem: the inclusive prefix sum of n float32 values (kernel `scan_f32` of expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 2^28 values: 1 GiB in and 1 GiB out) or a
small preset for CPU tests and tail checks (`odd`: n % 4 != 0 and a partial last tile; `many`: more tiles than
one look-back window of 32).

The values are uniform in [0, 1), so every prefix is a well-conditioned sum; the reference sums in float64.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "scan_f32"
roofline = "memory"

SIZES = {"full": 1 << 28, "tiny": 3 * 4096, "odd": 3 * 4096 + 5, "many": 40 * 4096 + 1000}


def _size() -> int:
    """Return n for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x (uniform in [0, 1)), the output y and n."""
    n = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.rand(n, generator=gen, device=dev, dtype=torch.float32)
    return {"x": x, "y": torch.empty_like(x), "n": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return y[i] = x[0] + ... + x[i], summed in float64."""
    return {"y": torch.cumsum(inputs["x"].double(), dim=0).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.cumsum(inputs["x"], dim=0)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of 256 threads per tile of 4096 values (the kernel takes tiles in ticket order)."""
    return (max(1, math.ceil(int(inputs["n"]) / 4096)), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read once, y written once."""
    return 8 * int(inputs["n"])


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations of a work-efficient scan: about two adds per value."""
    return 2 * int(inputs["n"])
