"""Problem: a histogram of float32 values in [lo, lo + nbins / scale) into nbins int32 bins (values past the end clamp
to the last bin) (kernel `histogram_float` of float_range_bins.cu, out-of-distribution naive suite).

How it is written: one value per thread, the bin computed as `(int)((v - lo) * scale)` and clamped with `min`/`max`,
the bin count a parameter, `int` counters.

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

kernel = "histogram_float"
operator = "histogram"
corpus_expert = "histogram"
roofline = "memory"
inout = ("bins",)
SIZES = {"full": 1 << 26, "tiny": 4000, "odd": 10007}


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
    """Return uniform values in [0, 1), 100 zeroed bins, lo = 0 and scale = 100."""
    n = _size()
    dev, gen = _gen(seed)
    data = torch.rand(n, generator=gen, device=dev)
    return {
        "data": data,
        "bins": torch.zeros(100, device=dev, dtype=torch.int32),
        "n": n,
        "nbins": 100,
        "lo": 0.0,
        "scale": 100.0,
    }


def _bin(inputs: dict[str, Any]) -> torch.Tensor:
    b = ((inputs["data"] - inputs["lo"]) * inputs["scale"]).to(torch.int32)
    return b.clamp(0, int(inputs["nbins"]) - 1).long()


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the count per bin (the same float32 arithmetic as the kernel, so every value lands alike)."""
    return {"bins": torch.bincount(_bin(inputs), minlength=int(inputs["nbins"])).to(torch.int32)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch eager runs for this operator."""
    return torch.histc(inputs["data"], bins=int(inputs["nbins"]), min=0.0, max=1.0)


def launch(inputs: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return one thread per value, 256 a block."""
    return ((int(inputs["n"]) + 255) // 256, 1, 1), (256, 1, 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the bytes the operator must move: the data once (the counters are negligible)."""
    return 4 * int(inputs["n"]) + 4 * int(inputs["nbins"])


def flops(inputs: dict[str, Any]) -> int:
    """Return a subtract and a multiply per value."""
    return 2 * int(inputs["n"])
