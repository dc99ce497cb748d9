"""Problem: the sum of n float32 values (kernel `sum_f32` of expert.cu).

This is a warpwise.verify problem file. `make_inputs(seed)` returns every kernel parameter by name (a tensor
for each pointer, a number for each scalar); `reference(inputs)` returns the expected outputs keyed by
parameter name; `launch(inputs)` returns (grid, block[, dynamic shared memory bytes]). `inout` names the
outputs whose starting values come from make_inputs (here the kernel adds into out[0], which starts at 0).
`bytes_moved`, `flops`, `roofline` and `eager` are read by bench/gpu/corpus_check.py only: the fewest bytes
the operator must move, its arithmetic, which ceiling applies, and the torch eager code it is timed against.

WARPWISE_PROBLEM_SCALE picks a row of SIZES: `full` (the default, 1 GiB: about 20 times the H200's L2) or a
small preset for CPU tests and tail checks (`odd`: n % 4 != 0 and a partial last pass).

The values are uniform in [0, 1): a sum of signed values can land near zero, where float32 rounding in any
order would exceed a relative tolerance; the reference sums in float64.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

kernel = "sum_f32"
inout = ("out",)
roofline = "memory"

SIZES = {"full": 1 << 28, "tiny": 4096, "odd": 3 * 4096 + 7}


def _size() -> int:
    """Return n for the preset named by WARPWISE_PROBLEM_SCALE."""
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
    """Return x (uniform in [0, 1)), out = [0] and n."""
    n = _size()
    dev = _device()
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.rand(n, generator=gen, device=dev, dtype=torch.float32)
    return {"x": x, "out": torch.zeros(1, device=dev, dtype=torch.float32), "n": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return out = [sum(x)], summed in float64."""
    x = inputs["x"]
    return {"out": x.double().sum().float().reshape(1)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["x"].sum()


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return a persistent grid: 8 blocks of 256 threads per multiprocessor, fewer for small n."""
    n = int(inputs["n"])
    blocks = min(_sm_count(inputs["x"]) * 8, max(1, math.ceil(n / 4 / 256)))
    return (blocks, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read once."""
    return 4 * int(inputs["n"])


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: one add per value."""
    return int(inputs["n"])
