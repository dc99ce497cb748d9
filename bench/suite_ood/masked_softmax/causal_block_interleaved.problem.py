"""Problem: causal softmax of attention scores (batch*heads, L, L) / temperature: column j > row i is masked (kernel
`causal_softmax` of causal_block_interleaved.cu, out-of-distribution naive suite).

How it is written: a block per query row on a 2-D grid (x: row, y: batch-head), the mask computed from indices,
shared-memory trees in the interleaved form `tid % (2*s)` up to `blockDim.x`, `for` loops striding by `blockDim.x`.

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

kernel = "causal_softmax"
operator = "masked_softmax"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (16, 2048), "tiny": (2, 40), "odd": (3, 333)}


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
    """Return normal scores of shape (batch*heads, L, L), the output, L and T = 1.3."""
    bh, seq = _size()
    dev, gen = _gen(seed)
    s = torch.randn(bh, seq, seq, generator=gen, device=dev)
    return {"S": s, "P": torch.empty_like(s), "L": seq, "temperature": 1.3}


def _causal(inputs: dict[str, Any]) -> torch.Tensor:
    seq = int(inputs["L"])
    keep = torch.ones(seq, seq, dtype=torch.bool, device=inputs["S"].device).tril()
    s = (inputs["S"] / inputs["temperature"]).masked_fill(~keep, float("-inf"))
    return torch.softmax(s, dim=-1)


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return softmax(S / T) with the strict upper triangle of every L x L matrix masked."""
    return {"P": _causal(inputs)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _causal(inputs)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of 256 per query row, the batch-heads along y."""
    return (int(inputs["L"]), int(inputs["S"].shape[0]), 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the kept half of the scores read, every probability written."""
    return 4 * inputs["S"].numel() // 2 + 4 * inputs["S"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return scale, max, subtract, exp, add and divide per kept element."""
    return 6 * inputs["S"].numel() // 2
