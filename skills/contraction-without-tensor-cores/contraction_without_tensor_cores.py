"""Contraction without tensor cores: a naive half or bfloat16 matrix multiply rewritten onto `mma.sync`.

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
    if c is None or not c.convert:
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
            "precision": "bfloat16" if "bfloat16" in c.convert else "half",
        },
    )


@check("tensor_core_launches_rewritable")
def tensor_core_launches_rewritable(ctx: CheckContext) -> Verdict:
    """Hold when every launch of the kernel in the file can be rewritten to the grid of output tiles."""
    result: Verdict = _rules().contraction_launches_rewritable(ctx)
    return result


PORTABLE = MmaTiles(128, 128, 32, 2, 2, 3, 2)
"""The shape of the default quick fix: `mma.sync` with 48 KiB of static shared memory, which builds and runs on any GPU
with tensor cores (the search tries the faster Hopper-only wgmma shapes first on the GPU it runs on)."""


def _tiles(args: dict[str, Any]) -> MmaTiles:
    rules = _rules()
    return rules.tiles_of(dict(args)) if "wm" in args else PORTABLE


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Replace the kernel's body with the tensor-core kernel and rewrite its launches in the file."""
    return _rules().rewrite(RewriteContext(ctx.model, ctx.function, ctx.region, _rules().tile_args(_tiles(ctx.args))))


def problem_launch_changes(matches: list[Any]) -> tuple[LaunchChange, ...] | None:
    """Return the launch change of the rewrite for a problem file's launch of the first match's kernel."""
    if not matches:
        return None
    region = matches[0].region
    c = region.facts.get("contraction")
    if c is None:
        return None
    return _rules().launch_changes(c, region.function, _tiles(dict(matches[0].card.header.anchor.args)))


__all__ = ["contraction_without_tensor_cores", "problem_launch_changes", "rewrite", "tensor_core_launches_rewritable"]
