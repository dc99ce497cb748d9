"""Problem: the 8 largest values of each row of a rows x cols float32 matrix and their column indices, largest
first (kernel `topk_naive` of naive.cu; not in the corpus).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 65536 x 1024: 256 MiB) or a small preset for
CPU tests and tail checks. The values are continuous random numbers, so ties among a row's 8 largest (where
the order of indices would be arbitrary) do not occur in practice.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "topk_naive"
roofline = "memory"

SIZES = {"full": (65536, 1024), "tiny": (64, 256), "odd": (37, 1001)}
K = 8


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
    """Return x (standard normal), the value and index outputs, and the sizes."""
    rows, cols = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev, dtype=torch.float32)
    values = torch.empty(rows, K, device=dev, dtype=torch.float32)
    indices = torch.empty(rows, K, device=dev, dtype=torch.int32)
    return {"x": x, "values": values, "indices": indices, "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the K largest values of each row and their indices, largest first."""
    top = torch.topk(inputs["x"], K, dim=1, largest=True, sorted=True)
    return {"values": top.values, "indices": top.indices.to(torch.int32)}


def eager(inputs: dict[str, Any]) -> Any:
    """Return what torch eager runs for this operator."""
    return torch.topk(inputs["x"], K, dim=1, largest=True, sorted=True)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, in blocks of 128."""
    return (math.ceil(int(inputs["rows"]) / 128), 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read once, K values and K indices written per row."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return 4 * rows * cols + 8 * rows * K


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: one comparison per value."""
    return int(inputs["rows"]) * int(inputs["cols"])
