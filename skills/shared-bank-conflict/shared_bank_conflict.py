"""Rules of the `shared-bank-conflict` card (Pad the shared array): what only this card uses.

Registered here: matcher `shared_bank_conflicts`, check `shared_last_dim_constant`, check `shared_only_subscripted`,
check `shared_padding_fits`. The card's rewrite and the recognisers only it needs live here too; what several cards
share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library
imports this file by path as `warpwise.skills.cards.shared_bank_conflict`.
"""

from __future__ import annotations

from collections.abc import Iterator

from warpwise.analyzers.banks import warp_conflict
from warpwise.analyzers.facts import identifier_uses
from warpwise.analyzers.findings import Related, bank_ways, opaque_wrapper, padded_ways
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, MemorySpace
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import (
    CheckContext,
    MatchContext,
    Region,
    Verdict,
    check,
    holds,
    matcher,
    unknown,
    violated,
)
from warpwise.skills.rewrite import Edit, RewriteContext


def bank_conflict_ways(words: int, width: int) -> int:
    """Return how many threads of a warp share a bank for a word stride (per 32-lane wavefront)."""
    return bank_ways(words, width)


@matcher("shared_bank_conflicts")
def shared_bank_conflicts(ctx: MatchContext) -> Iterator[Region]:
    """Find shared-memory accesses whose lanes are a bank-conflicting number of words apart."""
    fn = ctx.function
    for acc in fn.accesses:
        if acc.space is not MemorySpace.SHARED or acc.pattern is not AccessPattern.STRIDED:
            continue
        if acc.kind is AccessKind.ADDRESS:
            # An address taken (`cp.async`, `ldmatrix`, `__cvta_generic_to_shared(&tile[r][c])`) is not a 4-byte
            # access: its banks depend on the width of the copy that uses it.
            continue
        if acc.stride is None or acc.stride.denominator != 1 or not acc.width or acc.width < 4:
            continue
        words = abs(acc.stride.numerator) * acc.width // 4
        ways = bank_conflict_ways(words, acc.width)
        if ways < 2 or opaque_wrapper(ctx.model, fn, acc) is not None:
            # A macro or a cast may read the element as a wider vector: its banks are not the element's.
            continue
        arr = next((s for s in fn.shared if s.name == acc.base), None)
        last = arr.dim_values[-1] if arr is not None and arr.dim_values else None
        # Fewer than 32 lanes along x (`analyzers.banks`): the lanes of one row of the warp give a lower bound.
        conflict = warp_conflict(ctx.model, fn, acc, arr, words, ways)
        if conflict is None:
            continue
        ways, banks, where = conflict
        degree = str(ways)
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"bank:{acc.base}:{acc.index}:{acc.span[0]}",
            {
                "access": acc,
                "shared": arr,
                "array": acc.base,
                "subscript": f"{acc.base}[{']['.join(acc.indices)}]",
                "ways": ways,
                "degree": degree,
                "where": where,
                "words": words,
                "banks": banks,
                "padded": (last + 1) if last else "?",
                "effect": _padding_effect(acc, last),
                "_related": (Related(f"`{acc.base}` is declared here", fn.span(arr.span)),) if arr else (),
            },
        )


