"""Problem: cross-entropy summed over the batch (reduction='sum') of logits (N, V) against int32 labels (kernel
`cross_entropy_sum` of block_row_sum_atomic.cu, out-of-distribution naive suite).

How it is written: a block per row, shared-memory trees (sequential addressing from a constant), thread 0 adds the
row's loss to one total with `atomicAdd` (an in-out scalar), `unsigned` thread index.

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

kernel = "cross_entropy_sum"
operator = "cross_entropy"
corpus_expert = None
roofline = "memory"
inout = ("total",)
SIZES = {"full": (4096, 16384), "tiny": (6, 333), "odd": (19, 1003)}


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
    """Return normal logits, labels in [0, vocab), total = 0 and the vocabulary size."""
    n, v = _size()
    dev, gen = _gen(seed)
    logits = torch.randn(n, v, generator=gen, device=dev)
    target = torch.randint(0, v, (n,), generator=gen, device=dev, dtype=torch.int32)
    return {"logits": logits, "target": target, "total": torch.zeros(1, device=dev), "vocab": v}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the summed loss (computed in float64)."""
    f = torch.nn.functional.cross_entropy
    loss = f(inputs["logits"].double(), inputs["target"].long(), reduction="sum")
    return {"total": loss.reshape(1).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.nn.functional.cross_entropy(inputs["logits"], inputs["target"].long(), reduction="sum")


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of TPB (256) per row."""
    return (int(inputs["logits"].shape[0]), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the logits read once and the labels."""
    return 4 * inputs["logits"].numel() + 4 * int(inputs["logits"].shape[0])


def flops(inputs: dict[str, Any]) -> int:
    """Return max, subtract, exp and add per logit."""
    return 4 * inputs["logits"].numel()
