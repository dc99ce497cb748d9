"""Problem: y[b] = A[b] v[b] + bias[b] for a batch of row-major matrices (each batch its own matrix and bias) (kernel
`bmv_bias` of per_batch_divmod.cu, out-of-distribution naive suite).

How it is written: a 1-D launch over batch x rows with the batch and row recovered by division and remainder, one
thread per row, `long` offsets for the batch stride, bias added after the loop.

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

kernel = "bmv_bias"
operator = "batched_gemv_bias"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (32, 1024, 2048), "tiny": (3, 40, 100), "odd": (5, 67, 333)}


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
    """Return A (batch x rows x cols), v and bias in multiples of 1/32 (exact sums), out and sizes."""
    b, rows, cols = _size()
    dev, gen = _gen(seed)
    a = torch.randint(-16, 17, (b, rows, cols), generator=gen, device=dev).float() / 32
    v = torch.randint(-16, 17, (b, cols), generator=gen, device=dev).float() / 32
    bias = torch.randint(-16, 17, (b, rows), generator=gen, device=dev).float() / 32
    return {
        "A": a,
        "v": v,
        "bias": bias,
        "out": torch.empty(b, rows, device=dev),
        "batch": b,
        "rows": rows,
        "cols": cols,
    }


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return A[b] v[b] + bias[b] for every b."""
    y = torch.bmm(inputs["A"].double(), inputs["v"].double()[:, :, None])[:, :, 0] + inputs["bias"].double()
    return {"out": y.float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.baddbmm(inputs["bias"][:, :, None], inputs["A"], inputs["v"][:, :, None])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per (batch, row), 256 a block."""
    n = int(inputs["batch"]) * int(inputs["rows"])
    return ((n + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every matrix read once, vectors, bias and output."""
    return 4 * (inputs["A"].numel() + inputs["v"].numel() + 2 * inputs["bias"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per matrix element."""
    return 2 * inputs["A"].numel()
