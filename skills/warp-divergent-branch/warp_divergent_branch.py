"""Rules of the `warp-divergent-branch` card (Branch on warps, not on lanes): what only this card uses.

Registered here: matcher `lane_divergent_branches`. The card's rewrite and the recognisers only it needs live here
too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.warp_divergent_branch`.

The rewrite covers one kind of divergent branch: the guard of a shared-memory tree reduction with interleaved
addressing (`if (tid % (2 * s) == 0) a[tid] += a[tid + s];`). Whether a loop is such a tree is the
`barrier-per-step-tree-reduction` card's recogniser's answer (it runs the tree for every block size), and the
replacement is that card's module's sequential form of the same tree (`generate_sequential`); other divergent
branches are shown without a quick fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from warpwise.analyzers.compile_time import compile_time
from warpwise.analyzers.facts_memory import kernel_syntax, linear, unparen
from warpwise.analyzers.facts_reduce import condition_value, field, node_at, operator_of, reduce_canon
from warpwise.analyzers.model import Function, FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.rewrite import Edit, RewriteContext


@matcher("lane_divergent_branches")
def lane_divergent_branches(ctx: MatchContext) -> Iterator[Region]:
    """Find branches whose condition splits the lanes of every warp (`threadIdx.x % 2 == 0`)."""
    fn = ctx.function
    if fn.kind is FunctionKind.HOST:
        return
    for branch in fn.branches:
        pattern = branch.lane_pattern
        if pattern is None and branch.thread_dependent and "%" in branch.condition:
            pattern = _runtime_lane_period(ctx, fn, branch)
        if pattern is None or _leader_lanes(ctx, fn, branch):
            continue
        tree = _interleaved_tree(ctx, fn, branch)
        facts: dict[str, Any] = {"branch": branch, "condition": branch.condition, "pattern": pattern}
        if tree is not None:
            facts.update(tree=tree, array=tree.array, op=tree.op)
        else:
            facts["_display_only"] = True
        yield Region(AnchorKind.BRANCH, fn, branch.condition_span, f"lanes:{branch.span[0]}", facts)


def _tree_rules() -> Any:
    from warpwise.skills.library import builtin_library

    card = builtin_library().get("barrier-per-step-tree-reduction")
    return card.rules if card is not None else None


def _interleaved_tree(ctx: MatchContext, fn: Function, branch: Any) -> Any:
    """Return the interleaved-addressing tree reduction whose loop holds this branch, or None."""
    if not fn.shared:
        return None  # A tree reduction runs over a shared array.
    rules = _tree_rules()
    if rules is None:
        return None
    trees, _ = rules.recognise_all(ctx.model, fn)
    start, end = fn.span(branch.span)
    for tl in trees:
        if tl.form == "interleaved" and tl.span[0] <= start and end <= tl.span[1]:
            return tl
    return None


def sequential_addressing(ctx: RewriteContext) -> list[Edit] | None:
    """Replace an interleaved tree reduction's loop by the same tree with sequential addressing."""
    tree = ctx.fact("tree")
    rules = _tree_rules()
    if tree is None or rules is None:
        return None
    return [Edit(tree.span[0], tree.span[1], rules.generate_sequential(tree, ctx.indent_at(tree.span[0])))]


def _leader_lanes(ctx: MatchContext, fn: Function, branch: Any) -> bool:
    """Return whether a branch picks one leader lane per group of a constant size to do the group's work
    (`if (lane % 4 == 0) store(...)`, no `else`): the other lanes have nothing to do, so no warp runs two sides
    and no other thread mapping removes the idle lanes."""
    node = node_at(ctx.model, fn, branch.span, "if_statement")
    if node is None or field(node, "alternative") is not None:
        return False
    cmp = unparen(condition_value(node))
    if cmp is None or cmp.type != "binary_expression" or operator_of(cmp) != "==":
        return False
    canon = reduce_canon(ctx.model, fn)
    left, right = field(cmp, "left"), field(cmp, "right")
    mod = unparen(left if canon.of(right).int_value() == 0 else right if canon.of(left).int_value() == 0 else None)
    if mod is None or mod.type != "binary_expression" or operator_of(mod) != "%":
        return False
    period = canon.of(field(mod, "right")).int_value()
    if period is None:
        # A group size the file does not give a number for (`tid % NUM_WARPS` with a template `NUM_WARPS`) is still
        # a constant of every instance: one leader per group either way (every lane, when it is 1).
        return compile_time(ctx.model, fn, field(mod, "right"))
    return period >= 2


def _runtime_lane_period(ctx: MatchContext, fn: Function, branch: Any) -> str | None:
    """Describe `tid % p == 0` with a runtime period `p` (a reduction's `2 * s`): it splits warps while p < 32."""
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return None
    cond = ks.node.descendant_for_byte_range(*fn.span(branch.condition_span))
    stack = [cond] if cond is not None else []
    while stack:
        n = stack.pop()
        if n.type == "binary_expression" and n.child_by_field_name("operator").type == "%":
            left = linear(ks, n.child_by_field_name("left"))
            right = n.child_by_field_name("right")
            period = linear(ks, right)
            if left and "tid.x" in left and period is not None and not any(k.startswith("tid.") for k in period):
                return f"lanes alternate with period `{ks.text(unparen(right))}` while it is below 32"
        stack.extend(n.named_children)
    return None
