"""Problem: out = in^T for a rows x cols float32 matrix (4096 x 8192) (kernel `transpose_1d` of one_d_divmod.cu, out-
of-distribution naive suite).

How it is written: a 1-D launch, one element per thread, the row and column recovered by division and remainder of a
`size_t` index, guard on the element count.

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

kernel = "transpose_1d"
operator = "transpose"
corpus_expert = "transpose"
roofline = "memory"
SIZES = {"full": (4096, 8192), "tiny": (48, 80), "odd": (41, 77)}


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
    """Return a normal rows x cols matrix, the output and the sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev)
    return {"src": x, "dst": torch.empty(cols, rows, device=dev), "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the transpose."""
    return {"dst": inputs["src"].t().contiguous()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["src"].t().contiguous()


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per element, 512 a block."""
    n = int(inputs["rows"]) * int(inputs["cols"])
    return ((n + 511) // 512, 1, 1), (512, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: read once and written once."""
    return 8 * inputs["src"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: none."""
    return 0
