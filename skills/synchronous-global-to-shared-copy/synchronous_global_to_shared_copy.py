"""Rules of the `synchronous-global-to-shared-copy` card (Copy global to shared memory asynchronously): what only
this card uses.

Registered here: matcher `global_to_shared_copies`, check `target_sm_at_least`, check `copy_element_size`, check
`copy_source_not_written`. The card's rewrite and the recognisers only it needs live here too; what several cards
share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`, `.facts*`). The library
imports this file by path as `warpwise.skills.cards.synchronous_global_to_shared_copy`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.expr.values import type_size
from warpwise.analyzers.facts import distinct_launch_args, pointer_params, tree_of
from warpwise.analyzers.facts_memory import KernelSyntax, kernel_syntax
from warpwise.analyzers.model import Access, AccessKind, FileModel, Function, FunctionKind, MemorySpace
from warpwise.skills.checks.memory import _line, _template_names
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
from warpwise.skills.rewrites.memory import _template_typed


@dataclass(frozen=True)
class SharedCopy:
    """`tile[...] = g[...];` as its own statement: a global load staged through a register into shared memory."""

    statement: Any
    shared: Access
    source: Access


def copy_runs(model: FileModel, fn: Function, ks: KernelSyntax) -> list[tuple[list[SharedCopy], Any]]:
    """Return each run of global-to-shared copy statements directly followed by `__syncthreads();`."""
    by_span = {a.span: a for a in fn.accesses}
    out = []
    for call in fn.calls:
        if call.name != "__syncthreads":
            continue
        node = ks.node.descendant_for_byte_range(*fn.span(call.span))
        while node is not None and node.type != "expression_statement":
            node = node.parent
        if node is None or node.parent is None or node.parent.type != "compound_statement":
            continue
        run: list[SharedCopy] = []
        prev = node.prev_named_sibling
        while prev is not None:
            if prev.type == "comment":
                prev = prev.prev_named_sibling
                continue
            copy = _as_copy(fn, prev, by_span)
            if copy is None:
                break
            run.insert(0, copy)
            prev = prev.prev_named_sibling
        if run:
            out.append((run, node))
    return out


def _as_copy(fn: Function, stmt: Any, by_span: dict[tuple[int, int], Access]) -> SharedCopy | None:
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    expr = stmt.named_children[0]
    if expr.type != "assignment_expression" or expr.child_by_field_name("operator").type != "=":
        return None
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    if left is None or right is None or right.type != "subscript_expression":
        return None
    dst = by_span.get((left.start_byte - fn.base, left.end_byte - fn.base))
    src = by_span.get((right.start_byte - fn.base, right.end_byte - fn.base))
    if dst is None or src is None:
        return None
    if dst.space is not MemorySpace.SHARED or src.space is not MemorySpace.GLOBAL or src.kind is not AccessKind.READ:
        return None
    return SharedCopy(stmt, dst, src)


@matcher("global_to_shared_copies")
def global_to_shared_copies(ctx: MatchContext) -> Iterator[Region]:
    """Find element copies from global to shared memory followed by `__syncthreads()` (one region per kernel)."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or not fn.shared or not any(c.name == "__syncthreads" for c in fn.calls):
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    runs = copy_runs(ctx.model, fn, ks)
    if not runs:
        return
    copies = [c for run, _ in runs for c in run]
    first = copies[0]
    more = len(copies) - 1
    yield Region(
        AnchorKind.ACCESS,
        fn,
        first.shared.span,
        f"async:{fn.name}",
        {
            "kernel": fn.name,
            "runs": tuple(runs),
            "copies": tuple(copies),
            "copy": f"{ctx.model.slice(fn, first.shared.span)} = {ctx.model.slice(fn, first.source.span)}",
            "more": f" (and {more} more cop{'y' if more == 1 else 'ies'} in `{fn.name}`)" if more else "",
            "count": len(copies),
        },
    )


@check("target_sm_at_least")
def target_sm_at_least(ctx: CheckContext, sm: int) -> Verdict:
    """Hold when the target GPU's compute capability is at least `sm` (e.g. 80 for cp.async)."""
    if ctx.target_sm >= sm:
        return holds(f"the target is sm_{ctx.target_sm} (needs sm_{sm} or newer)")
    return violated(f"the target is sm_{ctx.target_sm}; this needs sm_{sm} or newer")


