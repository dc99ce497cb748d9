"""Problem: C = A B in float16 (float32 accumulation), row-major, A M x K, B K x N (kernel `hgemm_nn` of
nn_float_acc.cu, out-of-distribution naive suite).

How it is written: one output per thread on 16 x 16 blocks, 2-byte scalar loads converted with `__half2float`, the
accumulator in float, one rounding at the store.

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

kernel = "hgemm_nn"
operator = "hgemm"
corpus_expert = None
roofline = "compute"
SIZES = {"full": (2048, 2048, 2048), "tiny": (33, 40, 29), "odd": (65, 70, 61)}


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
    """Return float16 A and B in multiples of 1/8 in [-1, 1] (exact float32 sums), C and the sizes."""
    m, n, k = _size()
    dev, gen = _gen(seed)
    a = (torch.randint(-8, 9, (m, k), generator=gen, device=dev).float() / 8).half()
    b = (torch.randint(-8, 9, (k, n), generator=gen, device=dev).float() / 8).half()
    return {"A": a, "B": b, "C": torch.empty(m, n, device=dev, dtype=torch.float16), "M": m, "N": n, "K": k}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return A B, exact in float64, rounded once to float16."""
    return {"C": (inputs["A"].double() @ inputs["B"].double()).half()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["A"] @ inputs["B"]


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 16 x 16 blocks over (columns, rows) of C."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return ((n + 15) // 16, (m + 15) // 16, 1), (16, 16, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and B read once, C written once."""
    return 2 * (inputs["A"].numel() + inputs["B"].numel() + inputs["C"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per term of every dot product."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])
