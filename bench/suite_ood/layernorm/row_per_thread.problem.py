"""Problem: layer normalisation of each row of a rows x cols float32 matrix, with gamma and beta (kernel
`layernorm_row_per_thread` of row_per_thread.cu, out-of-distribution naive suite).

How it is written: one thread per row, three passes (mean, variance, normalise), `sqrtf` and a division per element,
eps as a parameter, sizes as parameters, `int` indices.

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

kernel = "layernorm_row_per_thread"
operator = "layernorm"
corpus_expert = "layernorm"
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (5, 300), "odd": (37, 1001)}


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
    """Return normal x (mean 0.5), normal gamma and beta, the output, sizes and eps = 1e-5."""
    rows, cols = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, cols, generator=gen, device=dev) + 0.5
    gamma = torch.randn(cols, generator=gen, device=dev)
    beta = torch.randn(cols, generator=gen, device=dev)
    return {"x": x, "gamma": gamma, "beta": beta, "y": torch.empty_like(x), "rows": rows, "cols": cols, "eps": 1e-5}


def _ln(inputs: dict[str, Any]) -> torch.Tensor:
    x = inputs["x"]
    return torch.nn.functional.layer_norm(x, (x.shape[1],), inputs["gamma"], inputs["beta"], inputs["eps"])


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the layer norm of every row."""
    return {"y": _ln(inputs)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _ln(inputs)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 256 threads a block."""
    return ((int(inputs["rows"]) + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read and y written once, gamma and beta read once."""
    return 8 * inputs["x"].numel() + 8 * int(inputs["cols"])


def flops(inputs: dict[str, Any]) -> int:
    """Return about eight operations per element (sum, difference, square, normalise, scale, shift)."""
    return 8 * inputs["x"].numel()
