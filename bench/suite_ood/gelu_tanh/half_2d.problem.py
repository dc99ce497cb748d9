"""Problem: y = GELU(x) with the tanh approximation on a rows x cols float16 matrix (kernel `gelu_half_2d` of
half_2d.cu, out-of-distribution naive suite).

How it is written: float16 storage with float math per element (2-byte loads, pairs could be `half2`), a 2-D launch
of 32 x 8 blocks over rows and columns, the index built from both coordinates.

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

kernel = "gelu_half_2d"
operator = "gelu_tanh"
corpus_expert = None
roofline = "memory"
SIZES = {"full": (16384, 8192), "tiny": (10, 300), "odd": (33, 1001)}


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
    """Return a normal float16 matrix, the output and the sizes."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev).half()
    return {"x": x, "y": torch.empty_like(x), "rows": rows, "cols": cols}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return GELU (tanh) computed in float32 and rounded to float16."""
    return {"y": torch.nn.functional.gelu(inputs["x"].float(), approximate="tanh").half()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.nn.functional.gelu(inputs["x"], approximate="tanh")


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return 32 x 8 blocks over (columns, rows)."""
    rows, cols = int(inputs["rows"]), int(inputs["cols"])
    return ((cols + 31) // 32, (rows + 7) // 8, 1), (32, 8, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: every input read once and the output written once."""
    return sum(v.numel() * v.element_size() for v in inputs.values() if isinstance(v, torch.Tensor))


def flops(inputs: dict[str, Any]) -> int:
    """Return about nine operations per element, counting tanh as one."""
    return 9 * inputs["x"].numel()
