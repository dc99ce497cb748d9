"""Problem: C = A B in float32, A M x K and B K x N row-major (kernel `sgemm_f32` of expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against (cuBLAS, with TF32 off).

WARPWISE_PROBLEM_SCALE picks a row of SIZES, as (M, N, K): `full` (the default, 4096^3) or a small preset for
CPU tests and tail checks (`odd`: nothing a multiple of 4; `edge`: N a multiple of 4 but not of the tile, K not
a multiple of the slice).

The entries are multiples of 1/32 in [-1, 1]: every product is a multiple of 2^-10 and every partial sum stays
far below 2^14 in magnitude, so float32 sums are exact in any order and the kernel must match the float64
reference exactly, whatever its summation order (random normal entries with K = 4096 would leave errors of
about 1e-4 near zero, above the gate's float32 tolerance).
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "sgemm_f32"
roofline = "compute"

SIZES = {"full": (4096, 4096, 4096), "tiny": (128, 128, 64), "odd": (67, 45, 37), "edge": (200, 136, 52)}
SMEM_BYTES = 3 * 16 * (128 + 4 + 128) * 4


def _size() -> tuple[int, int, int]:
    """Return (M, N, K) for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _grid32(shape: tuple[int, int], gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    """Return a float32 matrix of random multiples of 1/32 in [-1, 1]."""
    return torch.randint(-32, 33, shape, generator=gen, device=dev).to(torch.float32) / 32


def make_inputs(seed: int) -> dict[str, Any]:
    """Return A, B, the output C and the sizes."""
    m, n, k = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    a = _grid32((m, k), gen, dev)
    b = _grid32((k, n), gen, dev)
    return {"A": a, "B": b, "C": torch.empty(m, n, device=dev, dtype=torch.float32), "M": m, "N": n, "K": k}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return C = A B, computed in float64 (exact for these entries)."""
    return {"C": (inputs["A"].double() @ inputs["B"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator (cuBLAS SGEMM when TF32 is off)."""
    return torch.mm(inputs["A"], inputs["B"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Return one block of 256 threads per 128 x 128 tile of C, with 49,920 bytes of dynamic shared memory."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return (math.ceil(n / 128), math.ceil(m / 128), 1), (256, 1, 1), SMEM_BYTES


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and B read once, C written once."""
    m, n, k = int(inputs["M"]), int(inputs["N"]), int(inputs["K"])
    return 4 * (m * k + k * n + m * n)


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: a multiply and an add per term."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])
