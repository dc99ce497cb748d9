"""Problem: softmax over each row of a row-major float32 matrix (M x N) (public softmax lineages).

Lineages: cudacodes-softmax, learncuda-softmax.

`full` is the cudacodes authors' shape, 1024 x 32768 (128 MiB), `tiny` 8 x 1000 (a row length that is not a
multiple of 4, for the float4 version's tail). Each variant renames this file's `x, y` to its kernel's names
and uses the launch of its repository's host code.
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


SIZES = {"full": (1024, 32768), "tiny": (8, 1000)}
kernel = "softmax_kernel_0"
roofline = "memory"


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x standard normal, the output y, and the sizes."""
    m, n = SIZES[_scale()]
    x = torch.randn(m, n, generator=_gen(seed), device=_device(), dtype=torch.float32)
    return {"x": x, "y": torch.empty_like(x), "M": m, "N": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the row softmax."""
    return {"y": torch.softmax(inputs["x"].double(), dim=1).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.softmax."""
    return torch.softmax(inputs["x"], dim=1)


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return x read once and y written once."""
    return 8 * int(inputs["M"]) * int(inputs["N"])


_K01 = {"x": "matd", "y": "resd"}
_K25 = {"x": "xd", "y": "resd"}
_LC = {"x": "input", "y": "output"}
_rows = lambda i: ((int(i["M"]), 1, 1), (1024, 1, 1))  # noqa: E731


def _learncuda(floats_per_thread: int) -> Any:
    """Return the launch of learn-cuda's 04_softmax host code: one block per row, 256 threads for rows up to 1024
    long (else 1024), dynamic shared memory of `floats_per_thread` floats per thread (1 naive, 2 online: float2)."""

    def launch(i: dict[str, Any]) -> Any:
        block = 256 if int(i["N"]) <= 1024 else 1024
        return ((int(i["M"]), 1, 1), (block, 1, 1), 4 * block * floats_per_thread)

    return launch


VARIANTS: dict[str, dict[str, Any]] = {
    "cudacodes-softmax/k0": {
        "kernel": "softmax_kernel_0",
        "rename": _K01,
        "launch": lambda i: ((_cdiv(i["M"], 1024), 1, 1), (1024, 1, 1)),
    },
    "cudacodes-softmax/k1": {
        "kernel": "softmax_kernel_1",
        "rename": _K01,
        "launch": lambda i: ((_cdiv(i["M"], 1024), 1, 1), (1024, 1, 1)),
    },
    "cudacodes-softmax/k2": {"kernel": "softmax_kernel_2", "rename": _K25, "launch": _rows},
    "cudacodes-softmax/k3": {"kernel": "softmax_kernel_3", "rename": _K25, "launch": _rows},
    "cudacodes-softmax/k4": {
        "kernel": "softmax_kernel_4",
        "rename": _K25,
        "launch": lambda i: ((int(i["M"]), 1, 1), (1024, 1, 1), 128),
        # not run: the repository's softmax/Makefile builds with nvcc's --extended-lambda (its warp reductions
        # pass `[] __device__ (...)` lambdas), and NVRTC rejects annotated lambdas in JIT mode whatever the options
        # (NVRTC 13.0, 2026-12-02: "__host__ or __device__ annotation on lambda is not allowed in JIT mode";
        # --extended-lambda is an unrecognized option); measuring it needs nvcc, which the GPU machine lacks
        "unsupported": "needs nvcc's --extended-lambda (annotated __device__ lambdas); NVRTC rejects them in JIT mode",
    },
    "cudacodes-softmax/k5": {
        "kernel": "softmax_kernel_5",
        "rename": _K25,
        # the repository's run_kernel_5: block (TILE_SIZE = 4, 32), grid cdiv(M, TILE_SIZE). Read 2026-12-02 after
        # the batch found NaN: the launch is the repository's; the kernel computes its row as
        # `blockDim.x * TILE_SIZE + threadIdx.y` (blockDim, not blockIdx), so every block writes the same rows and
        # the others stay unwritten: the version is incorrect as published, not through this file
        "launch": lambda i: ((_cdiv(i["M"], 4), 1, 1), (4, 32, 1)),
    },
    "learncuda-softmax/naive": {
        "kernel": "softmax_naive_kernel",
        "rename": _LC,
        "launch": _learncuda(1),
    },
    "learncuda-softmax/online": {
        "kernel": "softmax_online_kernel",
        "rename": _LC,
        "launch": _learncuda(2),
    },
}
launch = VARIANTS["cudacodes-softmax/k0"]["launch"]


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
