"""Problem: y = max(x + bias, 0) for float16 activations of rows x 4096 (half2-able: pairs share nothing but the bias
layout) (kernel `bias_relu_f16` of half_macro_hidden.cu, out-of-distribution naive suite).

How it is written: float16 with float arithmetic, the hidden size a macro, `unsigned` flat index with `/` and `%` by
the macro, the guard as an early return.

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

kernel = "bias_relu_f16"
operator = "bias_relu"
corpus_expert = None
roofline = "memory"
SIZES = {"full": 32768, "tiny": 5, "odd": 77}


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
    """Return normal float16 x (rows x 4096) and bias, the output and the row count."""
    rows = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, 4096, generator=gen, device=dev).half()
    bias = torch.randn(4096, generator=gen, device=dev).half()
    return {"x": x, "bias": bias, "y": torch.empty_like(x), "rows": rows}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return relu(x + bias) computed in float32, rounded to float16."""
    return {"y": torch.relu(inputs["x"].float() + inputs["bias"].float()).half()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.relu(inputs["x"] + inputs["bias"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per element, 512 a block."""
    n = int(inputs["rows"]) * 4096
    return ((n + 511) // 512, 1, 1), (512, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every input read once and the output written once."""
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def flops(inputs: dict[str, Any]) -> int:
    """Return an add and a max per element."""
    return 2 * inputs["x"].numel()
