"""Problem: alpha times the sum of every column of a column-major rows x cols float32 matrix (alpha = 1 / rows: column
means) (kernel `column_mean_colmajor` of colmajor_mean.cu, out-of-distribution naive suite).

How it is written: column-major storage (`IDX2C(i, j, ld)` macro), one thread per column walking its contiguous
column (each warp load touches 32 columns: strided), an alpha scale in the epilogue, `unsigned` indices.

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

kernel = "column_mean_colmajor"
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
    """Return a uniform [0, 1) matrix stored column-major (as cols x rows), the means, sizes and 1 / rows."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    m = torch.rand(cols, rows, generator=gen, device=dev)
    return {"M": m, "mean": torch.empty(cols, device=dev), "rows": rows, "cols": cols, "alpha": 1.0 / rows}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return alpha times each column's sum (computed in float64)."""
    return {"mean": (inputs["alpha"] * inputs["M"].double().sum(dim=1)).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["M"].mean(dim=1)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per column, 128 a block."""
    return ((int(inputs["cols"]) + 127) // 128, 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the matrix once and the means."""
    return 4 * inputs["M"].numel() + 4 * int(inputs["cols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return one addition per element and a scale per column."""
    return inputs["M"].numel() + int(inputs["cols"])
