"""Problem: out = silu(in[:, :H]) * in[:, H:] for a float32 input of tokens x 2H (the gate and up halves side by side)
(kernel `silu_and_mul` of concat_divmod.cu, out-of-distribution naive suite).

How it is written: a flat 1-D launch over tokens x H, token and feature from `/` and `%`, both halves addressed from
one row base, `expf`.

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

kernel = "silu_and_mul"
operator = "silu_mul"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (8192, 4096), "tiny": (5, 300), "odd": (33, 1001)}


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
    """Return a normal tokens x 2H input, the tokens x H output and the sizes."""
    tokens, h = _size()
    dev, gen = _gen(seed)
    x = torch.randn(tokens, 2 * h, generator=gen, device=dev)
    return {"in": x, "out": torch.empty(tokens, h, device=dev), "tokens": tokens, "H": h}


def _swiglu(x: torch.Tensor) -> torch.Tensor:
    g, u = x.chunk(2, dim=1)
    return torch.nn.functional.silu(g) * u


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return silu(gate) * up."""
    return {"out": _swiglu(inputs["in"])}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _swiglu(inputs["in"])


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per output element, 256 a block."""
    n = int(inputs["tokens"]) * int(inputs["H"])
    return ((n + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every input read once and the output written once."""
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def flops(inputs: dict[str, Any]) -> int:
    """Return about five operations per output, counting exp as one."""
    return 5 * inputs["out"].numel()
