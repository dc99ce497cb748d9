"""Problem: y[b] = W x[b] + bias for a batch of 16 vectors and one row-major out x in float32 weight (a decode-step
linear layer) (kernel `linear_small_batch` of shared_weight_2d.cu, out-of-distribution naive suite).

How it is written: one thread per (output, batch) on a 2-D grid (y: batch), every thread walking its weight row, so
the weight is re-read once per batch element; bias in the epilogue.

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

kernel = "linear_small_batch"
operator = "batched_gemv_bias"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (16, 4096, 4096), "tiny": (3, 70, 300), "odd": (5, 131, 1001)}


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
    """Return x (batch x in), W (out x in) and bias in multiples of 1/32 (exact sums), y and sizes."""
    b, out_f, in_f = _size()
    dev, gen = _gen(seed)
    x = torch.randint(-16, 17, (b, in_f), generator=gen, device=dev).float() / 32
    w = torch.randint(-16, 17, (out_f, in_f), generator=gen, device=dev).float() / 32
    bias = torch.randint(-16, 17, (out_f,), generator=gen, device=dev).float() / 32
    return {
        "x": x,
        "W": w,
        "bias": bias,
        "y": torch.empty(b, out_f, device=dev),
        "in_features": in_f,
        "out_features": out_f,
    }


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return x W^T + bias."""
    y = inputs["x"].double() @ inputs["W"].double().t() + inputs["bias"].double()
    return {"y": y.float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.nn.functional.linear(inputs["x"], inputs["W"], inputs["bias"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per output feature, 128 a block, the batch along y."""
    return ((int(inputs["out_features"]) + 127) // 128, int(inputs["x"].shape[0]), 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: W read once, x, bias and y."""
    return 4 * (inputs["W"].numel() + inputs["x"].numel() + inputs["bias"].numel() + inputs["y"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per weight and batch element."""
    return 2 * inputs["W"].numel() * int(inputs["x"].shape[0])
