"""Problem: y = A x for a row-major rows x cols float32 matrix (kernel `matvec_block_row` of block_row_uint.cu, out-of-
distribution naive suite).

How it is written: a block per row, a typedef'd `uint` for the indices in the body, a shared-memory tree with
sequential addressing from a constant block size, thread 0 writes the row's result.

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

kernel = "matvec_block_row"
operator = "gemv"
corpus_expert = "gemv"
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (6, 700), "odd": (13, 1003)}


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
    """Return mat and vec in multiples of 1/32 (exact sums), the result and the column count."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    mat = torch.randint(-16, 17, (rows, cols), generator=gen, device=dev).float() / 32
    vec = torch.randint(-16, 17, (cols,), generator=gen, device=dev).float() / 32
    return {"mat": mat, "vec": vec, "res": torch.empty(rows, device=dev), "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return mat @ vec."""
    return {"res": (inputs["mat"].double() @ inputs["vec"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.mv(inputs["mat"], inputs["vec"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of BS (256) per row."""
    return (int(inputs["mat"].shape[0]), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the matrix read once, the vector and the result."""
    return 4 * inputs["mat"].numel() + 4 * int(inputs["cols"]) + 4 * int(inputs["mat"].shape[0])


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per matrix element."""
    return 2 * inputs["mat"].numel()
