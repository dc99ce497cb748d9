"""Problem: y = x^T for a row-major float32 matrix x (row x col) (public lineage leetcuda-transpose).

All versions take `(x, y, row, col)`. The 1-D versions launch blocks of 256 threads over the flat index (a
quarter as many for float4); the 2-D ones 16 x 16 blocks, four elements per thread along rows for the float4
row2col versions (the repository's bindings). `full` 8192 x 8192 (512 MiB moved), `tiny` 64 x 128.
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


SIZES = {"full": (8192, 8192), "tiny": (64, 128)}
kernel = "mat_transpose_f32_col2row_kernel"
roofline = "memory"


def make_inputs(seed: int) -> dict[str, Any]:
    """Return x standard normal, the output y (col x row), and the sizes."""
    r, c = SIZES[_scale()]
    x = torch.randn(r, c, generator=_gen(seed), device=_device(), dtype=torch.float32)
    return {"x": x, "y": torch.empty(c, r, device=_device()), "row": r, "col": c}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the transpose."""
    return {"y": inputs["x"].t().contiguous()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return a contiguous transpose."""
    return inputs["x"].t().contiguous()


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return x read and y written once."""
    return 8 * int(inputs["row"]) * int(inputs["col"])


_flat = lambda pack: lambda i: ((_cdiv(int(i["row"]) * int(i["col"]), 256) // pack, 1, 1), (256, 1, 1))  # noqa: E731
_two_d = lambda er, ec: lambda i: ((_cdiv(i["col"], 16 * ec), _cdiv(i["row"], 16 * er), 1), (16, 16, 1))  # noqa: E731
VARIANTS: dict[str, dict[str, Any]] = {
    "leetcuda-transpose/col2row": {"kernel": "mat_transpose_f32_col2row_kernel", "launch": _flat(1)},
    "leetcuda-transpose/row2col": {"kernel": "mat_transpose_f32_row2col_kernel", "launch": _flat(1)},
    "leetcuda-transpose/row2col2d": {"kernel": "mat_transpose_f32_row2col2d_kernel", "launch": _two_d(1, 1)},
    "leetcuda-transpose/x4_row2col2d": {"kernel": "mat_transpose_f32x4_row2col2d_kernel", "launch": _two_d(4, 1)},
    "leetcuda-transpose/x4_shared_row2col2d": {
        "kernel": "mat_transpose_f32x4_shared_row2col2d_kernel",
        "launch": _two_d(4, 1),
    },
    "leetcuda-transpose/x4_shared_bcf_row2col2d": {
        "kernel": "mat_transpose_f32x4_shared_bcf_row2col2d_kernel",
        "launch": _two_d(4, 1),
    },
    "leetcuda-transpose/x4_shared_bcf_merge": {
        "kernel": "mat_transpose_f32x4_shared_bcf_merge_write_row2col2d_kernel",
        "launch": _two_d(4, 1),
    },
}
launch = VARIANTS["leetcuda-transpose/col2row"]["launch"]


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
