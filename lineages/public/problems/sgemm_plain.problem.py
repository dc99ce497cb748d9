"""Problem: C = A @ B for row-major float32 A (M x K), B (K x N) (public SGEMM lineages without alpha/beta).

Lineages: cudacodes-sgemm, learncuda-sgemm, leetcuda-sgemm, leetcuda-sgemm-async, gpumode-matmul-tiling.

The versions take `(A, B, C, M, N, K)` under several names; each variant renames and uses its repository's
launch. Sizes are square multiples of 128 (several versions have no bounds checks): `full` 4096, `tiny` 256.
learn-cuda v3-v6 take the template arguments of the repository's host functions (v6: matmul_v6a).
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


SIZES = {"full": 4096, "tiny": 256}
kernel = "naive_xgemm_kernel"
roofline = "compute"
tolerance = (1e-4, 1e-3)  # (rtol, atol): float32 accumulation over K = 4096 against a float64 reference


def make_inputs(seed: int) -> dict[str, Any]:
    """Return A and B uniform in [-1, 1), the output C, square sizes."""
    n = SIZES[_scale()]
    gen = _gen(seed)
    rand = lambda: 2 * torch.rand(n, n, generator=gen, device=_device(), dtype=torch.float32) - 1  # noqa: E731
    return {"A": rand(), "B": rand(), "C": torch.empty(n, n, device=_device()), "M": n, "N": n, "K": n}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return C = A B, accumulated in float64."""
    return {"C": (inputs["A"].double() @ inputs["B"].double()).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.mm."""
    return torch.mm(inputs["A"], inputs["B"])


def flops(inputs: dict[str, Any]) -> int:
    """Return 2 M N K."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return A and B read once and C written once."""
    m, n, k = (int(inputs[x]) for x in ("M", "N", "K"))
    return 4 * (m * k + k * n + m * n)


_CC = {"A": "Ad", "B": "Bd", "C": "Cd"}
_LC = {"A": "a", "B": "b", "C": "c"}
_tiles = lambda t, block: lambda i: ((_cdiv(i["N"], t), _cdiv(i["M"], t), 1), block)  # noqa: E731
_flat = lambda bm, bn, threads: lambda i: ((_cdiv(i["M"] * i["N"], bm * bn), 1, 1), (threads, 1, 1))  # noqa: E731
VARIANTS: dict[str, dict[str, Any]] = {
    "cudacodes-sgemm/naive": {"kernel": "naive_xgemm_kernel", "rename": _CC, "launch": _tiles(32, (32, 32, 1))},
    "cudacodes-sgemm/tiled": {"kernel": "tiled_xgemm_kernel", "rename": _CC, "launch": _tiles(32, (32, 32, 1))},
    "cudacodes-sgemm/coarse1d": {
        "kernel": "tiled_xgemm_1d_coarse_kernel",
        "rename": _CC,
        "launch": _tiles(64, (64 * 64 // 8, 1, 1)),
    },
    "learncuda-sgemm/v1": {
        "kernel": "matmul_v1_kernel",
        "launch": lambda i: ((_cdiv(i["N"], 32), _cdiv(i["M"], 8), 1), (32, 8, 1)),
    },
    "learncuda-sgemm/v2": {
        "kernel": "matmul_v2_kernel",
        "name_expression": "matmul_v2_kernel<32>",
        "launch": _tiles(32, (32, 32, 1)),
    },
    # v3-v6: the template arguments and 1-D launches of the repository's host functions matmul_v3 .. matmul_v6a
    # (02a_matmul_simt/matmul.cu; v6 is v6a, the 16-byte loads without the transposed A tile of v6b)
    "learncuda-sgemm/v3": {
        "kernel": "matmul_v3_kernel",
        "name_expression": "matmul_v3_kernel<256, 128, 128, 32>",
        "launch": _flat(128, 128, 256),
    },
    "learncuda-sgemm/v4": {
        "kernel": "matmul_v4_kernel",
        "name_expression": "matmul_v4_kernel<128, 128, 32, 8, 8>",
        "launch": _flat(128, 128, 256),
    },
    "learncuda-sgemm/v5": {
        "kernel": "matmul_v5_kernel",
        "name_expression": "matmul_v5_kernel<128, 64, 64, 32, 32, 16, 32, 4>",
        "launch": _flat(128, 64, 256),
    },
    "learncuda-sgemm/v6": {
        "kernel": "matmul_v6_kernel",
        "name_expression": "matmul_v6_kernel<128, 128, 16, 64, 64, 16, 32, 4, false>",
        "launch": _flat(128, 128, 128),
    },
    "leetcuda-sgemm/naive": {"kernel": "sgemm_naive_f32_kernel", "rename": _LC, "launch": _tiles(32, (32, 32, 1))},
    "leetcuda-sgemm/sliced_k": {
        "kernel": "sgemm_sliced_k_f32_kernel",
        "name_expression": "sgemm_sliced_k_f32_kernel<32, 32, 32>",
        "rename": _LC,
        "launch": _tiles(32, (32, 32, 1)),
    },
    "leetcuda-sgemm/t8x8_f32x4": {
        "kernel": "sgemm_t_8x8_sliced_k_f32x4_kernel",
        "name_expression": "sgemm_t_8x8_sliced_k_f32x4_kernel<128, 128, 8, 8, 8>",
        "rename": _LC,
        "launch": _tiles(128, (16, 16, 1)),
    },
    "leetcuda-sgemm/t8x8_bcf_dbuf": {
        "kernel": "sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf_kernel",
        "name_expression": "sgemm_t_8x8_sliced_k_f32x4_bcf_dbuf_kernel<128, 128, 8, 8, 8, 0>",
        "rename": _LC,
        "launch": _tiles(128, (16, 16, 1)),
    },
    "leetcuda-sgemm-async/t8x8_dbuf": {
        "kernel": "sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf_kernel",
        "name_expression": "sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf_kernel<128, 128, 16, 8, 8, 0>",
        "rename": _LC,
        "launch": _tiles(128, (16, 16, 1)),
    },
    "leetcuda-sgemm-async/t8x8_dbuf_async": {
        "kernel": "sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf_async_kernel",
        "name_expression": "sgemm_t_8x8_sliced_k16_f32x4_bcf_dbuf_async_kernel<128, 128, 16, 8, 8, 0>",
        "rename": _LC,
        "launch": _tiles(128, (16, 16, 1)),
    },
    "gpumode-matmul-tiling/simple": {
        "kernel": "matrixMulSimple",
        "rename": {"N": "width"},
        "launch": _tiles(16, (16, 16, 1)),
    },
    "gpumode-matmul-tiling/tiled": {
        "kernel": "matrixMulTiled",
        "rename": {"N": "width"},
        "launch": _tiles(16, (16, 16, 1)),
    },
}
launch = VARIANTS["cudacodes-sgemm/naive"]["launch"]


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
