"""Problem: y = A @ x for a row-major float32 matrix A (M x N) (public gemv lineages).

Lineages: bbuf-sgemv, cudacodes-sgemv, leetcuda-sgemv, leetcuda-hgemv (half).

The versions name their parameters differently (`A, x, y, M, N`; `matd, vecd, resd, M, N`; `a, x, y, M, K`);
each variant renames this file's names to its kernel's and uses the launch of its repository's host code.
`full` is M = 16384, N = 8192 (512 MiB of matrix, about 110 us at H200 bandwidth), `tiny` 64 x 256 (N a
multiple of 128, as the float4 versions need). bbuf v2 is meant for short rows (N = 16) and has its own sizes.
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


SIZES = {"full": (16384, 8192), "tiny": (64, 256)}
SHORT_ROWS = {"full": (1 << 22, 16), "tiny": (64, 16)}
kernel = "Sgemv_v0"
roofline = "memory"
# (rtol, atol) for float32: a dot product of N = 8192 standard-normal terms accumulated in float32 has a rounding
# error of about sqrt(N) * 2**-24 * sqrt(N) ~ 5e-4 (random walk of N roundings of partial sums of size ~ sqrt(N));
# outputs near zero (cancellation) fail the gate's default atol 1e-5 (the 2026-12-01 batch: 2 to 92 of 16384
# outputs, max error 1.6e-3 for the sequential per-thread sum). 5e-3 is ten times the expected error.
tolerance = (1e-4, 5e-3)


def _inputs(m: int, n: int, seed: int, dtype: torch.dtype = torch.float32) -> dict[str, Any]:
    gen = _gen(seed)
    a = torch.randn(m, n, generator=gen, device=_device(), dtype=torch.float32).to(dtype)
    x = torch.randn(n, generator=gen, device=_device(), dtype=torch.float32).to(dtype)
    return {"A": a, "x": x, "y": torch.empty(m, device=_device(), dtype=dtype), "M": m, "N": n}


# LeetCUDA's hgemv kernels accumulate in half: rows of K = 1024 (128 MiB of matrix at M = 65536). A lane adds 32
# (k32) or 8 x 4 (k128_x4) products and the warp adds the lanes, about 40 half roundings of partial sums up to
# |y| ~ 32, where half's spacing is 2**-5: the expected error is about sqrt(40) * 2**-6 ~ 0.1; atol 0.25 (eight
# spacings at 32) and rtol 1e-2.
HALF_ROWS = {"full": (65536, 1024), "tiny": (64, 256)}
HALF_TOLERANCE = (1e-2, 0.25)


def _half_inputs(seed: int) -> dict[str, Any]:
    return _inputs(*HALF_ROWS[_scale()], seed, torch.float16)


def _half_reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {"y": (inputs["A"].double() @ inputs["x"].double()).half()}


def make_inputs(seed: int) -> dict[str, Any]:
    """Return A and x standard normal, the output y, and the sizes."""
    return _inputs(*SIZES[_scale()], seed)


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return y = A x, accumulated in float64."""
    return {"y": (inputs["A"].double() @ inputs["x"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.mv."""
    return torch.mv(inputs["A"], inputs["x"])


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return A read once, x read once, y written once."""
    m, n = int(inputs["M"]), int(inputs["N"])
    return 4 * (m * n + n + m)


_CC = {"A": "matd", "x": "vecd", "y": "resd"}
_LC = {"A": "a", "N": "K"}
_warp_rows = lambda rows: lambda i: ((_cdiv(i["M"], rows), 1, 1), (32, rows, 1))  # noqa: E731
VARIANTS: dict[str, dict[str, Any]] = {
    "bbuf-sgemv/v0": {"kernel": "Sgemv_v0", "launch": _warp_rows(4)},
    "bbuf-sgemv/v1": {"kernel": "Sgemv_v1", "launch": _warp_rows(4)},
    "bbuf-sgemv/v2": {
        "kernel": "Sgemv_v2",
        "name_expression": "Sgemv_v2<2>",
        "make_inputs": lambda seed: _inputs(*SHORT_ROWS[_scale()], seed),
        "launch": lambda i: ((_cdiv(i["M"], 8), 1, 1), (32, 4, 1)),
    },
    "cudacodes-sgemv/k1": {
        "kernel": "naive_sgemv_kernel",
        "rename": _CC,
        "launch": lambda i: ((_cdiv(i["M"], 1024), 1, 1), (1024, 1, 1)),
    },
    "cudacodes-sgemv/k2": {
        "kernel": "coalesced_warp_sgmev_kernel",
        "rename": _CC,
        "launch": lambda i: ((int(i["M"]), 1, 1), (32, 1, 1)),
    },
    "cudacodes-sgemv/k3": {
        "kernel": "coalesced_warpblock_sgmev_kernel",
        "rename": _CC,
        "launch": lambda i: ((int(i["M"]), 1, 1), (64, 1, 1), 8),
    },
    "cudacodes-sgemv/k4": {
        "kernel": "vectorized_sgemv_kernel",
        "rename": _CC,
        "launch": lambda i: ((int(i["M"]), 1, 1), (64, 1, 1), 8),
    },
    "leetcuda-sgemv/k32": {"kernel": "sgemv_k32_f32_kernel", "rename": _LC, "launch": _warp_rows(4)},
    "leetcuda-sgemv/k128_x4": {"kernel": "sgemv_k128_f32x4_kernel", "rename": _LC, "launch": _warp_rows(4)},
    **{
        f"leetcuda-hgemv/{tag}": {
            "kernel": kernel_name,
            "rename": _LC,
            "make_inputs": _half_inputs,
            "reference": _half_reference,
            "tolerance": HALF_TOLERANCE,
            "launch": _warp_rows(4),
            "bytes_moved": lambda i: 2 * (int(i["M"]) * int(i["N"]) + int(i["N"]) + int(i["M"])),
        }
        for tag, kernel_name in (("k32", "hgemv_k32_f16_kernel"), ("k128_x4", "hgemv_k128_f16x4_kernel"))
    },
}
launch = VARIANTS["bbuf-sgemv/v0"]["launch"]


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
