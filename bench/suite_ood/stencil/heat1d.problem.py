"""Problem: one explicit step of the 1-D heat equation: u'[i] = u[i] + r (u[i-1] - 2 u[i] + u[i+1]), ends fixed (kernel
`heat_step` of heat1d.cu, out-of-distribution naive suite).

How it is written: a 1-D launch, one point per thread, three overlapping scalar loads, the ends copied under a `||`
condition, the diffusion number as a parameter.

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

kernel = "heat_step"
operator = "stencil"
corpus_expert = None
roofline = "memory"
SIZES = {"full": 1 << 26, "tiny": 3000, "odd": 10007}


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
    """Return normal u, the output, n and r = 0.25."""
    n = _size()
    dev, gen = _gen(seed)
    u = torch.randn(n, generator=gen, device=dev)
    return {"u": u, "v": torch.empty_like(u), "n": n, "r": 0.25}


def _step(u: torch.Tensor, r: float) -> torch.Tensor:
    out = u.clone()
    out[1:-1] = u[1:-1] + r * (u[:-2] - 2.0 * u[1:-1] + u[2:])
    return out


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return one heat step."""
    return {"v": _step(inputs["u"], inputs["r"])}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _step(inputs["u"], inputs["r"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per point, 256 a block."""
    return ((int(inputs["n"]) + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: u read once and v written once."""
    return 8 * int(inputs["n"])


def flops(inputs: dict[str, Any]) -> int:
    """Return five operations per point."""
    return 5 * int(inputs["n"])
