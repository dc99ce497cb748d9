"""Problem: the transpose of a rows x cols float32 matrix into a cols x rows one (kernel `transpose_f32` of
expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192: 256 MiB in and 256 MiB out) or a
small preset for CPU tests and tail checks (`odd`: sides not multiples of 4, the scalar path; `edge`: multiples
of 4 but not of the 64-wide tile).
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "transpose_f32"
roofline = "memory"

SIZES = {"full": (8192, 8192), "tiny": (64, 128), "odd": (67, 45), "edge": (100, 36)}


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
    """Return the input matrix (standard normal), the output and the sizes."""
    rows, cols = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev, dtype=torch.float32)
    out = torch.empty(cols, rows, device=dev, dtype=torch.float32)
    return {"in": x, "out": out, "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return out = in transposed."""
    return {"out": inputs["in"].t().contiguous()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["in"].t().contiguous()


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of 256 threads per 64 x 64 tile."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return (math.ceil(cols / 64), math.ceil(rows / 64), 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the matrix read once and written once."""
    return 8 * int(inputs["rows"]) * int(inputs["cols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: none."""
    return 0
