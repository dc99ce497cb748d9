"""Problem: per-block partial sums of a float32 vector (public lineage bbuf-reduce, lineages/public/INDEX.yaml).

Every version writes one partial sum per block into `g_odata`; how many elements a block covers depends on the
version (256, 512, or 32768 for the coarsened v6/v7; v8 strides over the grid in 4-float packs), so each variant
has its own reference. The vector length is fixed by the grid (v0-v6 take no length); `full` is the authors'
32 Mi floats (128 MiB, about 30 us at H200 bandwidth), `tiny` 64 Ki. Inputs are uniform in [0, 1) so that the
partial sums' relative error is meaningful. `variant(key)` gives one version's kernel, launch and reference.
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


SIZES = {"full": 32 * 1024 * 1024, "tiny": 65536}
kernel = "reduce_v0"
roofline = "memory"
V8_BLOCKS = 1024


def _inputs(blocks: Any) -> Any:
    """Return make_inputs with the partial-sum output sized to the blocks the version's launch writes.

    Every entry of `out` is compared, and the checker poisons outputs: an output longer than the grid leaves
    entries no block writes (the 2026-12-01 batch compared 1024 entries of which v0 wrote 256).
    """

    def make(seed: int) -> dict[str, Any]:
        n = SIZES[_scale()]
        x = torch.rand(n, generator=_gen(seed), device=_device(), dtype=torch.float32)
        return {"x": x, "out": torch.empty(blocks(n), device=_device()), "n": n}

    return make


make_inputs = _inputs(lambda n: n // 256)


def _blocks(per_block: int) -> Any:
    def ref(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
        x = inputs["x"].double()
        sums = x.view(-1, per_block).sum(1).float()
        out = torch.zeros_like(inputs["out"])
        out[: sums.numel()] = sums
        return {"out": out}

    return ref


def _v8(inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Return the partial sums of the grid-stride loop over 4-float packs (thread t takes packs t, t + T, ...)."""
    packs = inputs["x"].double().view(-1, 4).sum(1)
    threads = V8_BLOCKS * 256
    owner = (torch.arange(packs.numel(), device=packs.device) % threads) // 256
    out = torch.zeros_like(inputs["out"])
    out[:V8_BLOCKS] = (
        torch.zeros(V8_BLOCKS, dtype=torch.float64, device=packs.device).index_add_(0, owner, packs).float()
    )
    return {"out": out}


reference = _blocks(256)


def eager(inputs: dict[str, Any]) -> torch.Tensor:
    """Return torch.sum of the vector (a full reduction, for scale)."""
    return inputs["x"].sum()


def bytes_moved(inputs: dict[str, Any]) -> int:
    """Return the vector read once."""
    return 4 * int(inputs["n"])


_IO = {"x": "g_idata", "out": "g_odata"}
_one = lambda per: lambda i: ((int(i["n"]) // per, 1, 1), (256, 1, 1))  # noqa: E731
# Every version reads the same vector; only the partial-sum output is as long as its grid (`inputs_id`: the
# versions are compared with each other, bench/public_steps.py).
_SAME_X = "x: the vector of SIZES floats uniform in [0, 1), seeded"
_per = lambda per: _inputs(lambda n: n // per)  # noqa: E731
VARIANTS: dict[str, dict[str, Any]] = {
    **{
        f"bbuf-reduce/v{v}": {
            "kernel": k,
            "rename": _IO,
            "launch": _one(256),
            "make_inputs": _per(256),
            "inputs_id": _SAME_X,
        }
        for v, k in ((0, "reduce_v0"), (1, "reduce_v1"), (2, "reduce_v2"))
    },
    "bbuf-reduce/v3": {
        "kernel": "reduce_v3",
        "rename": _IO,
        "launch": _one(512),
        "make_inputs": _per(512),
        "inputs_id": _SAME_X,
        "reference": _blocks(512),
    },
    "bbuf-reduce/v4": {
        "kernel": "reduce_v4",
        "rename": _IO,
        "launch": _one(512),
        "make_inputs": _per(512),
        "inputs_id": _SAME_X,
        "reference": _blocks(512),
    },
    "bbuf-reduce/v5": {
        "kernel": "reduce_v5",
        "name_expression": "reduce_v5<256>",
        "rename": _IO,
        "launch": _one(512),
        "make_inputs": _per(512),
        "inputs_id": _SAME_X,
        "reference": _blocks(512),
    },
    "bbuf-reduce/v6": {
        "kernel": "reduce_v6",
        "name_expression": "reduce_v6<256, 128>",
        "rename": _IO,
        "launch": _one(32768),
        "make_inputs": _per(32768),
        "inputs_id": _SAME_X,
        "reference": _blocks(32768),
    },
    "bbuf-reduce/v7": {
        "kernel": "reduce7",
        "name_expression": "reduce7<256, 128>",
        "rename": _IO,
        "launch": _one(32768),
        "make_inputs": _per(32768),
        "inputs_id": _SAME_X,
        "reference": _blocks(32768),
    },
    "bbuf-reduce/v8": {
        "kernel": "reduce_v8",
        "rename": _IO,
        "launch": lambda i: ((V8_BLOCKS, 1, 1), (256, 1, 1)),
        "make_inputs": _inputs(lambda n: V8_BLOCKS),
        "inputs_id": _SAME_X,
        "reference": _v8,
    },
}
launch = VARIANTS["bbuf-reduce/v0"]["launch"]


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
