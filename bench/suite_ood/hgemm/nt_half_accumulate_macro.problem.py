"""Problem: C = A B^T in float16, row-major, A M x K, B N x K (the layout of x W^T), float32 accumulation (kernel
`hgemm_nt` of nt_half_accumulate_macro.cu, out-of-distribution naive suite).

How it is written: the NT layout, sizes K as a macro and M, N as parameters, a 1-D launch over C with `/` and `%`,
`unsigned` indices, `__hmul` products widened before the add.

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

kernel = "hgemm_nt"
operator = "hgemm"
corpus_expert = None
roofline = "compute"
SIZES = {"full": (4096, 4096), "tiny": (33, 40), "odd": (65, 70)}


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
    """Return float16 A (M x 1024) and B (N x 1024) in multiples of 1/8 in [-1, 1] (exact products), C and sizes."""
    m, n = _size()
    dev, gen = _gen(seed)
    a = (torch.randint(-8, 9, (m, 1024), generator=gen, device=dev).float() / 8).half()
    b = (torch.randint(-8, 9, (n, 1024), generator=gen, device=dev).float() / 8).half()
    return {"A": a, "B": b, "C": torch.empty(m, n, device=dev, dtype=torch.float16), "M": m, "N": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return A B^T, exact in float64, rounded once to float16."""
    return {"C": (inputs["A"].double() @ inputs["B"].double().t()).half()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return inputs["A"] @ inputs["B"].t()


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per element of C, 128 a block."""
    n = int(inputs["M"]) * int(inputs["N"])
    return ((n + 127) // 128, 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: A and B read once, C written once."""
    return 2 * (inputs["A"].numel() + inputs["B"].numel() + inputs["C"].numel())


def flops(inputs: dict[str, Any]) -> int:
    """Return a multiply and an add per term of every dot product."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * 1024
