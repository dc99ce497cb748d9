"""Problem: the sum of a float32 vector into one scalar (public lineages leetcuda-reduce, gpumode-reduce).

LeetCUDA's kernels and gpu-mode's multi-block ones add each block's sum to `y` with atomicAdd, so `y` starts at
zero (inout). gpu-mode's first three versions run one block of 1024 threads over exactly 2048 elements (fixed by
the kernel), and the first two reduce in place in the input, which is therefore workspace (`scratch`, not
compared). `full` is 2^26 elements (256 MiB), `tiny` 4096. Inputs are uniform in [0, 1).
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


SIZES = {"full": 1 << 26, "tiny": 4096}
kernel = "block_all_reduce_sum_f32_f32_kernel"
roofline = "memory"
inout = ("y",)


def _inputs(n: int | None = None) -> Any:
    def make(seed: int) -> dict[str, Any]:
        size = n or SIZES[_scale()]
        x = torch.rand(size, generator=_gen(seed), device=_device(), dtype=torch.float32)
        return {"x": x, "y": torch.zeros(1, device=_device()), "N": size}

    return make


make_inputs = _inputs()


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the sum, accumulated in float64."""
    return {"y": inputs["x"].double().sum().reshape(1).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.sum."""
    return inputs["x"].sum()


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the vector read once."""
    return 4 * int(inputs["N"])


_LC = {"x": "a"}
_ONE_BLOCK = {"x": "input", "y": "output"}
VARIANTS: dict[str, dict[str, Any]] = {
    "leetcuda-reduce/f32": {
        "kernel": "block_all_reduce_sum_f32_f32_kernel",
        "name_expression": "block_all_reduce_sum_f32_f32_kernel<256>",
        "rename": _LC,
        "launch": lambda i: ((_cdiv(i["N"], 256), 1, 1), (256, 1, 1)),
    },
    "leetcuda-reduce/f32x4": {
        "kernel": "block_all_reduce_sum_f32x4_f32_kernel",
        "name_expression": "block_all_reduce_sum_f32x4_f32_kernel<64>",
        "rename": _LC,
        "launch": lambda i: ((_cdiv(i["N"], 256), 1, 1), (64, 1, 1)),
    },
    "gpumode-reduce/simple": {
        "kernel": "SimpleSumReductionKernel",
        "rename": _ONE_BLOCK,
        "make_inputs": _inputs(2048),
        "inout": (),
        "scratch": ("x",),
        "launch": lambda i: ((1, 1, 1), (1024, 1, 1)),
    },
    "gpumode-reduce/divergence": {
        "kernel": "FixDivergenceKernel",
        "rename": _ONE_BLOCK,
        "make_inputs": _inputs(2048),
        "inout": (),
        "scratch": ("x",),
        "launch": lambda i: ((1, 1, 1), (1024, 1, 1)),
    },
    "gpumode-reduce/shared": {
        "kernel": "SharedMemoryReduction",
        "rename": _ONE_BLOCK,
        "make_inputs": _inputs(2048),
        "inout": (),
        "launch": lambda i: ((1, 1, 1), (1024, 1, 1)),
    },
    "gpumode-reduce/segment": {
        "kernel": "SharedMemoryReduction",
        "rename": {**_ONE_BLOCK, "N": "n"},
        "launch": lambda i: ((_cdiv(i["N"], 1024), 1, 1), (1024, 1, 1)),
    },
    "gpumode-reduce/coarsening": {
        "kernel": "CoarsenedReduction",
        "rename": {**_ONE_BLOCK, "N": "size"},
        "launch": lambda i: ((_cdiv(i["N"], 2048), 1, 1), (1024, 1, 1)),
    },
}
launch = VARIANTS["leetcuda-reduce/f32"]["launch"]


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
