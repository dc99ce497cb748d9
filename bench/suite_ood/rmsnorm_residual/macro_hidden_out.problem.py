"""Problem: h = x + r written to a separate output, y = h / sqrt(mean(h^2) + eps) * (1 + weight) (Gemma-style offset
weight), float32, rows of 4096 (kernel `fused_add_rms_norm` of macro_hidden_out.cu, out-of-distribution naive
suite).

How it is written: one thread per row with the row length a macro, row pointers hoisted, three passes (add and
store, sum of squares re-read from the output, normalise), `1.0f / sqrtf`, a `while` loop for the token index guard.

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

kernel = "fused_add_rms_norm"
operator = "rmsnorm_residual"
corpus_expert = None
roofline = "memory"
SIZES = {"full": 16384, "tiny": 5, "odd": 131}


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
    """Return normal x and r (tokens x 4096), a small weight offset, the two outputs, tokens and eps = 1e-6."""
    tokens = _size()
    dev, gen = _gen(seed)
    x = torch.randn(tokens, 4096, generator=gen, device=dev)
    r = torch.randn(tokens, 4096, generator=gen, device=dev)
    w = 0.1 * torch.randn(4096, generator=gen, device=dev)
    return {
        "x": x,
        "r": r,
        "weight": w,
        "h": torch.empty_like(x),
        "y": torch.empty_like(x),
        "num_tokens": tokens,
        "eps": 1e-6,
    }


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return h = x + r and its RMS-normalised rows scaled by (1 + weight)."""
    h = inputs["x"] + inputs["r"]
    inv = torch.rsqrt(h.double().pow(2).mean(dim=1, keepdim=True) + inputs["eps"]).float()
    return {"h": h, "y": h * inv * (1.0 + inputs["weight"])}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    h = inputs["x"] + inputs["r"]
    return torch.nn.functional.rms_norm(h, (4096,), 1.0 + inputs["weight"], inputs["eps"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per token, 64 threads a block."""
    return ((int(inputs["num_tokens"]) + 63) // 64, 1, 1), (64, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x and r read, h and y written."""
    return 16 * inputs["x"].numel() + 4 * 4096


def flops(inputs: dict[str, Any]) -> int:
    """Return add, square, accumulate and three multiplies per element."""
    return 6 * inputs["x"].numel()
