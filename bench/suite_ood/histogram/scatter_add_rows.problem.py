"""Problem: a scatter-add of float32 rows: out[index[i], :] += src[i, :] (index_add along dimension 0 into 4096 rows of
64) (kernel `scatter_add_rows` of scatter_add_rows.cu, out-of-distribution naive suite).

How it is written: one element per thread on a 2-D launch of 64 x 4 blocks (the grid's x over source rows, 4 a
block, its y over features), the destination row read from an index array, one float `atomicAdd` per element into an
in-out table.

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

kernel = "scatter_add_rows"
operator = "histogram"
corpus_expert = "histogram"
roofline = "memory"
inout = ("out",)
SIZES = {"full": (1 << 20, 64, 4096), "tiny": (300, 64, 17), "odd": (1001, 64, 33)}


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
    """Return uniform [0, 1) source rows, random destination rows, a zeroed table and the sizes."""
    n, dim, dst_rows = _size()
    dev, gen = _gen(seed)
    src = torch.rand(n, dim, generator=gen, device=dev)
    index = torch.randint(0, dst_rows, (n,), generator=gen, device=dev, dtype=torch.int32)
    return {"src": src, "index": index, "out": torch.zeros(dst_rows, dim, device=dev), "n": n, "dim": dim}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the table after the scatter-add (computed in float64)."""
    out = inputs["out"].double().index_add(0, inputs["index"].long(), inputs["src"].double())
    return {"out": out.float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["out"].index_add(0, inputs["index"], inputs["src"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 64 x 4 blocks, 4 source rows a block along the grid's x and the features along its y."""
    n, dim = int(inputs["n"]), int(inputs["dim"])
    return ((n + 3) // 4, (dim + 63) // 64, 1), (64, 4, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the source and indices once, the table read and written once."""
    return 4 * inputs["src"].numel() + 4 * int(inputs["n"]) + 8 * inputs["out"].numel()


def flops(inputs: dict[str, Any]) -> int:
    """Return one addition per source element."""
    return inputs["src"].numel()
