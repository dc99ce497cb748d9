"""Problem: C = A B^T in bfloat16 with float accumulation and a float output, A M x K, B N x K (kernel `bgemm_nt`
of bgemm_nt_cast.cu, written for the tensor-core rows of issue 20).

A problem file in the gate's format (bench/suite/README.md): `make_inputs(seed)` returns every kernel parameter
by name, `reference(inputs)` the expected outputs, `launch(inputs)` the (grid, block). The entries are multiples
of 1/8 in [-1, 1] (exact in bfloat16), so every product and every float sum up to K = 2^16 is exact in any order
and the kernel must match the float64 reference to float32 rounding. WARPWISE_PROBLEM_SCALE picks a row of SIZES.
"""

from __future__ import annotations

import os
from typing import Any

import torch

kernel = "bgemm_nt"
operator = "bgemm"
roofline = "compute"
SIZES = {"full": (4096, 4096, 4096), "tiny": (33, 40, 29), "odd": (65, 70, 61)}


def _size() -> Any:
    """Return the sizes of the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def make_inputs(seed: int) -> dict[str, Any]:
    """Return bfloat16 A (M x K), B (N x K) in multiples of 1/8 in [-1, 1], an empty float C and the sizes."""
    m, n, k = _size()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    a = (torch.randint(-8, 9, (m, k), generator=gen, device=dev).float() / 8).bfloat16()
    b = (torch.randint(-8, 9, (n, k), generator=gen, device=dev).float() / 8).bfloat16()
    return {"A": a, "B": b, "C": torch.empty(m, n, device=dev), "M": m, "N": n, "K": k}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return A B^T in float64, rounded once to float32."""
    return {"C": (inputs["A"].double() @ inputs["B"].double().t()).float()}


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 32 x 8 blocks, x over the columns of C and y over its rows."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return ((n + 31) // 32, (m + 7) // 8, 1), (32, 8, 1)


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per term of every dot product."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])
