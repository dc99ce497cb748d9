"""Problem: the transpose of an 8191 x 8193 float32 matrix (kernel `transpose_f32` of expert.cu, scalar path).

The sides are not multiples of 4, so the expert takes its scalar path (4-byte accesses through the same padded
tile) instead of its 16-byte vector path: the lineage `transpose_scalar` walks that path backwards
(`warpwise lineage build lineages/corpus/transpose/expert.cu --problem
lineages/corpus/transpose/scalar.problem.py --operator transpose_scalar`). A warpwise.verify problem file:
see expert.problem.py beside it, whose full-size problem (8192 x 8192) takes the vector path.
"""

from __future__ import annotations

import math
from typing import Any

import torch

kernel = "transpose_f32"
roofline = "memory"
ROWS, COLS = 8191, 8193


def make_inputs(seed: int) -> dict[str, Any]:
    """Return the input matrix (standard normal), the output and the sizes."""
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    x = torch.randn(ROWS, COLS, generator=gen, device=dev, dtype=torch.float32)
    return {"in": x, "out": torch.empty(COLS, ROWS, device=dev, dtype=torch.float32), "rows": ROWS, "cols": COLS}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return out = in transposed."""
    return {"out": inputs["in"].t().contiguous()}


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of 256 threads per 64 x 64 tile."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return (math.ceil(cols / 64), math.ceil(rows / 64), 1), (256, 1, 1)
