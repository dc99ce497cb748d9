"""Problem: per-block partial sums of n float32 values (one partial per 256 inputs; the partials are the output)
(kernel `reduce_interleaved` of interleaved_partials.cu, out-of-distribution naive suite).

How it is written: textbook reduction #1: one value per thread into shared memory, the interleaved tree `if (tid %
(2 * s) == 0)` with `s` doubling, block size from `blockDim.x`, a zero for out-of-range threads, one partial written
per block.

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

kernel = "reduce_interleaved"
operator = "reduce_sum"
corpus_expert = "reduce_sum"
roofline = "memory"
SIZES = {"full": 1 << 26, "tiny": 5000, "odd": 10007}


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
    """Return n uniform values in [0, 1), one output per block of 256, and n."""
    n = _size()
    dev, gen = _gen(seed)
    x = torch.rand(n, generator=gen, device=dev)
    return {"g_idata": x, "g_odata": torch.empty((n + 255) // 256, device=dev), "n": n}


def _partials(x: torch.Tensor) -> torch.Tensor:
    pad = (-x.numel()) % 256
    return torch.nn.functional.pad(x, (0, pad)).view(-1, 256).sum(dim=1)


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the sum of every run of 256 inputs (the last run zero-padded), computed in float64."""
    return {"g_odata": _partials(inputs["g_idata"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _partials(inputs["g_idata"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Return one block of 256 per 256 inputs and 256 floats of dynamic shared memory."""
    return ((int(inputs["n"]) + 255) // 256, 1, 1), (256, 1, 1), 256 * 4


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the input once and the partials."""
    return 4 * int(inputs["n"]) + 4 * inputs["g_odata"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return one addition per input."""
    return int(inputs["n"])
