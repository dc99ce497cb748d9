"""Problem: residual += x, then y = residual * rsqrt(mean(residual^2) + eps) * weight, per row (float32) (kernel
`add_rmsnorm` of inplace_row_per_thread.cu, out-of-distribution naive suite).

How it is written: one thread per row, the residual updated in place (an in-out buffer), two passes over the row,
`rsqrtf`, sizes as parameters.

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

kernel = "add_rmsnorm"
operator = "rmsnorm_residual"
corpus_expert = None
roofline = "memory"
inout = ("residual",)
SIZES = {"full": (8192, 8192), "tiny": (5, 300), "odd": (33, 1003)}


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
    """Return normal x and residual, weight near 1, the output, sizes and eps = 1e-6."""
    tokens, hidden = _size()
    dev, gen = _gen(seed)
    x = torch.randn(tokens, hidden, generator=gen, device=dev)
    res = torch.randn(tokens, hidden, generator=gen, device=dev)
    w = 1.0 + 0.1 * torch.randn(hidden, generator=gen, device=dev)
    return {
        "x": x,
        "residual": res,
        "weight": w,
        "y": torch.empty_like(x),
        "tokens": tokens,
        "hidden": hidden,
        "eps": 1e-6,
    }


def _fused(inputs: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    h = inputs["residual"] + inputs["x"]
    rms = torch.rsqrt(h.double().pow(2).mean(dim=1, keepdim=True) + inputs["eps"]).float()
    return h, h * rms * inputs["weight"]


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the updated residual and its RMS-normalised, weighted rows."""
    h, y = _fused(inputs)
    return {"residual": h, "y": y}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator (add, then rms_norm)."""
    h = inputs["residual"] + inputs["x"]
    return torch.nn.functional.rms_norm(h, (h.shape[1],), inputs["weight"], inputs["eps"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 128 threads a block."""
    return ((int(inputs["tokens"]) + 127) // 128, 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x and residual read, residual and y written."""
    return 16 * inputs["x"].numel() + 4 * int(inputs["hidden"])


def flops(inputs: dict[str, Any]) -> int:
    """Return add, square, accumulate and two multiplies per element."""
    return 5 * inputs["x"].numel()
