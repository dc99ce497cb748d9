"""Problem: the sum of every column of a row-major rows x cols float32 matrix (kernel `col_sum` of thread_per_col.cu,
out-of-distribution naive suite).

How it is written: one thread per column walking down the rows (coalesced, but few threads with one load in flight
each), `int` indices, the guard `if (c < cols)` around the loop.

A problem file in the gate's format (bench/suite/README.md, lineages/corpus/README.md): `make_inputs(seed)`
returns every kernel parameter by name, `reference(inputs)` the expected outputs, `launch(inputs)` the (grid,
block[, smem]); `SIZES`, `roofline`, `bytes_moved`, `flops` and `eager` are read by bench/gpu/corpus_check.py.
`operator` and `corpus_expert` (the lineages/corpus folder of the same operator, or None) are read by the
suite's tests and README. WARPWISE_PROBLEM_SCALE picks a row of SIZES (`full` is the default).
"""

from __future__ import annotations

import os
from typing import Any

import torch

kernel = "col_sum"
operator = "column_sums"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (300, 70), "odd": (1001, 333)}


def _size() -> Any:
    """Return the sizes of the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _gen(seed: int) -> tuple[torch.device, torch.Generator]:
    """Return the device (the GPU when there is one, else the CPU) and a generator seeded with `seed`."""
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    return dev, gen


def make_inputs(seed: int) -> dict[str, Any]:
    """Return a uniform [0, 1) matrix, the sums and the sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    a = torch.rand(rows, cols, generator=gen, device=dev)
    return {"a": a, "sums": torch.empty(cols, device=dev), "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the column sums (computed in float64)."""
    return {"sums": inputs["a"].double().sum(dim=0).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["a"].sum(dim=0)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per column, 256 a block."""
    return ((int(inputs["cols"]) + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the matrix once and the sums."""
    return 4 * inputs["a"].numel() + 4 * int(inputs["cols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return one addition per element."""
    return inputs["a"].numel()
