"""Problem: one Jacobi step of the 2-D Laplace equation: interior points become the mean of their four neighbours, the
boundary is copied (kernel `jacobi_step` of jacobi5_2d.cu, out-of-distribution naive suite).

How it is written: one point per thread on 16 x 16 blocks, four scalar neighbour loads from global memory, the
boundary handled by a branch, `int` indices with the row stride a parameter.

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

kernel = "jacobi_step"
operator = "stencil"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (20, 37), "odd": (67, 129)}


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
    """Return a normal ny x nx grid, the output and the sizes."""
    ny, nx = _size()
    dev, gen = _gen(seed)
    u = torch.randn(ny, nx, generator=gen, device=dev)
    return {"u": u, "u_new": torch.empty_like(u), "nx": nx, "ny": ny}


def _step(u: torch.Tensor) -> torch.Tensor:
    out = u.clone()
    out[1:-1, 1:-1] = 0.25 * (u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1])
    return out


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return one Jacobi step."""
    return {"u_new": _step(inputs["u"])}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _step(inputs["u"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 16 x 16 blocks over the grid."""
    nx, ny = int(inputs["nx"]), int(inputs["ny"])
    return ((nx + 15) // 16, (ny + 15) // 16, 1), (16, 16, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the grid read once and written once."""
    return 8 * inputs["u"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return three adds and a multiply per point."""
    return 4 * inputs["u"].numel()
