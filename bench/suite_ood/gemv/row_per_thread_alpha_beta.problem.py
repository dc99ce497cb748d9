"""Problem: y = alpha * A x + beta * y for a row-major M x N float32 matrix (y in-out) (kernel `sgemv_alpha_beta` of
row_per_thread_alpha_beta.cu, out-of-distribution naive suite).

How it is written: one thread per row (each warp load touches 32 rows), BLAS-style alpha/beta epilogue with y read
and written, a leading dimension `lda` parameter, `int` indices.

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

kernel = "sgemv_alpha_beta"
operator = "gemv"
corpus_expert = "gemv"
roofline = "memory"
inout = ("y",)
SIZES = {"full": (8192, 8192), "tiny": (70, 300), "odd": (333, 1001)}


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
    """Return A and x in multiples of 1/32 (exact sums), y, alpha = 0.5, beta = -2 and sizes."""
    m, n = _size()
    dev, gen = _gen(seed)
    a = torch.randint(-16, 17, (m, n), generator=gen, device=dev).float() / 32
    x = torch.randint(-16, 17, (n,), generator=gen, device=dev).float() / 32
    y = torch.randint(-16, 17, (m,), generator=gen, device=dev).float() / 32
    return {"M": m, "N": n, "alpha": 0.5, "A": a, "lda": n, "x": x, "beta": -2.0, "y": y}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return alpha * A x + beta * y."""
    ax = (inputs["A"].double() @ inputs["x"].double()).float()
    return {"y": inputs["alpha"] * ax + inputs["beta"] * inputs["y"]}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.addmv(inputs["y"], inputs["A"], inputs["x"], beta=inputs["beta"], alpha=inputs["alpha"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 256 threads a block."""
    return ((int(inputs["M"]) + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A read once, x read, y read and written."""
    return 4 * inputs["A"].numel() + 4 * int(inputs["N"]) + 8 * int(inputs["M"])


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per element of A."""
    return 2 * inputs["A"].numel()
