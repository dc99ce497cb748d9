"""Problem: the sum of every column of a row-major rows x cols float32 matrix, accumulated into zeroed sums (kernel
`colsum_atomic` of atomic_per_element_2d.cu, out-of-distribution naive suite).

How it is written: one element per thread on a 2-D grid of 32 x 8 blocks, every element added to its column with a
global `atomicAdd`, the guard written as an early return on either bound.

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

kernel = "colsum_atomic"
operator = "column_sums"
corpus_expert = None
roofline = "memory"
inout = ("out",)
SIZES = {"full": (8192, 8192), "tiny": (100, 70), "odd": (333, 101)}


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
    """Return a uniform [0, 1) matrix, zeroed sums and the sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    m = torch.rand(rows, cols, generator=gen, device=dev)
    return {"m": m, "out": torch.zeros(cols, device=dev), "nrows": rows, "ncols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the column sums (computed in float64)."""
    return {"out": inputs["m"].double().sum(dim=0).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["m"].sum(dim=0)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 32 x 8 blocks, one thread per element."""
    rows, cols = int(inputs["nrows"]), int(inputs["ncols"])
    return ((cols + 31) // 32, (rows + 7) // 8, 1), (32, 8, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the matrix once and the sums."""
    return 4 * inputs["m"].numel() + 4 * int(inputs["ncols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return one addition per element."""
    return inputs["m"].numel()
