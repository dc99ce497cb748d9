"""Problem: C = alpha A^T B + beta C in float16 (float32 accumulation and epilogue), A K x M, B K x N, C in-out (kernel
`hgemm_tn_ab` of tn_alpha_beta.cu, out-of-distribution naive suite).

How it is written: the TN layout, BLAS-style alpha/beta epilogue reading C, a 2-D launch with rows on x (row and
column roles swapped), typedef'd `half_t`, guard nested in two `if`s.

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

kernel = "hgemm_tn_ab"
operator = "hgemm"
corpus_expert = None
roofline = "compute"
inout = ("C",)
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
    """Return float16 A, B, C in multiples of 1/8 in [-1, 1], alpha = 0.5, beta = 2 and the sizes."""
    m, n, k = _size()
    dev, gen = _gen(seed)
    a = (torch.randint(-8, 9, (k, m), generator=gen, device=dev).float() / 8).half()
    b = (torch.randint(-8, 9, (k, n), generator=gen, device=dev).float() / 8).half()
    c = (torch.randint(-8, 9, (m, n), generator=gen, device=dev).float() / 8).half()
    return {"M": m, "N": n, "K": k, "alpha": 0.5, "A": a, "B": b, "beta": 2.0, "C": c}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return alpha A^T B + beta C, exact in float64 (powers-of-two scales), rounded once to float16."""
    ab = inputs["A"].double().t() @ inputs["B"].double()
    return {"C": (inputs["alpha"] * ab + inputs["beta"] * inputs["C"].double()).half()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.addmm(inputs["C"], inputs["A"].t(), inputs["B"], beta=inputs["beta"], alpha=inputs["alpha"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 32 x 8 blocks, x over the rows of C and y over its columns."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return ((m + 31) // 32, (n + 7) // 8, 1), (32, 8, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and B read once, C read and written once."""
    return 2 * (inputs["A"].numel() + inputs["B"].numel() + 2 * inputs["C"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per term of every dot product."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])
