"""Matchers and matcher helpers that several cards share: the one-element-per-thread shape (the coarsening and
grid-stride cards), index forms, the 16-byte vector types and the launches a region relates to.

A card's own matcher lives in its folder, `skills/<card-id>/<card_id>.py`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.facts_memory import (
    KernelSyntax,
    kernel_syntax,
    launches_of,
    linear,
    unparen,
)
from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import (
    Access,
    FileModel,
    Function,
    FunctionKind,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.spec_launch import is_spec_launch


def _index_node(ks: KernelSyntax, fn: Function, acc: Access) -> Any:
    start, end = fn.span(acc.index_span)
    return ks.node.descendant_for_byte_range(start, end)


def _within(span: tuple[int, int], node: Any, fn: Function) -> bool:
    lo, hi = node.start_byte - fn.base, node.end_byte - fn.base
    return lo <= span[0] and span[1] <= hi


def _related_launches(model: FileModel, fn: Function) -> tuple[Related, ...]:
    return tuple(
        Related(f"launched here with `<<<{launch.grid}, {launch.block}>>>`", host.span(launch.span))
        for host, launch in launches_of(model, fn.name)[:5]
        if not is_spec_launch(launch)
    )


def index_form(ks: KernelSyntax, fn: Function, acc: Access) -> Any:
    """Return the linear form of a one-dimensional global access's index."""
    if len(acc.indices) != 1:
        return None
    node = _index_node(ks, fn, acc)
    return linear(ks, node) if node is not None else None


@matcher("one_element_per_thread")
def one_element_per_thread(ctx: MatchContext, factor: int = 1) -> Iterator[Region]:
    """Find kernels where each thread handles one element under `if (i < n)`, with `i` its global index."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or not fn.branches:
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    for shape in ks.elementwise:
        if shape.form == "loop":
            continue
        cond = shape.cond
        yield Region(
            AnchorKind.BRANCH,
            fn,
            (cond.start_byte - fn.base, cond.end_byte - fn.base),
            f"element:{shape.var}:{shape.stmt.start_byte - fn.base}",
            {
                "kernel": fn.name,
                "shape": shape,
                "index": shape.var,
                "bound": ks.text(shape.bound),
                "guard": " ".join(ks.text(shape.stmt).split())
                if shape.form == "return"
                else f"if ({shape.var} < {ks.text(unparen(shape.bound))})",
                "factor": factor,
                "_related": _related_launches(ctx.model, fn),
            },
        )


# 11. warp-divergent-branch
