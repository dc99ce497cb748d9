"""Problem: layer normalisation of each row of a rows x D float32 matrix, with gamma and beta (kernel `layernorm_block`
of block_strided_index.cu, out-of-distribution naive suite).

How it is written: a block per row, one pass collecting the sum and the sum of squares (variance as E[x^2] -
mean^2), two shared trees in the strided-index form (`index = 2 * s * tid`), block size a macro, `rsqrtf`.

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

kernel = "layernorm_block"
operator = "layernorm"
corpus_expert = "layernorm"
roofline = "memory"
SIZES = {"full": (8192, 8192), "tiny": (4, 513), "odd": (9, 1000)}


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
    """Return standard normal x, gamma near 1, small beta, the output, D and eps = 1e-5."""
    rows, d = _size()
    dev, gen = _gen(seed)
    x = torch.randn(rows, d, generator=gen, device=dev)
    w = 1.0 + 0.1 * torch.randn(d, generator=gen, device=dev)
    b = 0.1 * torch.randn(d, generator=gen, device=dev)
    return {"out": torch.empty_like(x), "in": x, "w": w, "b": b, "D": d, "eps": 1e-5}


def _ln(inputs: dict[str, Any]) -> torch.Tensor:
    x = inputs["in"]
    return torch.nn.functional.layer_norm(x, (x.shape[1],), inputs["w"], inputs["b"], inputs["eps"])


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the layer norm of every row."""
    return {"out": _ln(inputs)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return _ln(inputs)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one block of BLOCK_SIZE (256) per row."""
    return (int(inputs["in"].shape[0]), 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: x read and y written once, gamma and beta read once."""
    return 8 * inputs["in"].numel() + 8 * int(inputs["D"])


def flops(inputs: dict[str, Any]) -> int:
    """Return about eight operations per element."""
    return 8 * inputs["in"].numel()
