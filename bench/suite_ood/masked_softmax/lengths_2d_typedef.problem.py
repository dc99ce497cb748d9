"""Problem: softmax of x / temperature over the first lengths[b] columns of every row of batch b (B, R, C), 0 after
(kernel `padded_softmax` of lengths_2d_typedef.cu, out-of-distribution naive suite).

How it is written: one thread per row on a 2-D grid (y: batch, x: row within the batch), key-padding lengths per
batch, typedef'd `scalar_t`, loops bounded by the length and a separate zero-fill loop, `int` indices hoisted into a
base offset.

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

kernel = "padded_softmax"
operator = "masked_softmax"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (16, 1024, 4096), "tiny": (2, 33, 100), "odd": (3, 65, 517)}


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
    """Return normal x (B, R, C), lengths in [1, C] per batch, the output, R, C and T = 0.5."""
    b, r, c = _size()
    dev, gen = _gen(seed)
    x = torch.randn(b, r, c, generator=gen, device=dev)
    lengths = torch.randint(1, c + 1, (b,), generator=gen, device=dev, dtype=torch.int32)
    lengths[0] = c
    return {"x": x, "len": lengths, "y": torch.empty_like(x), "R": r, "C": c, "temperature": 0.5}


def _padded(inputs: dict[str, Any]) -> torch.Tensor:
    x = inputs["x"]
    cols = torch.arange(x.shape[2], device=x.device)
    keep = cols[None, None, :] < inputs["len"].to(x.device)[:, None, None]
    return torch.softmax((x / inputs["temperature"]).masked_fill(~keep, float("-inf")), dim=-1)


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the masked softmax (lengths as a key-padding mask)."""
    return {"y": _padded(inputs)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _padded(inputs)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 128 a block along x, the batches along y."""
    return ((int(inputs["R"]) + 127) // 128, int(inputs["x"].shape[0]), 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move at most: x read once, y written once."""
    return 8 * inputs["x"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return scale, max, subtract, exp, add and divide per element (at most)."""
    return 6 * inputs["x"].numel()
