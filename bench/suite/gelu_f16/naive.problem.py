"""Problem: the exact (erf) GELU of n float16 values, computed in float32 (kernel `gelu_f16_naive` of naive.cu;
the half-precision elementwise case).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 2^28 values: 512 MiB in and 512 MiB out) or a
small preset for CPU tests and tail checks.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F

kernel = "gelu_f16_naive"
roofline = "memory"

SIZES = {"full": 1 << 28, "tiny": 4096, "odd": 4099}


def _size() -> int:
    """Return n for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x (normal, sd 2, rounded to float16), the output y and n."""
    n = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = (2.0 * torch.randn(n, generator=gen, device=dev, dtype=torch.float32)).to(torch.float16)
    return {"x": x, "y": torch.empty_like(x), "n": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return gelu(x) computed in float32 and rounded to float16."""
    return {"y": F.gelu(inputs["x"].float()).to(torch.float16)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return F.gelu(inputs["x"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per value, in blocks of 256."""
    return (math.ceil(int(inputs["n"]) / 256), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read once, y written once."""
    return 4 * int(inputs["n"])


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations, counting erf as one: scale, erf, add, two multiplies."""
    return 5 * int(inputs["n"])
