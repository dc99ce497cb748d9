"""Contraction without tensor cores: a naive half or bfloat16 matrix multiply rewritten onto `mma.sync` (and a float
one onto TF32 `mma.sync` when its problem file's tolerance admits TF32's rounding).

The matcher is the untiled-contraction card's recogniser (the same kernel model reading: any layout, any
spelling, float accumulation of products converted to float), restricted to half and bfloat16 operands; the
rewrite is the tensor-core kernel of `warpwise.skills.rewrites.contraction_mma` with the card's default shape
(the fastest timed on the H200: 128 x 128 x 32 tiles, 3 `cp.async` stages, 2 x 2 warps of 64 x 64 outputs, two
blocks per SM; bench/results/contraction_mma2-2026-12-02.md),
the launches in the file and a problem file's launch changed to the grid of output tiles exactly as the
untiled-contraction card changes them. Unlike that card's rewrite, this one is not bit-identical: the tensor cores
sum the (exact) products in their own order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.model import FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, matcher
from warpwise.skills.rewrite import Edit, RewriteContext
from warpwise.skills.rewrites.contraction_mma import MmaTiles
from warpwise.verify.launch import LaunchChange

CARD = "contraction-without-tensor-cores"


def _rules() -> Any:
    """Return the untiled-contraction card's rules module (its recogniser, launches and generators)."""
    from warpwise.skills.library import card_rules

    return card_rules("untiled-contraction")


@matcher("contraction_without_tensor_cores")
def contraction_without_tensor_cores(ctx: MatchContext) -> Iterator[Region]:
    """Find naive contractions of half or bfloat16 operands (accumulated in float) that no tensor core runs."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or fn.shared:
        return
    c, _ = _rules().recognise(ctx.model, fn)
    if c is None:
        return
    if c.convert:
        precision = "bfloat16" if "bfloat16" in c.convert else "half"
        engine, caveat = "mma.sync, 128 x 128 tiles, 3 cp.async stages", "sums in another order"
    elif tf32_admitted(ctx.model, fn.name):
        precision = "float (TF32: its problem file's tolerance admits it)"
        engine = "TF32 mma.sync, 128 x 128 tiles, 3 cp.async stages"
        caveat = "operands rounded to TF32, sums in another order"
    else:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"tensor-cores:{fn.name}",
        {
            "kernel": fn.name,
            "contraction": c,
            "layout": c.layout,
            "a": c.a.name,
            "b": c.b.name,
            "acc": c.acc,
            "precision": precision,
            "engine": engine,
            "caveat": caveat,
        },
    )


def tf32_admitted(model: Any, kernel: str) -> bool:
    """Return whether the kernel's problem file states a tolerance at least `TF32_TOLERANCE` (read once per model).

    Float operands rounded to TF32 give results within that tolerance only (`contraction_mma.TF32_TOLERANCE`), so
    the rewrite is offered for a float kernel only when its own problem says such results are correct; the gate
    then compares with that tolerance (the spec carries it).
    """
    memo = model.memo.setdefault("contraction-without-tensor-cores.tf32", {})
    if kernel not in memo:
        from warpwise.skills.rewrites.contraction_mma import TF32_TOLERANCE
        from warpwise.skills.spec_launch import kernel_spec
        from warpwise.verify.spec import ProblemSpec, problem_tolerance

        spec = kernel_spec(model, kernel) if model.path else None
        tol = (
            problem_tolerance(spec.run.problem_source or "")
            if isinstance(spec, ProblemSpec) and spec.source == "problem_file"
            else None
        )
        memo[kernel] = tol is not None and all(x >= y for x, y in zip(tol, TF32_TOLERANCE, strict=True))
    return bool(memo[kernel])


@check("tensor_core_launches_rewritable")
def tensor_core_launches_rewritable(ctx: CheckContext) -> Verdict:
    """Hold when every launch of the kernel in the file can be rewritten to the grid of output tiles."""
    result: Verdict = _rules().contraction_launches_rewritable(ctx)
    return result


PORTABLE = MmaTiles(128, 128, 32, 2, 2, 3, 2)
"""The shape of the default quick fix: `mma.sync` with 48 KiB of static shared memory, which builds and runs on any GPU
with tensor cores (the search tries the faster Hopper-only wgmma shapes first on the GPU it runs on)."""
PORTABLE_TF32 = MmaTiles(128, 128, 32, 2, 2, 3, 2, tf32=True)
"""The same for float operands under the TF32 option: `mma.sync` m16n8k8 on any GPU with TF32 tensor cores (0.892 ms
for `matmul_naive` at 4096^3 on the H200, bench/results/contraction_tf32-2026-12-03-s8.md; the search tries the
Hopper-only register-operand wgmma shapes first)."""


def _tiles(args: dict[str, Any], c: Any) -> MmaTiles:
    rules = _rules()
    if "wm" in args:
        return rules.tiles_of(dict(args))
    return PORTABLE if c is None or c.convert else PORTABLE_TF32


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the kernel's body with the tensor-core kernel and rewrite its launches in the file."""
    c = ctx.region.facts.get("contraction")
    args = _rules().tile_args(_tiles(ctx.args, c))
    return _rules().rewrite(RewriteContext(ctx.model, ctx.function, ctx.region, args))


def problem_launch_changes(matches: list[Any]) -> tuple[LaunchChange, ...] | None:
    """Return the launch change of the rewrite for a problem file's launch of the first match's kernel."""
    if not matches:
        return None
    region = matches[0].region
    c = region.facts.get("contraction")
    if c is None:
        return None
    return _rules().launch_changes(c, region.function, _tiles(dict(matches[0].card.header.anchor.args), c))


__all__ = [
    "contraction_without_tensor_cores",
    "problem_launch_changes",
    "rewrite",
    "tensor_core_launches_rewritable",
    "tf32_admitted",
]
