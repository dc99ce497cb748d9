"""Problem: the total of n float32 values, accumulated with one atomic add per block into an in-out scalar (kernel
`sum_strided_index` of strided_index_atomic.cu, out-of-distribution naive suite).

How it is written: textbook reduction #2: strided index `index = 2 * s * tid` (no divergent modulo, bank conflicts
instead), block size a macro used for the shared array and the loop, `int` indices, thread 0 adds the block's sum
atomically.

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

kernel = "sum_strided_index"
operator = "reduce_sum"
corpus_expert = "reduce_sum"
roofline = "memory"
inout = ("total",)
SIZES = {"full": 1 << 26, "tiny": 3000, "odd": 10007}


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
    """Return n uniform values in [0, 1), total = 0 and n."""
    n = _size()
    dev, gen = _gen(seed)
    return {"in": torch.rand(n, generator=gen, device=dev), "total": torch.zeros(1, device=dev), "n": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the sum (computed in float64)."""
    return {"total": inputs["in"].double().sum().reshape(1).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["in"].sum()


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of BLOCK (512) per 512 inputs."""
    return ((int(inputs["n"]) + 511) // 512, 1, 1), (512, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the input once."""
    return 4 * int(inputs["n"])


def flops(inputs: dict[str, Any]) -> int:
    """Return one addition per input."""
    return int(inputs["n"])
