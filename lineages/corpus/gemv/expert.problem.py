"""Problem: y = A x for a row-major rows x cols float32 matrix A (kernel `gemv_f32` of expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192: 256 MiB) or a small preset for
CPU tests and tail checks (`odd`: rows not a multiple of 4, the scalar path; `edge`: a row length whose vectors
do not fill the unrolled loop).

The entries are multiples of 1/32 in [-1, 1], so every float32 dot product is exact in any summation order and
the kernel must match the float64 reference exactly (see the sgemm problem for why).
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "gemv_f32"
roofline = "memory"

SIZES = {"full": (8192, 8192), "tiny": (16, 256), "odd": (13, 1001), "edge": (37, 2052)}


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
    """Return A, x, the output y and the sizes."""
    rows, cols = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    a = torch.randint(-32, 33, (rows, cols), generator=gen, device=dev).to(torch.float32) / 32
    x = torch.randint(-32, 33, (cols,), generator=gen, device=dev).to(torch.float32) / 32
    return {"A": a, "x": x, "y": torch.empty(rows, device=dev, dtype=torch.float32), "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return y = A x, computed in float64 (exact for these entries)."""
    return {"y": (inputs["A"].double() @ inputs["x"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.mv(inputs["A"], inputs["x"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one warp per row: blocks of 256 threads, 8 rows each."""
    return (math.ceil(int(inputs["rows"]) / 8), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and x read once, y written once."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return 4 * (rows * cols + cols + rows)


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: a multiply and an add per entry of A."""
    return 2 * int(inputs["rows"]) * int(inputs["cols"])
