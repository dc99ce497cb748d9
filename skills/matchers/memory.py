"""Matchers and matcher helpers that several cards share: the one-element-per-thread shape (the coarsening and
grid-stride cards), index forms, the 16-byte vector types and the launches a region relates to.

A card's own matcher lives in its folder, `skills/<card-id>/<card_id>.py`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import (
    Access,
    FileModel,
    Function,
    FunctionKind,
)
from warpwise.skills.facts_memory import (
    KernelSyntax,
    kernel_syntax,
    launches_of,
    linear,
    unparen,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher

VECTOR_TYPES = {
    "float": ("float4", 4),
    "int": ("int4", 4),
    "unsigned int": ("uint4", 4),
    "unsigned": ("uint4", 4),
    "uint32_t": ("uint4", 4),
    "int32_t": ("int4", 4),
    "double": ("double2", 2),
    "long long": ("longlong2", 2),
    "long long int": ("longlong2", 2),
    "unsigned long long": ("ulonglong2", 2),
    "int64_t": ("longlong2", 2),
    "uint64_t": ("ulonglong2", 2),
    # 2-byte types have no 16-byte vector type of their own: eight of them travel as one `uint4`, read back through
    # a pointer to the element type (the rewrite's packed form).
    "__half": ("uint4", 8),
    "half": ("uint4", 8),
    "__nv_bfloat16": ("uint4", 8),
    "nv_bfloat16": ("uint4", 8),
}


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
    )


# 1. scalar-global-access


# 2. uncoalesced-thread-mapping


def index_form(ks: KernelSyntax, fn: Function, acc: Access) -> Any:
    """Return the linear form of a one-dimensional global access's index."""
    if len(acc.indices) != 1:
        return None
    node = _index_node(ks, fn, acc)
    return linear(ks, node) if node is not None else None


# 3. strided-transpose-access


# 4. readonly-data-without-restrict


# 5. repeated-global-tile-reads


# 6. fixed-size-grid-without-stride-loop and 7. one-element-per-thread


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


# 8. block-size-limits-occupancy


# 9. missing-launch-bounds


# 10. synchronous-global-to-shared-copy


# 11. warp-divergent-branch
