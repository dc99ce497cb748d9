"""Problem: C = alpha A B + beta C, float32 row-major, A M x K, B K x N (C in-out) (kernel `sgemm_naive_nn` of
nn_swapped_alpha_beta.cu, out-of-distribution naive suite).

How it is written: one output per thread with the row taken from `threadIdx.x` (row and column roles swapped, so a
warp reads 32 rows of A and writes a strided column of C), 2-D launch of 32 x 32 blocks, alpha/beta epilogue, the
inner product in a `for` loop.

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

kernel = "sgemm_naive_nn"
operator = "sgemm"
corpus_expert = "sgemm"
roofline = "compute"
inout = ("C",)
SIZES = {"full": (2048, 2048, 2048), "tiny": (33, 47, 29), "odd": (65, 70, 61)}


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
    """Return A, B, C in multiples of 1/32 (exact products and sums), alpha = 1.5, beta = -0.5 and the sizes."""
    m, n, k = _size()
    dev, gen = _gen(seed)
    a = torch.randint(-16, 17, (m, k), generator=gen, device=dev).float() / 32
    b = torch.randint(-16, 17, (k, n), generator=gen, device=dev).float() / 32
    c = torch.randint(-16, 17, (m, n), generator=gen, device=dev).float() / 32
    return {"M": m, "N": n, "K": k, "alpha": 1.5, "A": a, "B": b, "beta": -0.5, "C": c}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return alpha A B + beta C."""
    ab = inputs["A"].double() @ inputs["B"].double()
    return {"C": (inputs["alpha"] * ab + inputs["beta"] * inputs["C"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.addmm(inputs["C"], inputs["A"], inputs["B"], beta=inputs["beta"], alpha=inputs["alpha"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 32 x 32 blocks, x over the rows of C and y over its columns."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return ((m + 31) // 32, (n + 31) // 32, 1), (32, 32, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and B read once, C read and written once."""
    return 4 * (inputs["A"].numel() + inputs["B"].numel() + 2 * inputs["C"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per term of every dot product."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])
