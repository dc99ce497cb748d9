"""Problem: per-row cross-entropy loss of logits (N, V) against int32 labels (kernel `xent_rows` of row_per_thread.cu,
out-of-distribution naive suite).

How it is written: one thread per row, max pass then log-sum-exp pass, the label's logit read once, `int` indices,
loss per row.

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

kernel = "xent_rows"
operator = "cross_entropy"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (4096, 16384), "tiny": (9, 300), "odd": (37, 1001)}


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
    """Return normal logits (standard deviation 2), labels in [0, V), the loss and sizes."""
    n, v = _size()
    dev, gen = _gen(seed)
    logits = 2.0 * torch.randn(n, v, generator=gen, device=dev)
    labels = torch.randint(0, v, (n,), generator=gen, device=dev, dtype=torch.int32)
    return {"logits": logits, "labels": labels, "loss": torch.empty(n, device=dev), "N": n, "V": v}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the per-row loss."""
    f = torch.nn.functional.cross_entropy
    return {"loss": f(inputs["logits"].double(), inputs["labels"].long(), reduction="none").float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.nn.functional.cross_entropy(inputs["logits"], inputs["labels"].long(), reduction="none")


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 128 threads a block."""
    return ((int(inputs["N"]) + 127) // 128, 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the logits read once, labels and losses."""
    return 4 * inputs["logits"].numel() + 8 * int(inputs["N"])


def flops(inputs: dict[str, Any]) -> int:
    """Return max, subtract, exp and add per logit."""
    return 4 * inputs["logits"].numel()
