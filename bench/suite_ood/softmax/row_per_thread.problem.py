"""Problem: softmax over each row of a rows x cols float32 matrix (kernel `softmax_row_per_thread` of
row_per_thread.cu, out-of-distribution naive suite).

How it is written: one thread per row (1-D launch), three passes over the row through a row pointer, sizes as
parameters, `int` indices, an `if` around the body.

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

kernel = "softmax_row_per_thread"
operator = "softmax"
corpus_expert = "softmax_rows"
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (5, 300), "odd": (131, 1001)}


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
    """Return a standard normal matrix, the output and the sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev)
    return {"in": x, "out": torch.empty_like(x), "n_rows": rows, "n_cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the row softmax."""
    return {"out": torch.softmax(inputs["in"], dim=1)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.softmax(inputs["in"], dim=1)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 128 threads a block."""
    return ((int(inputs["n_rows"]) + 127) // 128, 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the matrix read once and written once."""
    return 8 * int(inputs["n_rows"]) * int(inputs["n_cols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return max, subtract, exp, add and scale per element."""
    return 5 * int(inputs["n_rows"]) * int(inputs["n_cols"])
