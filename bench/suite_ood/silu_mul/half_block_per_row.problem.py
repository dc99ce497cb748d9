"""Problem: out = silu(x[:, :D]) * x[:, D:] in float16 with D = 11008 (a LLaMA MLP width) (kernel `act_and_mul_f16` of
half_block_per_row.cu, out-of-distribution naive suite).

How it is written: a block per token with threads striding the features (`for (c = threadIdx.x; c < D; c +=
blockDim.x)`), the width a macro that is not a multiple of the block, float16 storage with float math, row pointers
hoisted.

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

kernel = "act_and_mul_f16"
operator = "silu_mul"
corpus_expert = None
roofline = "memory"
SIZES = {"full": 8192, "tiny": 3, "odd": 17}


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
    """Return a normal float16 tokens x 2D input, the output and the token count."""
    tokens = _size()
    dev, gen = _gen(seed)
    x = torch.randn(tokens, 2 * 11008, generator=gen, device=dev).half()
    return {"out": torch.empty(tokens, 11008, device=dev, dtype=torch.float16), "input": x, "num_tokens": tokens}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return silu(gate) * up computed in float32, rounded to float16."""
    g, u = inputs["input"].float().chunk(2, dim=1)
    return {"out": (torch.nn.functional.silu(g) * u).half()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    g, u = inputs["input"].chunk(2, dim=1)
    return torch.nn.functional.silu(g) * u


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of 1024 per token."""
    return (int(inputs["num_tokens"]), 1, 1), (1024, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every input read once and the output written once."""
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def flops(inputs: dict[str, Any]) -> int:
    """Return about five operations per output, counting exp as one."""
    return 5 * inputs["out"].numel()
