"""Problem: C = alpha * A @ B + beta * C for row-major float32 A (M x K), B (K x N), C (M x N) (public lineages).

Shared by the versions of `wangzyon-sgemm` (lineages/public/INDEX.yaml), which all take
`(M, N, K, alpha, A, B, beta, C)`. `variant(key)` returns the namespace the GPU driver runs for one version
(`bench/gpu/public_lineages.py`): its kernel, NVRTC name expression, and the launch the repository's host code
uses; the module-level names are those of the first version, so the file also works as a plain problem file.
Sizes are square (the kernels index rows and columns as if M == N) and multiples of 128 (the block tile of
k4-k7, which have no bounds checks): `full` 4096 (one H200, about 2 ms at cuBLAS speed), `tiny` 256.
"""

from __future__ import annotations

import os
from typing import Any

import torch

SIZES = {"full": 4096, "tiny": 256}
kernel = "mysgemm_v1"
roofline = "compute"
tolerance = (1e-4, 1e-3)  # (rtol, atol): float32 accumulation over K = 4096 against a float64 reference
inout = ("C",)


def _size() -> int:
    scale = os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if scale not in SIZES:
        raise ValueError(f"WARPWISE_PROBLEM_SCALE={scale!r} is not one of {', '.join(SIZES)}")
    return SIZES[scale]


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_inputs(seed: int) -> dict[str, Any]:
    """Return A, B and C uniform in [-1, 1), alpha 1 and beta 0.5, square sizes."""
    n = _size()
    gen = torch.Generator(device=_device())
    gen.manual_seed(seed)
    rand = lambda *s: 2 * torch.rand(*s, generator=gen, device=_device(), dtype=torch.float32) - 1  # noqa: E731
    return {"M": n, "N": n, "K": n, "alpha": 1.0, "beta": 0.5, "A": rand(n, n), "B": rand(n, n), "C": rand(n, n)}


def reference(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return C = alpha A B + beta C, accumulated in float64."""
    a, b, c = (inputs[k].double() for k in ("A", "B", "C"))
    return {"C": (inputs["alpha"] * (a @ b) + inputs["beta"] * c).float()}


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return what torch runs for the operator (TF32 follows torch's setting)."""
    return torch.addmm(inputs["C"], inputs["A"], inputs["B"], beta=inputs["beta"], alpha=inputs["alpha"])


def flops(inputs: dict[str, Any]) -> int:
    """Return 2 M N K."""
    return 2 * int(inputs["M"]) * int(inputs["N"]) * int(inputs["K"])


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return A and B read once, C read and written once."""
    m, n, k = (int(inputs[x]) for x in ("M", "N", "K"))
    return 4 * (m * k + k * n + 2 * m * n)


def _grid(tile: int, threads: int) -> Any:
    return lambda i: ((-(-int(i["M"]) // tile), -(-int(i["N"]) // tile), 1), (threads, 1, 1))


VARIANTS: dict[str, dict[str, Any]] = {
    "wangzyon-sgemm/k1": {
        "kernel": "mysgemm_v1",
        "launch": lambda i: ((int(i["M"]) // 32, int(i["N"]) // 32, 1), (32, 32, 1)),
    },
    "wangzyon-sgemm/k2": {"kernel": "mysgemm_v2", "name_expression": "mysgemm_v2<32>", "launch": _grid(32, 1024)},
    "wangzyon-sgemm/k3": {
        "kernel": "mysgemm_v3",
        "name_expression": "mysgemm_v3<64, 64, 8, 8>",
        "launch": _grid(64, 512),
    },
    **{
        f"wangzyon-sgemm/k{v}": {
            "kernel": f"mysgemm_v{v}",
            "name_expression": f"mysgemm_v{v}<128, 128, 8, 8, 8>",
            "launch": _grid(128, 256),
        }
        for v in (4, 5, 6, 7)
    },
}
launch = VARIANTS["wangzyon-sgemm/k1"]["launch"]


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
