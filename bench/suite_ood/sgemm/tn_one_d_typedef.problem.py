"""Problem: C = A^T B, float32 row-major, A K x M, B K x N (a weight-gradient shape) (kernel `gemm_tn` of
tn_one_d_typedef.cu, out-of-distribution naive suite).

How it is written: the TN layout (A stored transposed), a 1-D launch with the row and column of C from `/` and `%`,
typedef'd element type, the accumulator in a `while` loop.

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

kernel = "gemm_tn"
operator = "sgemm"
corpus_expert = "sgemm"
roofline = "compute"
SIZES = {"full": (2048, 2048, 2048), "tiny": (30, 33, 41), "odd": (61, 67, 70)}


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
    """Return A (K x M) and B (K x N) in multiples of 1/32 (exact products and sums), C and the sizes."""
    m, n, k = _size()
    dev, gen = _gen(seed)
    a = torch.randint(-16, 17, (k, m), generator=gen, device=dev).float() / 32
    b = torch.randint(-16, 17, (k, n), generator=gen, device=dev).float() / 32
    return {"A": a, "B": b, "C": torch.empty(m, n, device=dev), "M": m, "N": n, "K": k}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return A^T B."""
    return {"C": (inputs["A"].double().t() @ inputs["B"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["A"].t() @ inputs["B"]


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per element of C, 256 a block."""
    n = int(inputs["M"]) * int(inputs["N"])
    return ((n + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and B read once, C written once."""
    return 4 * (inputs["A"].numel() + inputs["B"].numel() + inputs["C"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per term of every dot product."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])
