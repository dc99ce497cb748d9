"""Problem: the sum of each row of a row-major float32 matrix (M x N) (public lineage learncuda-sum).

The versions after v1 add each block's partial sum of a row to `output[row]` with atomicAdd, so `output` starts
at zero (inout; the repository's wrapper allocates it with torch::empty). Launches and TILE_SIZE / BLOCK_SIZE are
the defaults of the repository's bindings (03_sum/sum.cpp) and host functions (03_sum/sum.cu); v4 is v4c (the
warp-shuffle variant, template argument 3). `full` is 1024 rows of the authors' row length 32000 (125 MiB; the
authors time 64 rows), `tiny` 8 x 5000 (rows that are not a multiple of any tile). Inputs are standard normal.
"""

from __future__ import annotations

import os
from typing import Any

import torch


def _scale() -> str:
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return scale


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _gen(seed: int) -> torch.Generator:
    gen = torch.Generator(device=_device())
    gen.manual_seed(seed)
    return gen


def _cdiv(a: int, b: int) -> int:
    return -(-int(a) // int(b))


SIZES = {"full": (1024, 32000), "tiny": (8, 5000)}
kernel = "sum_v1_kernel"
roofline = "memory"
inout = ("output",)
# (rtol, atol): a float32 sum of N = 32000 standard-normal terms has a rounding error of about 2**-24 * N / sqrt(2)
# ~ 1.3e-3 when added sequentially (v1 uses Kahan summation; the tree versions are far more accurate); rows whose
# sum is near zero need the absolute term. 1e-2 is about eight times the sequential bound.
tolerance = (1e-4, 1e-2)


def make_inputs(seed: int) -> dict[str, Any]:
    """Return the matrix standard normal, the zeroed row sums and the sizes."""
    m, n = SIZES[_scale()]
    x = torch.randn(m, n, generator=_gen(seed), device=_device(), dtype=torch.float32)
    return {"input": x, "output": torch.zeros(m, device=_device()), "M": m, "N": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the row sums, accumulated in float64."""
    return {"output": inputs["input"].double().sum(1).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.sum over the rows."""
    return inputs["input"].sum(1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the matrix read once."""
    return 4 * int(inputs["M"]) * int(inputs["N"])


def _tiles(tile: int, block: int) -> Any:
    return lambda i: ((_cdiv(i["N"], tile), int(i["M"]), 1), (block, 1, 1), 4 * block)


VARIANTS: dict[str, dict[str, Any]] = {
    "learncuda-sum/v1": {"kernel": "sum_v1_kernel", "launch": lambda i: ((int(i["M"]), 1, 1), (1, 1, 1))},
    "learncuda-sum/v2": {"kernel": "sum_v2_kernel", "launch": _tiles(128, 128)},
    "learncuda-sum/v3": {"kernel": "sum_v3_kernel", "launch": _tiles(2048, 256), "TILE_SIZE": 2048},
    "learncuda-sum/v4": {
        "kernel": "sum_v4_kernel",
        "name_expression": "sum_v4_kernel<3>",
        "launch": _tiles(4096, 128),
        "TILE_SIZE": 4096,
    },
    "learncuda-sum/v5": {"kernel": "sum_v5_kernel", "launch": _tiles(2048, 128), "TILE_SIZE": 2048},
    "learncuda-sum/v6": {"kernel": "sum_v6_kernel", "launch": _tiles(8192, 128), "TILE_SIZE": 8192},
}
launch = VARIANTS["learncuda-sum/v1"]["launch"]


def variant(key: str) -> dict[str, Any]:
    """Return the problem namespace of one version (`lineage/version`), with parameters named as its kernel does.

    A variant gives its `kernel` (and NVRTC `name_expression` for templates), its `launch` (written in this file's
    names), `rename` (this file's name -> the kernel's parameter name) and optionally `SIZES`, `reference` or
    `scratch` (buffers the kernel uses as workspace, not compared). `unsupported` says why a version is not run.
    """
    if key not in VARIANTS:
        raise KeyError(f"no variant {key!r} in {__file__}; known: {', '.join(VARIANTS)}")
    spec = dict(VARIANTS[key])
    ns = {k: v for k, v in globals().items() if not k.startswith("__")}
    rename: dict[str, str] = spec.pop("rename", {})
    back = {v: k for k, v in rename.items()}
    base_inputs, base_reference = spec.pop("make_inputs", make_inputs), spec.pop("reference", reference)
    base_launch, base_eager = spec.pop("launch", None), ns.get("eager")
    to_kernel = lambda d: {rename.get(k, k): v for k, v in d.items()}  # noqa: E731
    to_ours = lambda d: {back.get(k, k): v for k, v in d.items()}  # noqa: E731
    ns.update(spec)
    ns["make_inputs"] = lambda seed: to_kernel(base_inputs(seed))
    ns["reference"] = lambda inputs: to_kernel(base_reference(to_ours(inputs)))
    if base_launch is not None:
        ns["launch"] = lambda inputs: base_launch(to_ours(inputs))
    if base_eager is not None:
        ns["eager"] = lambda inputs: base_eager(to_ours(inputs))
    for name in ("bytes_moved", "flops"):
        if name in ns:
            fn = ns[name]
            ns[name] = lambda inputs, fn=fn: fn(to_ours(inputs))
    ns["inout"] = tuple(rename.get(k, k) for k in ns.get("inout", ()))
    ns["scratch"] = tuple(rename.get(k, k) for k in ns.get("scratch", ()))
    return ns
