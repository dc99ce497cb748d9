"""Problem: y = GELU(x) with the tanh approximation, n float32 values (kernel `gelu_grid_stride` of
grid_stride_typedef.cu, out-of-distribution naive suite).

How it is written: a fixed grid with a grid-stride `while` loop, typedef'd element type, `size_t` index, the
constants as macros, the cube hoisted into a local.

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

kernel = "gelu_grid_stride"
operator = "gelu_tanh"
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
    """Return normal x, the output and the count."""
    n = _size()
    dev, gen = _gen(seed)
    x = torch.randn(n, generator=gen, device=dev)
    return {"in": x, "out": torch.empty_like(x), "count": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return GELU with the tanh approximation."""
    return {"out": torch.nn.functional.gelu(inputs["in"], approximate="tanh")}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.nn.functional.gelu(inputs["in"], approximate="tanh")


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 1024 blocks of 256 threads (fewer for small counts); the loop covers the rest."""
    return (min(1024, (int(inputs["count"]) + 255) // 256), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every input read once and the output written once."""
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def flops(inputs: dict[str, Any]) -> int:
    """Return about nine operations per element, counting tanh as one."""
    return 9 * int(inputs["count"])
