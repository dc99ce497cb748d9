"""Problem: B = A^T for an M x N float32 matrix (6144 x 6144) (kernel `transpose_rect` of rect_block_strided_reads.cu,
out-of-distribution naive suite).

How it is written: non-square 2-D blocks of 64 x 4 with threadIdx.x walking the input's rows (reads strided by N,
writes coalesced), `unsigned` indices, a combined `if (i < M && j < N)` guard.

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

kernel = "transpose_rect"
operator = "transpose"
corpus_expert = "transpose"
roofline = "memory"
SIZES = {"full": (6144, 6144), "tiny": (70, 40), "odd": (129, 67)}


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
    """Return a normal M x N matrix, the output and the sizes."""
    m, n = _size()
    dev, gen = _gen(seed)
    a = torch.randn(m, n, generator=gen, device=dev)
    return {"A": a, "B": torch.empty(n, m, device=dev), "M": m, "N": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the transpose."""
    return {"B": inputs["A"].t().contiguous()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["A"].t().contiguous()


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 64 x 4 blocks, x over the rows of A and y over its columns."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return ((m + 63) // 64, (n + 3) // 4, 1), (64, 4, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: read once and written once."""
    return 8 * inputs["A"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: none."""
    return 0
