"""Problem: elementwise c = a + b (float32 and half) and y = relu(x) (public elementwise lineages).

Lineages: leetcuda-elementwise, leetcuda-elementwise-f16, leetcuda-relu, gpumode-coarsening.

LeetCUDA launches blocks of 256 / (elements per thread) threads and ceil(N / 256) blocks. `full` is 2^27 elements
(1.5 GiB moved by a float32 add, about 0.4 ms on an H200), `tiny` 8192 (a multiple of the 8-half packs, which
the f16x8 versions load without a tail guard). gpu-mode's lecture 8 pair fixes N = 1024 in the source (a macro),
so it runs on that size only.
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


SIZES = {"full": 1 << 27, "tiny": 8192}
kernel = "elementwise_add_f32_kernel"
roofline = "memory"


def _add(dtype: torch.dtype, n: int | None = None) -> Any:
    def make(seed: int) -> dict[str, Any]:
        size = n or SIZES[_scale()]
        gen = _gen(seed)
        a = torch.randn(size, generator=gen, device=_device(), dtype=torch.float32).to(dtype)
        b = torch.randn(size, generator=gen, device=_device(), dtype=torch.float32).to(dtype)
        return {"a": a, "b": b, "c": torch.empty_like(a), "N": size}

    return make


make_inputs = _add(torch.float32)


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return c = a + b (half inputs add in half, as __hadd rounds)."""
    return {"c": inputs["a"] + inputs["b"]}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.add."""
    return inputs["a"] + inputs["b"]


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return a and b read and c written once."""
    return 3 * inputs["a"].element_size() * int(inputs["N"])


def _relu_inputs(seed: int) -> dict[str, Any]:
    n = SIZES[_scale()]
    x = torch.randn(n, generator=_gen(seed), device=_device(), dtype=torch.float32)
    return {"a": x, "c": torch.empty_like(x), "N": n}


def _relu(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {"c": torch.relu(inputs["a"])}


def _relu_eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.relu (the relu variants have no input `b`)."""
    return torch.relu(inputs["a"])


def _relu_bytes(inputs: dict[str, Any]) -> int:
    """Return x read and y written once."""
    return 2 * inputs["a"].element_size() * int(inputs["N"])


_per = lambda k: lambda i: ((_cdiv(i["N"], 256), 1, 1), (256 // k, 1, 1))  # noqa: E731
_RELU = {"a": "x", "c": "y"}
_GPU_MODE = {"a": "A", "b": "B", "c": "C"}
VARIANTS: dict[str, dict[str, Any]] = {
    "leetcuda-elementwise/f32": {"kernel": "elementwise_add_f32_kernel", "launch": _per(1)},
    "leetcuda-elementwise/f32x4": {"kernel": "elementwise_add_f32x4_kernel", "launch": _per(4)},
    **{
        f"leetcuda-elementwise-f16/{tag}": {
            "kernel": f"elementwise_add_{tag}_kernel",
            "make_inputs": _add(torch.float16),
            "launch": _per(k),
        }
        for tag, k in (("f16", 1), ("f16x2", 2), ("f16x8", 8), ("f16x8_pack", 8))
    },
    "leetcuda-relu/f32": {
        "kernel": "relu_f32_kernel",
        "rename": _RELU,
        "make_inputs": _relu_inputs,
        "reference": _relu,
        "eager": _relu_eager,
        "bytes_moved": _relu_bytes,
        "launch": _per(1),
    },
    "leetcuda-relu/f32x4": {
        "kernel": "relu_f32x4_kernel",
        "rename": _RELU,
        "make_inputs": _relu_inputs,
        "reference": _relu,
        "eager": _relu_eager,
        "bytes_moved": _relu_bytes,
        "launch": _per(4),
    },
    "gpumode-coarsening/plain": {
        "kernel": "VecAdd",
        "rename": _GPU_MODE,
        "make_inputs": _add(torch.float32, 1024),
        "launch": lambda i: ((4, 1, 1), (256, 1, 1)),
    },
    "gpumode-coarsening/coarsened": {
        "kernel": "VecAddCoarsened",
        "rename": _GPU_MODE,
        "make_inputs": _add(torch.float32, 1024),
        "launch": lambda i: ((2, 1, 1), (256, 1, 1)),
    },
}
launch = VARIANTS["leetcuda-elementwise/f32"]["launch"]


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
    base_launch, base_eager = spec.pop("launch", None), spec.pop("eager", ns.get("eager"))
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
