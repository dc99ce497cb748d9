"""Problem: per-row cross-entropy with int64 labels and ignore_index = -100 (loss 0 there) (kernel `xent_online` of
online_ignore_index.cu, out-of-distribution naive suite).

How it is written: one thread per row, online log-sum-exp in one pass, int64 labels compared against an ignore
index, typedef'd accumulator, a row pointer computed with `size_t`.

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

kernel = "xent_online"
operator = "cross_entropy"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (4096, 16384), "tiny": (10, 257), "odd": (41, 999)}


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
    """Return normal logits (standard deviation 3), int64 labels with about 10% ignored, the loss and sizes."""
    n, v = _size()
    dev, gen = _gen(seed)
    x = 3.0 * torch.randn(n, v, generator=gen, device=dev)
    y = torch.randint(0, v, (n,), generator=gen, device=dev, dtype=torch.int64)
    y[torch.rand(n, generator=gen, device=dev) < 0.1] = -100
    return {"x": x, "y": y, "out": torch.empty(n, device=dev), "batch": n, "classes": v}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the per-row loss, 0 where the label is -100."""
    f = torch.nn.functional.cross_entropy
    return {"out": f(inputs["x"].double(), inputs["y"], reduction="none", ignore_index=-100).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.nn.functional.cross_entropy(inputs["x"], inputs["y"], reduction="none", ignore_index=-100)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 256 threads a block."""
    return ((int(inputs["batch"]) + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the logits read once, labels and losses."""
    return 4 * inputs["x"].numel() + 12 * int(inputs["batch"])


def flops(inputs: dict[str, Any]) -> int:
    """Return compare, subtract, exp and add per logit."""
    return 4 * inputs["x"].numel()
