"""Problem: per-row softmax, layer norm and RMS norm of a float32 matrix, one block per row (public lineages).

Lineages: leetcuda-softmax, leetcuda-layernorm, leetcuda-rmsnorm.

LeetCUDA's per-token kernels take a block of H threads per row (H / 4 for float4), the block size as a template
argument, and the total element count; layer and RMS norm take `(x, y, g[, b], N rows, K cols)` with scalar
gain and bias and epsilon 1e-5. Rows are 1024 long (the largest block); `full` 65536 rows (256 MiB), `tiny` 8.
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


SIZES = {"full": 65536, "tiny": 8}
H = 1024
kernel = "softmax_f32_per_token_kernel"
roofline = "memory"


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x standard normal (rows x 1024), the output y, the sizes, and gain 1.5 and bias -0.25."""
    rows = SIZES[_scale()]
    x = torch.randn(rows, H, generator=_gen(seed), device=_device(), dtype=torch.float32)
    return {"x": x, "y": torch.empty_like(x), "N": rows * H, "rows": rows, "K": H, "g": 1.5, "b": -0.25}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the row softmax."""
    return {"y": torch.softmax(inputs["x"].double(), dim=1).float()}


def _layernorm(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    x = inputs["x"].double()
    y = (x - x.mean(1, keepdim=True)) * torch.rsqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    return {"y": (y * inputs["g"] + inputs["b"]).float()}


def _rmsnorm(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    x = inputs["x"].double()
    return {"y": (x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-5) * inputs["g"]).float()}


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return x read and y written once."""
    return 8 * int(inputs["rows"]) * H


_token = lambda k: lambda i: ((int(i["rows"]), 1, 1), (H // k, 1, 1))  # noqa: E731
_NORM = {"rows": "N", "N": "total"}
VARIANTS: dict[str, dict[str, Any]] = {
    "leetcuda-softmax/per_token": {
        "kernel": "softmax_f32_per_token_kernel",
        "name_expression": f"softmax_f32_per_token_kernel<{H}>",
        "launch": _token(1),
    },
    "leetcuda-softmax/per_token_x4": {
        "kernel": "softmax_f32x4_per_token_kernel",
        "name_expression": f"softmax_f32x4_per_token_kernel<{H // 4}>",
        "launch": _token(4),
    },
    "leetcuda-softmax/safe": {
        "kernel": "safe_softmax_f32_per_token_kernel",
        "name_expression": f"safe_softmax_f32_per_token_kernel<{H}>",
        "launch": _token(1),
    },
    "leetcuda-softmax/safe_x4": {
        "kernel": "safe_softmax_f32x4_per_token_kernel",
        "name_expression": f"safe_softmax_f32x4_per_token_kernel<{H // 4}>",
        "launch": _token(4),
    },
    "leetcuda-softmax/online": {
        "kernel": "online_safe_softmax_f32_per_token_kernel",
        "name_expression": f"online_safe_softmax_f32_per_token_kernel<{H}>",
        "launch": _token(1),
    },
    "leetcuda-layernorm/f32": {
        "kernel": "layer_norm_f32_kernel",
        "name_expression": f"layer_norm_f32_kernel<{H}>",
        "rename": _NORM,
        "reference": _layernorm,
        "launch": _token(1),
    },
    "leetcuda-layernorm/f32x4": {
        "kernel": "layer_norm_f32x4_kernel",
        "name_expression": f"layer_norm_f32x4_kernel<{H // 4}>",
        "rename": _NORM,
        "reference": _layernorm,
        "launch": _token(4),
    },
    "leetcuda-rmsnorm/f32": {
        "kernel": "rms_norm_f32_kernel",
        "name_expression": f"rms_norm_f32_kernel<{H}>",
        "rename": _NORM,
        "reference": _rmsnorm,
        "launch": _token(1),
    },
    "leetcuda-rmsnorm/f32x4": {
        "kernel": "rms_norm_f32x4_kernel",
        "name_expression": f"rms_norm_f32x4_kernel<{H // 4}>",
        "rename": _NORM,
        "reference": _rmsnorm,
        "launch": _token(4),
    },
}
launch = VARIANTS["leetcuda-softmax/per_token"]["launch"]


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
