"""Problem: y = gelu(x + bias) with the exact (erf) GELU, for a rows x cols float32 matrix and a per-column bias
(kernel `bias_gelu_f32` of expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192: 256 MiB in and 256 MiB out) or a
small preset for CPU tests and tail checks (`odd`: a width not a multiple of 4, the scalar path; `edge`: a width
that leaves most of the last column block idle).
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
import torch.nn.functional as F

kernel = "bias_gelu_f32"
roofline = "memory"

SIZES = {"full": (8192, 8192), "tiny": (8, 1024), "odd": (7, 1001), "edge": (33, 1028)}


def _size() -> tuple[int, int]:
    """Return (rows, cols) for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _sm_count(t: torch.Tensor) -> int:
    """Return the multiprocessor count of the tensor's GPU (132 on an H200; also used on the CPU)."""
    return torch.cuda.get_device_properties(t.device).multi_processor_count if t.is_cuda else 132


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x (standard normal), bias (normal, sd 0.5), the output y and the sizes."""
    rows, cols = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev, dtype=torch.float32)
    bias = 0.5 * torch.randn(cols, generator=gen, device=dev, dtype=torch.float32)
    return {"x": x, "bias": bias, "y": torch.empty_like(x), "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return y = gelu(x + bias)."""
    return {"y": F.gelu(inputs["x"] + inputs["bias"])}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator: an add and a GELU, two kernels."""
    return F.gelu(inputs["x"] + inputs["bias"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 1024 columns per block in x and enough row slices in y for one full wave of 8 blocks per SM."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    blocks_x = math.ceil(cols / 1024)
    blocks_y = max(1, min(rows, _sm_count(inputs["x"]) * 8 // blocks_x))
    return (blocks_x, blocks_y, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read once, y written once, the bias read once."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return 8 * rows * cols + 4 * cols


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations, counting erf as one: add, scale, erf, add, two multiplies."""
    return 6 * int(inputs["rows"]) * int(inputs["cols"])
