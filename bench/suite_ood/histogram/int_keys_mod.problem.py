"""Problem: a 1024-bin histogram of int32 keys, bin = key % 1024 (unsigned counters) (kernel `histo_mod` of
int_keys_mod.cu, out-of-distribution naive suite).

How it is written: a grid-stride `for` loop, the bin count a macro, one global `atomicAdd` on `unsigned int`
counters per key.

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

kernel = "histo_mod"
operator = "histogram"
corpus_expert = "histogram"
roofline = "memory"
inout = ("hist",)
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
    """Return non-negative int32 keys, zeroed counters (int32 on the torch side, the gate has no uint32) and n."""
    n = _size()
    dev, gen = _gen(seed)
    keys = torch.randint(0, 1 << 30, (n,), generator=gen, device=dev, dtype=torch.int32)
    return {"keys": keys, "hist": torch.zeros(1024, device=dev, dtype=torch.int32), "n": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the count of keys per remainder."""
    counts = torch.bincount((inputs["keys"] % 1024).long(), minlength=1024)
    return {"hist": counts.to(torch.int32)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.bincount(inputs["keys"] % 1024, minlength=1024)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 2048 blocks of 256 threads (fewer for small inputs); the loop covers the rest."""
    return (min(2048, (int(inputs["n"]) + 255) // 256), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the keys once (the 4 KiB of counters is negligible)."""
    return 4 * int(inputs["n"]) + 4 * 1024


def flops(inputs: dict[str, Any]) -> int:
    """Return the floating-point operations: none."""
    return 0
