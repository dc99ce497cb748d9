"""Problem: a 3x3 Gaussian blur ([1 2 1] x [1 2 1] / 16) of a height x width float32 image with clamped edges
(kernel `blur3x3_f32` of expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES, as (height, width): `full` (the default, 8192 x 8192: 256 MiB in
and 256 MiB out) or a small preset for CPU tests and tail checks (`odd`: a width not a multiple of 4, the scalar
path; `edge`: a strip of lanes past the right edge, and a height that is not a multiple of the row strip).
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F

kernel = "blur3x3_f32"
roofline = "memory"

SIZES = {"full": (8192, 8192), "tiny": (40, 256), "odd": (37, 203), "edge": (70, 516)}
WEIGHTS = ((1.0, 2.0, 1.0), (2.0, 4.0, 2.0), (1.0, 2.0, 1.0))


def _size() -> tuple[int, int]:
    """Return (height, width) for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return an image of uniform values in [0, 1), the output and the sizes."""
    height, width = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    img = torch.rand(height, width, generator=gen, device=dev, dtype=torch.float32)
    return {"in": img, "out": torch.empty_like(img), "height": height, "width": width}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the blurred image, as nine shifted and weighted copies of the edge-padded image."""
    img = inputs["in"]
    height, width = img.shape
    padded = F.pad(img[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]
    out = torch.zeros_like(img)
    for dy in range(3):
        for dx in range(3):
            out += (WEIGHTS[dy][dx] / 16.0) * padded[dy : dy + height, dx : dx + width]
    return {"out": out}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator: an edge pad and a 3x3 convolution."""
    img = inputs["in"]
    weight = torch.tensor(WEIGHTS, device=img.device, dtype=img.dtype).reshape(1, 1, 3, 3) / 16.0
    return F.conv2d(F.pad(img[None, None], (1, 1, 1, 1), mode="replicate"), weight)[0, 0]


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return blocks of 4 warps; a warp covers 128 columns and 32 rows."""
    height, width = int(inputs["height"]), int(inputs["width"])
    return (math.ceil(width / 128), math.ceil(height / 128), 1), (32, 4, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the image read once, the output written once."""
    return 8 * int(inputs["height"]) * int(inputs["width"])


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations of the separable form: 4 adds and 3 multiplies per pixel."""
    return 7 * int(inputs["height"]) * int(inputs["width"])
