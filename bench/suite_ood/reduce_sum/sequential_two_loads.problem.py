"""Problem: per-block partial sums of n float32 values, each block covering 2 x 256 inputs (the partials are the
output) (kernel `reduce_seq` of sequential_two_loads.cu, out-of-distribution naive suite).

How it is written: textbook reductions #3 and #4: the first add during the load (two values per thread), sequential
addressing `for (s = blockDim.x / 2; s > 0; s >>= 1)` written as a `while`, a static shared array, one partial per
block.

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

kernel = "reduce_seq"
operator = "reduce_sum"
corpus_expert = "reduce_sum"
roofline = "memory"
SIZES = {"full": 1 << 26, "tiny": 4000, "odd": 10007}


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
    """Return n uniform values in [0, 1), one partial per 512 inputs, and n."""
    n = _size()
    dev, gen = _gen(seed)
    x = torch.rand(n, generator=gen, device=dev)
    return {"x": x, "partial": torch.empty((n + 511) // 512, device=dev), "n": n}


def _partials(x: torch.Tensor) -> torch.Tensor:
    pad = (-x.numel()) % 512
    return torch.nn.functional.pad(x, (0, pad)).view(-1, 512).sum(dim=1)


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the sum of every run of 512 inputs (the last run zero-padded), computed in float64."""
    return {"partial": _partials(inputs["x"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _partials(inputs["x"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of 256 per 512 inputs (the shared array holds 256)."""
    return ((int(inputs["n"]) + 511) // 512, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the input once and the partials."""
    return 4 * int(inputs["n"]) + 4 * inputs["partial"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return one addition per input."""
    return int(inputs["n"])
