"""Problem: layer normalization forward over each row of a rows x cols float32 matrix, with per-column gamma and
beta (kernel `layernorm_fwd` of expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `bytes_moved`, `flops`,
`roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes the operator must move,
its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 8192 x 8192: 256 MiB in and 256 MiB out) or a
small preset for CPU tests and tail checks (`odd`: rows not a multiple of 4, the scalar path; `wide`: rows
longer than the kernel's register cache).
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.nn.functional as F

kernel = "layernorm_fwd"
roofline = "memory"

SIZES = {"full": (8192, 8192), "tiny": (4, 1000), "odd": (5, 1003), "wide": (3, 8192 + 4 * 300)}
EPS = 1e-5


def _size() -> tuple[int, int]:
    """Return (rows, cols) for the preset named by WARPWISE_PROBLEM_SCALE."""
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    """Return the GPU when there is one (the gate's worker), else the CPU (tests)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x (normal, mean 0.5, sd 2), gamma (about 1), beta (about 0), the output y, sizes and eps."""
    rows, cols = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = 0.5 + 2.0 * torch.randn(rows, cols, generator=gen, device=dev, dtype=torch.float32)
    gamma = 1.0 + 0.1 * torch.randn(cols, generator=gen, device=dev, dtype=torch.float32)
    beta = 0.1 * torch.randn(cols, generator=gen, device=dev, dtype=torch.float32)
    return {"x": x, "gamma": gamma, "beta": beta, "y": torch.empty_like(x), "rows": rows, "cols": cols, "eps": EPS}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return y = layer_norm(x) * gamma + beta along each row."""
    x = inputs["x"]
    return {"y": F.layer_norm(x, (x.shape[1],), inputs["gamma"], inputs["beta"], float(inputs["eps"]))}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    x = inputs["x"]
    return F.layer_norm(x, (x.shape[1],), inputs["gamma"], inputs["beta"], float(inputs["eps"]))


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of 256 threads per row."""
    return (int(inputs["rows"]), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read once, y written once, gamma and beta read once."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return 8 * rows * cols + 8 * cols


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: sum, squared deviations, normalize, scale and shift."""
    return 8 * int(inputs["rows"]) * int(inputs["cols"])
