"""Problem: x = max(x + b[col], 0) in place on a rows x cols float32 matrix (kernel `add_bias_relu_inplace` of
inplace_2d.cu, out-of-distribution naive suite).

How it is written: in place (an in-out buffer), a 2-D launch of 16 x 16 blocks with the row from y and the column
from x, an early return on either bound, a ternary instead of `fmaxf`.

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

kernel = "add_bias_relu_inplace"
operator = "bias_relu"
corpus_expert = None
roofline = "memory"
inout = ("x",)
SIZES = {"full": (8192, 8192), "tiny": (9, 200), "odd": (31, 1003)}


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
    """Return normal x and b and the sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev)
    b = torch.randn(cols, generator=gen, device=dev)
    return {"x": x, "b": b, "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return relu(x + b)."""
    return {"x": torch.relu(inputs["x"] + inputs["b"])}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.relu_(inputs["x"].clone().add_(inputs["b"]))


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 16 x 16 blocks over (columns, rows)."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return ((cols + 15) // 16, (rows + 15) // 16, 1), (16, 16, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read and written once, b read once."""
    return 8 * inputs["x"].numel() + 4 * inputs["b"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return an add and a max per element."""
    return 2 * inputs["x"].numel()