@check("copy_element_size")
def copy_element_size(ctx: CheckContext, sizes: tuple[int, ...] = (4, 8, 16)) -> Verdict:
    """Hold when every copy moves one element of 4, 8 or 16 bytes without a type conversion."""
    fn = ctx.function
    for c in ctx.fact("copies", ()):
        arr = next((s for s in fn.shared if s.name == c.shared.base), None)
        dst = arr.element_type if arr is not None else None
        src = c.source.element_type
        templ = _template_names(fn)
        param = fn.param(c.source.base)
        if param is not None and set(re.findall(r"\w+", param.type)) & templ:
            return unknown(f"the element type of `{c.source.base}` is a template parameter")
        if dst is not None and set(re.findall(r"\w+", dst)) & templ:
            return unknown(f"the element type of `{c.shared.base}` is a template parameter")
        if dst is None or src is None:
            return unknown(f"the element type of `{c.shared.base}` or `{c.source.base}` is not known")
        if dst.replace("const", "").strip() != src.replace("const", "").strip():
            return violated(f"`{c.source.base}` holds `{src}` and `{c.shared.base}` holds `{dst}`: the copy converts")
        width = type_size(src)
        if width is None:
            return unknown(f"the size of `{src}` is not known")
        if width not in sizes:
            return violated(f"`{src}` is {width} bytes; asynchronous copies move 4, 8 or 16 bytes")
    n = ctx.fact("count", 1)
    return holds(f"{'the copy moves' if n == 1 else f'all {n} copies move'} one 4-, 8- or 16-byte element")


@check("copy_source_not_written")
def copy_source_not_written(ctx: CheckContext) -> Verdict:
    """Hold when no store that runs before the copies (earlier, or in an earlier iteration) can hit their source."""
    fn = ctx.function
    copies = ctx.fact("copies", ())
    sources = sorted({c.source.base for c in copies})
    first = min(c.source.span[0] for c in copies)
    loops = [lp for lp in fn.loops if any(lp.span[0] <= c.source.span[0] < lp.span[1] for c in copies)]

    def before(a: Any) -> bool:
        return a.span[0] < first or any(lp.span[0] <= a.span[0] < lp.span[1] for lp in loops)

    stores = [a for a in fn.accesses if a.kind is not AccessKind.READ and a.space is not MemorySpace.SHARED]
    earlier = [a for a in stores if a.space is not MemorySpace.LOCAL and before(a)]
    own = [a for a in earlier if a.base in sources]
    if own:
        when = "in an earlier iteration" if own[0].span[0] > first else "earlier"
        return violated(
            f"`{fn.name}` stores to `{own[0].base}` {when} (line {_line(ctx.model, fn.base + own[0].span[0])}); an "
            "asynchronous copy is not ordered after that store"
        )
    if not earlier:
        return holds(f"no store to global memory runs before the copies in `{fn.name}`")
    params = [fn.param(s) for s in sources]
    if all(p is not None and p.is_const and p.is_restrict for p in params):
        return holds(
            f"{', '.join(f'`{s}`' for s in sources)} {'is' if len(sources) == 1 else 'are'} `const __restrict__`"
        )
    names = sorted({a.base for a in earlier})
    mine = [p for p in pointer_params(fn) if p.name in set(sources) | set(names)]
    ok, reason = distinct_launch_args(ctx.model, fn, mine)
    if ok:
        return holds(reason)
    if ok is None:
        return unknown(
            f"`{names[0]}`, stored before the copies, could overlap {', '.join(f'`{s}`' for s in sources)}: {reason}"
        )
    return violated(f"a launch passes one buffer as a copy source and as `{names[0]}`: {reason}")


def _include_edit(ctx: RewriteContext) -> list[Edit]:
    if re.search(rb"#\s*include\s*[<\"]cuda_pipeline(_primitives)?\.h[>\"]", ctx.data):
        return []
    root = tree_of(ctx.model).root_node
    last = None
    for c in root.named_children:
        if c.type == "preproc_include" and c.start_byte < ctx.function.base:
            last = c
    if last is None:
        return [Edit(0, 0, "#include <cuda_pipeline.h>\n")]
    end = ctx.data.find(b"\n", last.start_byte)
    at = len(ctx.data) if end < 0 else end + 1
    return [Edit(at, at, "#include <cuda_pipeline.h>\n")]


def async_shared_copies(ctx: RewriteContext) -> list[Edit] | None:
    """Issue each global-to-shared copy with `__pipeline_memcpy_async`, then commit and wait before the barrier."""
    fn = ctx.function
    edits: list[Edit] = []
    for run, _barrier in ctx.fact("runs", ()):
        for copy in run:
            arr = next((s for s in fn.shared if s.name == copy.shared.base), None)
            if arr is None or _template_typed(ctx, [copy.source.base]):
                return None
            dst = ctx.text(ctx.abs(copy.shared.span))
            src = ctx.text(ctx.abs(copy.source.span))
            stmt = copy.statement
            edits.append(
                Edit(
                    stmt.start_byte,
                    stmt.end_byte,
                    f"__pipeline_memcpy_async(&{dst}, &{src}, sizeof({arr.element_type}));",
                )
            )
        last = run[-1].statement
        ind = ctx.indent_at(last.start_byte)
        edits.append(Edit(last.end_byte, last.end_byte, f"\n{ind}__pipeline_commit();\n{ind}__pipeline_wait_prior(0);"))
    if not edits:
        return None
    return edits + _include_edit(ctx)
