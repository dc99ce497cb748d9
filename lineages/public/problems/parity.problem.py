"""Problem: in place, each int32 doubled when even and incremented when odd (public lineage gpumode-divergence).

Both versions update `data` in place (inout), one element per thread; the launch is the repository's host code
(lecture_008/divergence.cu: 256 threads per block, enough blocks to cover N). `full` is 2^26 elements (256 MiB;
the lecture uses 2^20), `tiny` 5000. Inputs are uniform integers in [0, 2^20), so even and odd are mixed within
every warp (the lecture initialises data[i] = i, which alternates within a warp just the same).
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


SIZES = {"full": 1 << 26, "tiny": 5000}
kernel = "processArrayWithDivergence"
roofline = "memory"
inout = ("data",)


def make_inputs(seed: int) -> dict[str, Any]:
    """Return the integers and N."""
    n = SIZES[_scale()]
    data = torch.randint(0, 1 << 20, (n,), generator=_gen(seed), device=_device(), dtype=torch.int32)
    return {"data": data, "N": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return data * 2 where even, data + 1 where odd."""
    d = inputs["data"]
    return {"data": torch.where(d % 2 == 0, d * 2, d + 1)}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.where of both results (out of place)."""
    d = inputs["data"]
    return torch.where(d % 2 == 0, d * 2, d + 1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return data read and written once."""
    return 8 * int(inputs["N"])


_launch = lambda i: ((_cdiv(i["N"], 256), 1, 1), (256, 1, 1))  # noqa: E731
VARIANTS: dict[str, dict[str, Any]] = {
    "gpumode-divergence/branch": {"kernel": "processArrayWithDivergence", "launch": _launch},
    "gpumode-divergence/select": {"kernel": "processArrayWithoutDivergence", "launch": _launch},
}
launch = _launch


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