def _padding_effect(acc: Access, row: int | None) -> str:
    """Say what one more element per row does to the conflict: removes it, or divides the lanes per bank."""
    after = padded_ways(acc, row)
    before = bank_ways(abs(acc.stride.numerator) * acc.width // 4, acc.width) if acc.stride is not None else 0
    if after is None or after < 2 or after >= before:
        return "removes it"
    return f"puts {before // after} times fewer lanes into each bank"


@check("shared_last_dim_constant")
def shared_last_dim_constant(ctx: CheckContext) -> Verdict:
    """Hold when the shared array has two or more dimensions and a constant last dimension."""
    arr = ctx.fact("shared")
    if arr is None:
        return unknown(f"the declaration of `{ctx.fact('array')}` was not found")
    if len(arr.dims) < 2:
        return violated(f"`{arr.name}` is one-dimensional; padding a row does not change its bank mapping")
    if arr.dim_values[-1] is None:
        return unknown(f"the last dimension of `{arr.name}` (`{arr.dims[-1]}`) is not a known constant")
    return holds(f"`{arr.name}` is declared `[{']['.join(arr.dims)}]` with a constant row length {arr.dim_values[-1]}")


@check("shared_only_subscripted")
def shared_only_subscripted(ctx: CheckContext) -> Verdict:
    """Hold when every use of the shared array is a full subscript (no pointer arithmetic or reinterpretation)."""
    arr = ctx.fact("shared")
    if arr is None:
        return unknown("the declaration was not found")
    accesses = [a for a in ctx.function.accesses if a.base == arr.name]
    uses = identifier_uses(ctx.model, ctx.function, arr.name)
    escaped = [a for a in accesses if a.kind is AccessKind.ADDRESS]
    if escaped:
        return violated(
            f"`&{escaped[0].array}[{']['.join(escaped[0].indices)}]` takes an address into `{arr.name}`; "
            "code that walks that pointer would see the padding"
        )
    partial = [a for a in accesses if len(a.indices) != len(arr.dims) or a.array != arr.name]
    if partial:
        return violated(f"`{partial[0].array}[{partial[0].index}]` does not index every dimension of `{arr.name}`")
    if uses == len(accesses) + 1:
        return holds(f"all {len(accesses)} uses of `{arr.name}` index it as `{arr.name}[..][..]`")
    return violated(
        f"`{arr.name}` is used {uses - 1 - len(accesses)} time(s) other than by subscript (e.g. as a "
        "pointer); padding would change what those uses see"
    )


@check("shared_padding_removes_conflict")
def shared_padding_removes_conflict(ctx: CheckContext) -> Verdict:
    """Hold when one more element per row puts fewer lanes of a warp into each bank than now."""
    arr = ctx.fact("shared")
    acc = ctx.fact("access")
    if arr is None or not arr.dim_values or arr.dim_values[-1] is None:
        return unknown("the row length of the shared array is not known")
    row = arr.dim_values[-1]
    after = padded_ways(acc, row)
    before = bank_ways(abs(acc.stride.numerator) * acc.width // 4, acc.width)
    if after is not None and after < before:
        effect = "different banks" if after < 2 else f"{before // after} times fewer lanes per bank"
        return holds(f"lanes walk a column of `{arr.name}`: rows of {row + 1} elements put them in {effect}")
    return violated(
        f"the conflict of `{ctx.fact('subscript')}` is not across rows of `{arr.name}`, or one more element per row "
        "does not lower it, so padding the rows does not help (applying it again would only grow the array)"
    )


@check("shared_rows_keep_vector_alignment")
def shared_rows_keep_vector_alignment(ctx: CheckContext) -> Verdict:
    """Hold when no use of the array may read it with wider (vector) loads that a padded row would misalign."""
    arr = ctx.fact("shared")
    if arr is None:
        return unknown("the declaration was not found")
    for acc in ctx.function.accesses:
        if acc.base != arr.name:
            continue
        wrapper = opaque_wrapper(ctx.model, ctx.function, acc)
        if wrapper is not None:
            return violated(
                f"`{acc.array}[{']['.join(acc.indices)}]` goes through {wrapper}, which may load it as a vector; "
                f"rows of {arr.dim_values[-1] + 1 if arr.dim_values and arr.dim_values[-1] else '?'} elements would "
                "break the vector alignment"
            )
    width = arr.element_bytes
    return holds(
        f"`{arr.name}` is read and written only as `{arr.element_type}` elements"
        + (f" ({width} bytes, so a padded row stays aligned for them)" if width else "")
    )


@check("shared_padding_fits")
def shared_padding_fits(ctx: CheckContext, limit_bytes: int = 48 * 1024) -> Verdict:
    """Hold when the kernel's static shared memory still fits the static limit after padding."""
    arr = ctx.fact("shared")
    if arr is None or arr.element_bytes is None or any(v is None for v in arr.dim_values):
        return unknown("the array's size is not known")
    rows = 1
    for v in arr.dim_values[:-1]:
        rows *= v or 0
    extra = rows * arr.element_bytes
    sizes = [s.size_bytes for s in ctx.function.shared if not s.is_extern]
    if any(s is None for s in sizes):
        return unknown("the size of another shared array is not known")
    total = sum(s or 0 for s in sizes) + extra
    if total <= limit_bytes:
        return holds(f"static shared memory grows by {extra} bytes to {total} bytes (limit {limit_bytes})")
    return violated(f"padding needs {total} bytes of static shared memory, over the {limit_bytes}-byte limit")


def pad_shared_array(ctx: RewriteContext) -> list[Edit] | None:
    """Add one element to the last dimension of a shared array (`[32][32]` -> `[32][33]`)."""
    arr = ctx.fact("shared")
    if arr is None:
        return None
    decl = ctx.node(ctx.abs(arr.name_span), "array_declarator")
    if decl is None:
        return None
    # The outermost array_declarator holds the last dimension.
    while decl.parent is not None and decl.parent.type == "array_declarator":
        decl = decl.parent
    size = decl.child_by_field_name("size")
    if size is None:
        return None
    if size.type == "number_literal" and ctx.text((size.start_byte, size.end_byte)).isdigit():
        value = int(ctx.text((size.start_byte, size.end_byte)))
        return [Edit(size.start_byte, size.end_byte, str(value + 1))]
    wrapped = size.type in ("identifier", "parenthesized_expression", "call_expression")
    text = ctx.text((size.start_byte, size.end_byte))
    return [Edit(size.start_byte, size.end_byte, f"{text} + 1" if wrapped else f"({text}) + 1")]
