"""Problem: softmax of scores / temperature over each row, masked positions excluded (probability 0) (kernel
`masked_softmax_rows` of row_per_thread_mask.cu, out-of-distribution naive suite).

How it is written: one thread per row, a byte mask (1 keeps a position) tested in every pass, temperature as a
parameter turned into a reciprocal, `int` indices computed inline.

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

kernel = "masked_softmax_rows"
operator = "masked_softmax"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (6, 257), "odd": (67, 1003)}


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
    """Return normal scores, a random mask keeping about 70% (always the first column), T = 0.7 and sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    scores = torch.randn(rows, cols, generator=gen, device=dev)
    mask = (torch.rand(rows, cols, generator=gen, device=dev) < 0.7).to(torch.uint8)
    mask[:, 0] = 1
    return {
        "scores": scores,
        "mask": mask,
        "probs": torch.empty_like(scores),
        "rows": rows,
        "cols": cols,
        "temperature": 0.7,
    }


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return softmax(scores / T) with masked positions at -inf (probability 0)."""
    s = (inputs["scores"] / inputs["temperature"]).masked_fill(inputs["mask"] == 0, float("-inf"))
    return {"probs": torch.softmax(s, dim=1)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    s = (inputs["scores"] / inputs["temperature"]).masked_fill(inputs["mask"] == 0, float("-inf"))
    return torch.softmax(s, dim=1)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 64 threads a block."""
    return ((int(inputs["rows"]) + 63) // 64, 1, 1), (64, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: scores and mask read once, probabilities written once."""
    return 9 * int(inputs["rows"]) * int(inputs["cols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return scale, max, subtract, exp, add and divide per element."""
    return 6 * int(inputs["rows"]) * int(inputs["cols"])
