"""Problem: C = A^T B^T in float32, A stored K x M, B stored N x K (kernel `sgemm_kt_while` of sgemm_kt_while.cu,
written for the TF32 rows of issue 20).

A problem file in the gate's format (bench/suite/README.md): `make_inputs(seed)` returns every kernel parameter
by name, `reference(inputs)` the expected outputs, `launch(inputs)` the (grid, block). Entries are uniform in
[-1, 1]; the reference is the float64 product rounded once to float32. `tolerance` admits the TF32 option
(warpwise.skills.rewrites.contraction_mma.TF32_TOLERANCE). WARPWISE_PROBLEM_SCALE picks a row of SIZES.
"""

from __future__ import annotations

import os
from typing import Any

import torch

kernel = "sgemm_kt_while"
operator = "sgemm"
roofline = "compute"
tolerance = (1e-2, 5e-2)
SIZES = {"full": (4096, 4096, 4096), "tiny": (33, 40, 29), "odd": (65, 70, 61)}


def _size() -> Any:
    """Return the sizes of the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def make_inputs(seed: int) -> dict[str, Any]:
    """Return float A (K x M), B (N x K) uniform in [-1, 1], an empty float C and the sizes."""
    m, n, k = _size()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    a = torch.rand((k, m), generator=gen, device=dev) * 2 - 1
    b = torch.rand((n, k), generator=gen, device=dev) * 2 - 1
    return {"A": a, "B": b, "C": torch.empty(m, n, device=dev), "M": m, "N": n, "K": k}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return A^T B^T in float64, rounded once to float32."""
    return {"C": (inputs["A"].double().t() @ inputs["B"].double().t()).float()}


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 16 x 16 blocks, x over the columns of C and y over its rows."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return ((n + 15) // 16, (m + 15) // 16, 1), (16, 16, 1)


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per term of every dot product."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])
