"""Problem: the 7-point Laplacian of a (nz, ny, nx) float32 volume at interior points (0 on the boundary) (kernel
`laplacian3d` of laplace7_3d_zloop.cu, out-of-distribution naive suite).

How it is written: a 2-D launch over (x, y) with every thread marching along z in a `while` loop, seven scalar loads
per point, a macro for the flattened index, the boundary written as zeros.

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

kernel = "laplacian3d"
operator = "stencil"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (256, 256, 1024), "tiny": (5, 9, 40), "odd": (7, 13, 67)}


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
    """Return a normal volume, the output and the sizes."""
    nz, ny, nx = _size()
    dev, gen = _gen(seed)
    f = torch.randn(nz, ny, nx, generator=gen, device=dev)
    return {"f": f, "lap": torch.empty_like(f), "nx": nx, "ny": ny, "nz": nz}


def _lap(f: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(f)
    c = f[1:-1, 1:-1, 1:-1]
    out[1:-1, 1:-1, 1:-1] = (
        f[1:-1, 1:-1, :-2]
        + f[1:-1, 1:-1, 2:]
        + f[1:-1, :-2, 1:-1]
        + f[1:-1, 2:, 1:-1]
        + f[:-2, 1:-1, 1:-1]
        + f[2:, 1:-1, 1:-1]
        - 6.0 * c
    )
    return out


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the 7-point Laplacian (computed in float64)."""
    return {"lap": _lap(inputs["f"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _lap(inputs["f"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 32 x 8 blocks over (x, y)."""
    nx, ny = int(inputs["nx"]), int(inputs["ny"])
    return ((nx + 31) // 32, (ny + 7) // 8, 1), (32, 8, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the volume read once and written once."""
    return 8 * inputs["f"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return six adds and a multiply per point."""
    return 7 * inputs["f"].numel()
