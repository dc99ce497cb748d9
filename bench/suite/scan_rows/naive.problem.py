"""Problem: the inclusive prefix sum along each row of a rows x cols float32 matrix (kernel `scan_rows_naive` of
naive.cu; the corpus scans one long vector instead).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 65536 x 4096: 1 GiB in and 1 GiB out) or a
small preset for CPU tests and tail checks. The values are uniform in [0, 1), so every prefix is a
well-conditioned sum; the reference sums in float64.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "scan_rows_naive"
roofline = "memory"

SIZES = {"full": (65536, 4096), "tiny": (64, 256), "odd": (37, 1001)}


def _size() -> tuple[int, int]:
    """Return (rows, cols) for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x (uniform in [0, 1)), the output y and the sizes."""
    rows, cols = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.rand(rows, cols, generator=gen, device=dev, dtype=torch.float32)
    return {"x": x, "y": torch.empty_like(x), "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the prefix sums of each row, summed in float64."""
    return {"y": torch.cumsum(inputs["x"].double(), dim=1).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.cumsum(inputs["x"], dim=1)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, in blocks of 128."""
    return (math.ceil(int(inputs["rows"]) / 128), 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read once, y written once."""
    return 8 * int(inputs["rows"]) * int(inputs["cols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: one add per value."""
    return int(inputs["rows"]) * int(inputs["cols"])
