"""Problem: the cross-entropy loss of each row of logits (rows x classes, float32) against an int64 target class
(kernel `cross_entropy_naive` of naive.cu; not in the corpus).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 32768: 1 GiB of logits) or a small
preset for CPU tests and tail checks.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F

kernel = "cross_entropy_naive"
roofline = "memory"

SIZES = {"full": (8192, 32768), "tiny": (64, 1000), "odd": (37, 1003)}


def _size() -> tuple[int, int]:
    """Return (rows, classes) for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return logits (normal, sd 2), random targets, the per-row loss and the sizes."""
    rows, classes = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    logits = 2.0 * torch.randn(rows, classes, generator=gen, device=dev, dtype=torch.float32)
    targets = torch.randint(0, classes, (rows,), generator=gen, device=dev, dtype=torch.int64)
    loss = torch.empty(rows, device=dev, dtype=torch.float32)
    return {"logits": logits, "targets": targets, "loss": loss, "rows": rows, "classes": classes}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the loss of each row."""
    return {"loss": F.cross_entropy(inputs["logits"], inputs["targets"], reduction="none")}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return F.cross_entropy(inputs["logits"], inputs["targets"], reduction="none")


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, in blocks of 128."""
    return (math.ceil(int(inputs["rows"]) / 128), 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the logits and targets read once, the loss written once."""
    rows, classes = int(inputs["rows"]), int(inputs["classes"])
    return 4 * rows * classes + 8 * rows + 4 * rows


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations, counting an exponential as one: max, subtract, exp, add."""
    return 4 * int(inputs["rows"]) * int(inputs["classes"])
