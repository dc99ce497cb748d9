"""Problem: a 3x3 convolution, stride 1, zero padding 1, NCHW float32: x N x C x H x W, w K x C x 3 x 3,
y N x K x H x W (kernel `conv3x3_naive` of naive.cu; not in the corpus).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES, as (N, C, K, H, W): `full` (the default, 16 x 64 -> 64 x 128 x 128:
64 MiB in and out, 19.3 GFLOP) or a small preset for CPU tests and tail checks. The entries are multiples of
1/32 in [-1, 1], so float32 sums are exact in any order (and unchanged by TF32) and the kernel must match the
float64 reference exactly.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F

kernel = "conv3x3_naive"
roofline = "compute"

SIZES = {"full": (16, 64, 64, 128, 128), "tiny": (2, 4, 8, 16, 16), "odd": (1, 3, 5, 13, 19)}


def _size() -> tuple[int, int, int, int, int]:
    """Return (N, C, K, H, W) for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x, w (random multiples of 1/32 in [-1, 1]), the output y and the sizes."""
    n, c, k, h, w = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.randint(-32, 33, (n, c, h, w), generator=gen, device=dev).to(torch.float32) / 32
    weight = torch.randint(-32, 33, (k, c, 3, 3), generator=gen, device=dev).to(torch.float32) / 32
    y = torch.empty(n, k, h, w, device=dev, dtype=torch.float32)
    return {"x": x, "w": weight, "y": y, "N": n, "C": c, "K": k, "H": h, "W": w}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the convolution, computed in float64 (exact for these entries)."""
    return {"y": F.conv2d(inputs["x"].double(), inputs["w"].double(), padding=1).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator (cuDNN)."""
    return F.conv2d(inputs["x"], inputs["w"], padding=1)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per output value: 16 x 16 pixels per block, one (image, filter) pair per grid z."""
    n, k, h, w = int(inputs["N"]), int(inputs["K"]), int(inputs["H"]), int(inputs["W"])
    return (math.ceil(w / 16), math.ceil(h / 16), n * k), (16, 16, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x and w read once, y written once."""
    n, c, k, h, w = (int(inputs[s]) for s in ("N", "C", "K", "H", "W"))
    return 4 * (n * c * h * w + k * c * 9 + n * k * h * w)


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: a multiply and an add per term."""
    n, c, k, h, w = (int(inputs[s]) for s in ("N", "C", "K", "H", "W"))
    return 2 * n * k * c * 9 * h * w
