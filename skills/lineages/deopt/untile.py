"""Untile the warps: a warp-tiled thread layout over a register tile becomes row-major.

A kernel whose threads each own a block of outputs (a register tile, as in SGEMM) places its threads on a
grid of tiles, `ty` rows by `tx` columns. Warp tiling computes `(ty, tx)` from the warp and the lane so that the
32 threads of a warp cover a compact 4 x 8 patch, whose shared-memory reads are few and broadcast. The simpler
layout is row-major: `ty = threadIdx.x / W`, `tx = threadIdx.x % W`.

Exact by enumeration: the two coordinates are declared `const int` from `threadIdx.x` (directly or through
locals such as `warp = threadIdx.x >> 5` and `lane = threadIdx.x & 31`) and integer constants; evaluating them
for every thread of the block (`__launch_bounds__`) must give each (ty, tx) of an H x W grid exactly once, and
the warp and lane must not be used anywhere else (no shuffles, no votes), so which thread owns which tile does
not change any result. No card explains warp tiling; the step proposes one.
"""

from __future__ import annotations

import re

from warpwise.analyzers.model import Function
from warpwise.skills.lineages.deopt.base import Deopt, KernelSource, Node, ProposedCard, unparen
from warpwise.skills.rewrite import Edit

WARP_LAYOUT_CARD = ProposedCard(
    "row-major-thread-tile-layout",
    "Lay the threads of a register-tiled kernel out by warp tiles",
    "Compute each thread's tile coordinates from its warp and lane so that the 32 threads of a warp cover a compact "
    "patch of the output (4 x 8 rather than one row of 16 and half of the next), which makes their shared-memory "
    "fragment reads fewer, contiguous and broadcast.",
)
_WARP_OPS = re.compile(r"__shfl|__ballot|__any_sync|__all_sync|__match|__reduce_\w+_sync|__activemask")


class _Evaluator:
    """Evaluate integer expressions of `threadIdx.x` (through single-assignment locals) for one thread."""

    def __init__(self, src: KernelSource, fn: Function, node: Node) -> None:
        self.src = src
        self.fn = fn
        self.inits: dict[str, Node] = {}
        counts: dict[str, int] = {}
        for decl in src.nodes(node, ("init_declarator",)):
            target = decl.child_by_field_name("declarator")
            value = decl.child_by_field_name("value")
            if target is not None and target.type == "identifier" and value is not None:
                name = src.text_of(target)
                counts[name] = counts.get(name, 0) + 1
                self.inits[name] = value
        self.inits = {k: v for k, v in self.inits.items() if counts[k] == 1}
        self.used: set[str] = set()

    def value(self, node: Node, t: int, depth: int = 0) -> int | None:
        """Return the value of an expression for thread `t`, or None when it is not a function of t alone."""
        node = unparen(node)
        if depth > 10 or node is None:
            return None
        if node.type == "number_literal":
            try:
                return int(self.src.text_of(node).rstrip("uUlL"), 0)
            except ValueError:
                return None
        if node.type == "field_expression":
            return t if self.src.text_of(node).replace(" ", "") == "threadIdx.x" else None
        if node.type == "identifier":
            name = self.src.text_of(node)
            macro = self.src.macro_value(name)
            if macro is not None:
                return macro
            if name in self.inits:
                self.used.add(name)
                return self.value(self.inits[name], t, depth + 1)
            return None
        if node.type == "cast_expression":
            return self.value(node.child_by_field_name("value"), t, depth + 1)
        if node.type == "binary_expression":
            op = node.child_by_field_name("operator").type
            a = self.value(node.child_by_field_name("left"), t, depth + 1)
            b = self.value(node.child_by_field_name("right"), t, depth + 1)
            if a is None or b is None:
                return None
            ops = {
                "+": lambda: a + b,
                "-": lambda: a - b,
                "*": lambda: a * b,
                "/": lambda: a // b if b else None,
                "%": lambda: a % b if b else None,
                "<<": lambda: a << b,
                ">>": lambda: a >> b,
                "&": lambda: a & b,
                "|": lambda: a | b,
                "^": lambda: a ^ b,
            }
            f = ops.get(op)
            return f() if f is not None else None
        return None


def _code(src: KernelSource, node: Node) -> str:
    """Return a node's text with its comments blanked out."""
    text = src.text_of(node)
    for c in reversed(src.nodes(node, ("comment",))):
        a, b = c.start_byte - node.start_byte, c.end_byte - node.start_byte
        text = text[:a] + " " * (b - a) + text[b:]
    return text


def untile(src: KernelSource) -> list[Deopt]:
    """Return the candidate that lays out a warp-tiled kernel's threads row-major."""
    fn = src.kernel_fn
    if fn is None or not fn.launch_bounds:
        return []
    threads = src.macro_value(fn.launch_bounds[0].strip())
    if threads is None:
        try:
            threads = int(fn.launch_bounds[0].strip(), 0)
        except ValueError:
            return []
    node = src.function_node(fn)
    if node is None:
        return []
    body = _code(src, node)
    if _WARP_OPS.search(body) or threads > 1024:
        return []
    ev = _Evaluator(src, fn, node)
    decls = []
    for decl in src.nodes(node, ("declaration",)):
        inits = src.nodes(decl, ("init_declarator",))
        if len(inits) != 1 or not src.text_of(decl).lstrip().startswith("const int"):
            continue
        target, value = inits[0].child_by_field_name("declarator"), inits[0].child_by_field_name("value")
        if target is None or value is None or target.type != "identifier":
            continue
        text = src.text_of(value)
        if "threadIdx.x" in text or not re.search(r"\b(warp|lane)\b", text):
            continue
        found = [ev.value(value, t) for t in range(threads)]
        values = [v for v in found if v is not None]
        if len(values) != threads:
            continue
        decls.append((src.text_of(target), value, values))
    if len(decls) != 2:
        return []
    (row_name, row_node, rows), (col_name, col_node, cols) = decls
    height, width = max(rows) + 1, max(cols) + 1
    cells = set(zip(rows, cols, strict=True))
    if height * width != threads or len(cells) != threads or min(rows) != 0 or min(cols) != 0:
        return []
    if all(r == t // width and c == t % width for t, (r, c) in enumerate(zip(rows, cols, strict=True))):
        return []
    # The warp and lane locals must serve these two coordinates only.
    for helper in ev.used:
        uses = len(re.findall(rf"\b{re.escape(helper)}\b", body))
        defs = len(re.findall(rf"\b{re.escape(helper)}\b", src.text_of(row_node) + src.text_of(col_node)))
        if uses - 1 != defs:
            return []
    edits = (
        Edit(row_node.start_byte, row_node.end_byte, f"(int)threadIdx.x / {width}"),
        Edit(col_node.start_byte, col_node.end_byte, f"(int)threadIdx.x % {width}"),
    )
    return [
        Deopt(
            "untile",
            "warp-layout",
            f"lay the threads out row-major over the {height} x {width} grid of register tiles (`{row_name}`, "
            f"`{col_name}` from `threadIdx.x`) instead of by warp tiles",
            edits,
            None,
            WARP_LAYOUT_CARD,
        )
    ]
