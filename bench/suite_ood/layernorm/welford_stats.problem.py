"""Problem: layer normalisation without affine parameters, also writing each row's mean and reciprocal standard
deviation (kernel `layernorm_welford` of welford_stats.cu, out-of-distribution naive suite).

How it is written: one thread per row, Welford's running mean and M2 in one pass, typedef'd element type, `long` row
offset, statistics written to two extra outputs (as a training forward pass does).

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

kernel = "layernorm_welford"
operator = "layernorm"
corpus_expert = "layernorm"
roofline = "memory"
SIZES = {"full": (16384, 4096), "tiny": (7, 129), "odd": (45, 999)}


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
    """Return normal input (mean -1, standard deviation 2), the three outputs, sizes and eps = 1e-5."""
    n, h = _size()
    dev, gen = _gen(seed)
    x = 2.0 * torch.randn(n, h, generator=gen, device=dev) - 1.0
    return {
        "input": x,
        "output": torch.empty_like(x),
        "mean_out": torch.empty(n, device=dev),
        "rstd_out": torch.empty(n, device=dev),
        "N": n,
        "H": h,
        "eps": 1e-5,
    }


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the normalised rows, their means and 1 / sqrt(biased variance + eps)."""
    x = inputs["input"].double()
    var, mean = torch.var_mean(x, dim=1, unbiased=False)
    rstd = 1.0 / torch.sqrt(var + inputs["eps"])
    y = (x - mean[:, None]) * rstd[:, None]
    return {"output": y.float(), "mean_out": mean.float(), "rstd_out": rstd.float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator (the statistics come with it in one kernel)."""
    return torch.native_layer_norm(inputs["input"], (int(inputs["H"]),), None, None, inputs["eps"])[0]


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per row, 128 threads a block."""
    return ((int(inputs["N"]) + 127) // 128, 1, 1), (128, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: input read once, output written once, two floats per row."""
    return 8 * inputs["input"].numel() + 8 * int(inputs["N"])


def flops(inputs: dict[str, Any]) -> int:
    """Return about eight operations per element."""
    return 8 * inputs["input"].numel()
