"""Rules of the `global-reread-in-loop` card (Load the loop-invariant value once): what only this card uses.

Registered here: matcher `loop_invariant_global_loads`, check `loaded_value_is_stable`, check
`load_runs_every_iteration`. The card's rewrite and the recognisers only it needs live here too; what several cards
share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library
imports this file by path as `warpwise.skills.cards.global_reread_in_loop`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from warpwise.analyzers.facts import WRITES, is_written, loop_label
from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, FileModel, Function, MemorySpace, Span
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


def global_stores_in(fn: Function, span: Span) -> list[Access]:
    """Return the stores to global or unknown memory inside a span."""
    return [
        a
        for a in fn.accesses
        if span[0] <= a.span[0] < span[1] and a.kind in WRITES and a.space in (MemorySpace.GLOBAL, MemorySpace.UNKNOWN)
    ]


def launch_args_for(model: FileModel, fn: Function, name: str) -> list[str] | None:
    """Return, per launch, the argument text passed for parameter `name` (None when a launch cannot be read)."""
    param = fn.param(name)
    launches = model.launches_of(fn.name)
    if param is None or not launches:
        return None
    out = []
    for _, launch in launches:
        if len(launch.args) != len(fn.params):
            return None
        out.append(launch.args[param.index].strip())
    return out


def pointer_names(acc: Access) -> set[str]:
    """Return the names the address of an access is built from besides its index: the pointer and its alias."""
    return set(re.findall(r"[A-Za-z_]\w*", acc.array)) | {acc.base}


def _index_name(array: str, index: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9_]+", "_", index).strip("_") or "0"
    return f"{array}_{tail}" if len(tail) <= 16 else f"{array}_value"


@matcher("loop_invariant_global_loads")
def loop_invariant_global_loads(ctx: MatchContext) -> Iterator[Region]:
    """Find global loads whose index does not change in a loop that the compiler cannot hoist them out of."""
    fn = ctx.function
    seen: set[tuple[str, str, int]] = set()
    for acc in fn.accesses:
        if acc.space is not MemorySpace.GLOBAL or acc.kind is not AccessKind.READ or not acc.loops:
            continue
        if acc.pattern in (AccessPattern.UNKNOWN, AccessPattern.INDIRECT) or acc.via_ldg or acc.vector_cast:
            continue
        target = None
        moved = pointer_names(acc)
        for loop_id in reversed(acc.loops):
            loop = fn.loops[loop_id]
            if acc.index_names & loop.assigned or moved & loop.assigned:
                # The index, or the pointer itself (`p += stride`), changes in this loop: the address is not invariant.
                break
            target = loop
        if target is None:
            continue
        key = (acc.base, acc.index, target.id)
        if key in seen:
            continue
        lo, hi = target.span
        stores = global_stores_in(fn, target.span)
        barriers = [c for c in fn.calls if lo <= c.span[0] < hi and c.category in ("sync", "atomic")]
        param = fn.param(acc.base)
        restrict_const = param is not None and param.is_restrict and param.is_const
        if barriers:
            reason = f"the `{barriers[0].name}` in the loop makes the compiler reload it"
        elif stores and not restrict_const:
            reason = (
                f"`{acc.base}` is not `const __restrict__` and the loop stores to `{stores[0].base}`, "
                "so the compiler must assume the value can change"
            )
        else:
            continue
        seen.add(key)
        used = set(fn.locals) | {p.name for p in fn.params}
        name = _index_name(acc.base, acc.index)
        while name in used:
            name += "_"
        same = [a for a in fn.accesses if a.base == acc.base and a.index == acc.index and lo <= a.span[0] < hi]
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"hoist:{acc.base}:{acc.index}:{target.id}",
            {
                "access": acc,
                "loop": target,
                "array": acc.base,
                "index": acc.index,
                "load": f"{acc.base}[{acc.index}]",
                "loop_label": loop_label(target),
                "reason": reason,
                "name": name,
                "occurrences": tuple(same),
                "_related": (Related(f"{loop_label(target)} starts here", fn.span(target.header_span)),),
            },
        )


@check("loaded_value_is_stable")
def loaded_value_is_stable(ctx: CheckContext) -> Verdict:
    """Hold when nothing can change the loaded value while the loop runs."""
    acc = ctx.fact("access")
    loop = ctx.fact("loop")
    fn = ctx.function
    if is_written(fn, acc.base):
        return violated(f"the kernel writes through `{acc.base}`, so the value can change between iterations")
    param = fn.param(acc.base)
    stores = [
        a
        for a in fn.accesses
        if a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)
        and a.space in (MemorySpace.GLOBAL, MemorySpace.UNKNOWN)
    ]
    if param is not None and param.is_restrict:
        return holds(f"`{acc.base}` is `__restrict__` and never written by the kernel")
    if not stores:
        return holds("the kernel stores to no global memory")
    written = sorted({a.base for a in stores if fn.param(a.base) is not None})
    mine = launch_args_for(ctx.model, fn, acc.base)
    if mine is not None and written and len(written) == len({a.base for a in stores}):
        theirs = {w: launch_args_for(ctx.model, fn, w) for w in written}
        if all(v is not None for v in theirs.values()):
            plain = all(all(part.isidentifier() for part in t.replace("->", ".").split(".")) for t in mine)
            clash = [
                w
                for w, args in theirs.items()
                if args is not None and any(a == b for a, b in zip(mine, args, strict=True))
            ]
            if plain and not clash:
                n = len(mine)
                return holds(
                    f"`{acc.base}` is never written, and {'the launch' if n == 1 else f'all {n} launches'} "
                    f"in this file pass{'es' if n == 1 else ''} a buffer distinct from "
                    f"{', '.join(f'`{w}`' for w in written)}"
                )
            if clash:
                return violated(
                    f"a launch passes the same buffer for `{acc.base}` and `{clash[0]}`, which the kernel writes"
                )
    in_loop = global_stores_in(fn, loop.span)
    target = (in_loop or stores)[0].base
    return unknown(f"`{target}` could alias `{acc.base}` (no launch in this file shows the buffers are distinct)")


@check("load_runs_every_iteration")
def load_runs_every_iteration(ctx: CheckContext) -> Verdict:
    """Hold when the load runs unconditionally in a loop that runs at least once (hoisting adds no new read)."""
    acc = ctx.fact("access")
    loop = ctx.fact("loop")
    fn = ctx.function
    lo = loop.body_span[0]
    guarded = [b for b in fn.branches if lo <= b.span[0] and b.span[0] <= acc.span[0] < b.span[1]]
    if guarded:
        return violated(
            f"`{acc.base}[{acc.index}]` is read only when `{guarded[0].condition}`; hoisting it would "
            "read it unconditionally"
        )
    if loop.trip_count is not None and loop.trip_count >= 1:
        return holds(f"the load runs on every one of the loop's {loop.trip_count} iterations")
    return unknown(
        f"if the loop over `{loop.var}` runs zero times, the hoisted load reads `{acc.base}[{acc.index}]` "
        "where the original did not"
    )


def hoist_loop_invariant_load(ctx: RewriteContext) -> list[Edit] | None:
    """Load a loop-invariant global value once before the loop and use the register inside it."""
    loop = ctx.fact("loop")
    acc = ctx.fact("access")
    name = ctx.fact("name")
    start = ctx.abs(loop.span)[0]
    line = ctx.line_start(start)
    if ctx.data[line:start].strip():
        return None
    elem = acc.element_type or "auto"
    indent = ctx.indent_at(start)
    declaration = f"const {elem} {name} = {ctx.fact('load')};"
    node = ctx.node(ctx.abs(loop.span))
    while node is not None and (node.start_byte, node.end_byte) != ctx.abs(loop.span):
        node = node.parent
    if node is None or node.parent is None:
        return None
    if node.parent.type in ("compound_statement", "translation_unit"):
        edits = [Edit(line, line, f"{indent}{declaration}\n")]
    else:
        # The loop is the body of a brace-less `if`, `for` or `while`: a declaration before it would become that
        # statement's body and leave the loop without its name, so the declaration and the loop get braces.
        end = ctx.abs(loop.span)[1]
        edits = [Edit(start, start, f"{{\n{indent}  {declaration}\n{indent}  "), Edit(end, end, f"\n{indent}}}")]
    for occ in ctx.fact("occurrences", ()):
        if occ.kind.value != "read":
            return None
        edits.append(Edit(*ctx.abs(occ.span), name))
    return edits
