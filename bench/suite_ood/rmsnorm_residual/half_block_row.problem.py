"""Problem: h = x + residual (float16, written out), y = h * rsqrt(mean(h^2) + eps) * weight in float16 (kernel
`rmsnorm_residual_f16` of half_block_row.cu, out-of-distribution naive suite).

How it is written: a block per row, float16 storage with float arithmetic (`__half2float`), a separate output for
the sum, shared-memory tree with sequential addressing from `blockDim.x / 2`, eps hard-coded as a macro.

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

kernel = "rmsnorm_residual_f16"
operator = "rmsnorm_residual"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (16384, 8192), "tiny": (3, 520), "odd": (11, 1001)}


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
    """Return float16 normal x and residual, weight near 1, the two outputs and the row length."""
    rows, n = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, n, generator=gen, device=dev).half()
    res = torch.randn(rows, n, generator=gen, device=dev).half()
    w = (1.0 + 0.1 * torch.randn(n, generator=gen, device=dev)).half()
    return {"x": x, "residual": res, "weight": w, "h_out": torch.empty_like(x), "y": torch.empty_like(x), "n": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return h rounded to float16 and y from h in float32 arithmetic, rounded to float16."""
    h = (inputs["x"].float() + inputs["residual"].float()).half()
    hf = h.double()
    inv = torch.rsqrt(hf.pow(2).mean(dim=1, keepdim=True) + 1e-6)
    y = (hf * inv * inputs["weight"].double()).half()
    return {"h_out": h, "y": y}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator (add, then rms_norm in float16)."""
    h = inputs["x"] + inputs["residual"]
    return torch.nn.functional.rms_norm(h, (h.shape[1],), inputs["weight"], 1e-6)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Return one block of 512 per row and 512 floats of dynamic shared memory."""
    return (int(inputs["x"].shape[0]), 1, 1), (512, 1, 1), 512 * 4


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x and residual read, h and y written (2 bytes each)."""
    return 8 * inputs["x"].numel() + 2 * int(inputs["n"])


def flops(inputs: dict[str, Any]) -> int:
    """Return add, square, accumulate and two multiplies per element."""
    return 5 * inputs["x"].numel()
