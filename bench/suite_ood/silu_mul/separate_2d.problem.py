"""Problem: h = silu(gate) * up for separate float32 gate and up matrices (rows x cols) (kernel `swiglu_2d` of
separate_2d.cu, out-of-distribution naive suite).

How it is written: two separate input matrices, a 2-D launch of 32 x 4 blocks, the sigmoid computed as its own
local, `__expf`-free `expf`, the guard as a combined condition.

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

kernel = "swiglu_2d"
operator = "silu_mul"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (6, 200), "odd": (35, 999)}


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
    """Return normal gate and up matrices, the output and the sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    gate = torch.randn(rows, cols, generator=gen, device=dev)
    up = torch.randn(rows, cols, generator=gen, device=dev)
    return {"gate": gate, "up": up, "h": torch.empty_like(gate), "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return silu(gate) * up."""
    return {"h": torch.nn.functional.silu(inputs["gate"]) * inputs["up"]}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.nn.functional.silu(inputs["gate"]) * inputs["up"]


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 32 x 4 blocks over (columns, rows)."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return ((cols + 31) // 32, (rows + 3) // 4, 1), (32, 4, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every input read once and the output written once."""
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def flops(inputs: dict[str, Any]) -> int:
    """Return about five operations per element, counting exp as one."""
    return 5 * inputs["h"].numel()
