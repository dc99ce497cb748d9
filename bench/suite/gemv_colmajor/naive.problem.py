"""Problem: y = A x for a rows x cols float32 matrix A stored column-major, i.e. the buffer `A` holds A^T
row-major (kernel `gemv_colmajor_naive` of naive.cu; the corpus GEMV is row-major).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192: 256 MiB) or a small preset for
CPU tests and tail checks. The entries are multiples of 1/32 in [-1, 1], so every float32 dot product is exact
in any summation order and the kernel must match the float64 reference exactly.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "gemv_colmajor_naive"
roofline = "memory"

SIZES = {"full": (8192, 8192), "tiny": (256, 64), "odd": (1001, 13)}


def _size() -> tuple[int, int]:
    """Return (rows, cols) of A for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return A column-major (a cols x rows tensor), x, the output y and the sizes."""
    rows, cols = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    a_colmajor = torch.randint(-32, 33, (cols, rows), generator=gen, device=dev).to(torch.float32) / 32
    x = torch.randint(-32, 33, (cols,), generator=gen, device=dev).to(torch.float32) / 32
    y = torch.empty(rows, device=dev, dtype=torch.float32)
    return {"A": a_colmajor, "x": x, "y": y, "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return y = A x, computed in float64 (exact for these entries)."""
    return {"y": (inputs["A"].double().t() @ inputs["x"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator (cuBLAS reads the transposed layout as is)."""
    return torch.mv(inputs["A"].t(), inputs["x"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per output row, in blocks of 256."""
    return (math.ceil(int(inputs["rows"]) / 256), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and x read once, y written once."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return 4 * (rows * cols + cols + rows)


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: a multiply and an add per entry of A."""
    return 2 * int(inputs["rows"]) * int(inputs["cols"])
