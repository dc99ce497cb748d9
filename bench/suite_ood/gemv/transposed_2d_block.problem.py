"""Problem: y = A^T x for a row-major K x M float32 matrix (the transposed GEMV of a backward pass) (kernel `gemv_t` of
transposed_2d_block.cu, out-of-distribution naive suite).

How it is written: a thread per output column walking down the rows (coalesced across the warp, one load in flight
per thread), launched as 2-D blocks of 32 x 4 with the flattened thread index, the guard written as `if (col >= M)
return;`.

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

kernel = "gemv_t"
operator = "gemv"
corpus_expert = "gemv"
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
    """Return A (K x M) and x in multiples of 1/32 (exact sums), the output and sizes."""
    k, m = _size()
    dev, gen = _gen(seed)
    a = torch.randint(-16, 17, (k, m), generator=gen, device=dev).float() / 32
    x = torch.randint(-16, 17, (k,), generator=gen, device=dev).float() / 32
    return {"A": a, "x": x, "y": torch.empty(m, device=dev), "K": k, "M": m}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return A^T x."""
    return {"y": (inputs["A"].double().t() @ inputs["x"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.mv(inputs["A"].t(), inputs["x"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return blocks of 32 x 4 threads, one per output column."""
    return ((int(inputs["M"]) + 127) // 128, 1, 1), (32, 4, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A read once, x and y."""
    return 4 * inputs["A"].numel() + 4 * (int(inputs["K"]) + int(inputs["M"]))


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per element of A."""
    return 2 * inputs["A"].numel()
