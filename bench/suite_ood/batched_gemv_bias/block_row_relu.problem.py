"""Problem: y[b] = relu(alpha * A[b] x[b] + bias) for a batch of row-major matrices sharing one bias (kernel
`batched_gemv_bias_relu` of block_row_relu.cu, out-of-distribution naive suite).

How it is written: a block per (row, batch) on a 2-D grid, a shared tree in the strided-index form, alpha scale,
shared bias and a ReLU in the epilogue, the block size from `blockDim.x`.

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

kernel = "batched_gemv_bias_relu"
operator = "batched_gemv_bias"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (32, 1024, 2048), "tiny": (2, 30, 300), "odd": (3, 41, 1003)}


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
    """Return A, x and bias in multiples of 1/32 (exact sums), y, sizes and alpha = 0.25."""
    b, rows, cols = _size()
    dev, gen = _gen(seed)
    a = torch.randint(-16, 17, (b, rows, cols), generator=gen, device=dev).float() / 32
    x = torch.randint(-16, 17, (b, cols), generator=gen, device=dev).float() / 32
    bias = torch.randint(-16, 17, (rows,), generator=gen, device=dev).float() / 32
    return {"A": a, "x": x, "bias": bias, "y": torch.empty(b, rows, device=dev), "R": rows, "C": cols, "alpha": 0.25}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return relu(alpha * A[b] x[b] + bias)."""
    ax = torch.bmm(inputs["A"].double(), inputs["x"].double()[:, :, None])[:, :, 0]
    return {"y": torch.relu(inputs["alpha"] * ax + inputs["bias"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    ax = torch.bmm(inputs["A"], inputs["x"][:, :, None])[:, :, 0]
    return torch.relu(inputs["alpha"] * ax + inputs["bias"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Return one block of 128 per (row, batch) and 128 floats of dynamic shared memory."""
    return (int(inputs["R"]), int(inputs["A"].shape[0]), 1), (128, 1, 1), 128 * 4


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every matrix read once, x, bias and y."""
    return 4 * (inputs["A"].numel() + inputs["x"].numel() + inputs["bias"].numel() + inputs["y"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per matrix element."""
    return 2 * inputs["A"].numel()
