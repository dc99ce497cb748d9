"""Problem: out = in^T for a height x width float32 matrix (8192 x 4096) (kernel `transpose_loop_rows` of
loop_rows_no_tile.cu, out-of-distribution naive suite).

How it is written: blocks of 32 x 8 threads covering 32 x 32 tiles, each thread looping over the tile's rows (`for
(j = 0; j < TILE; j += ROWS)`), no shared memory: reads coalesced, writes strided by the height; non-square matrix.

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

kernel = "transpose_loop_rows"
operator = "transpose"
corpus_expert = "transpose"
roofline = "memory"
SIZES = {"full": (8192, 4096), "tiny": (64, 96), "odd": (77, 45)}


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
    """Return a normal height x width matrix, the output and the sizes."""
    h, w = _size()
    dev, gen = _gen(seed)
    x = torch.randn(h, w, generator=gen, device=dev)
    return {"odata": torch.empty(w, h, device=dev), "idata": x, "width": w, "height": h}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the transpose."""
    return {"odata": inputs["idata"].t().contiguous()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["idata"].t().contiguous()


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one 32 x 8 block per 32 x 32 tile."""
    w, h = int(inputs["width"]), int(inputs["height"])
    return ((w + 31) // 32, (h + 31) // 32, 1), (32, 8, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: read once and written once."""
    return 8 * inputs["idata"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: none."""
    return 0
