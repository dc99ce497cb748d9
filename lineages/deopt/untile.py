"""Untile: halve a thread's register tile, or lay a warp-tiled thread layout out row-major.

Register tile. A kernel whose threads each accumulate a `TM x TN` tile of outputs in a local array `acc[TM][TN]`,
with `TM` and `TN` `#define`d integers and the block tile derived from them (`#define BM (TM * TY)`, evaluated with
`TM` halved, must halve; `blockIdx.y * BM` in the kernel gives the grid axis; the `__launch_bounds__` thread count
must not depend on `TM`), is untiled one halving at a time: `TM` 8 becomes 4, each thread computes half as many
rows, each block covers half as many, and the grid doubles along the axis that walks `BM` (a launch rounded up for
the old tile may get one more block than needed; the kernel's bounds checks mask it). Repeated, the walk reaches one
output per thread. The code itself does not change, so the simpler kernel is exactly as correct as the kernel is for
those tile sizes: the precondition is that the kernel is written for any power-of-two tile (its loads, fragment
reads and stores derived from the macros), which the gate checks by running it. No card explains register tiling;
the step proposes one.

Warp layout. A kernel whose threads each own a block of outputs (a register tile, as in SGEMM) places its threads on a
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

from warpwise.analyzers.build import eval_numeric_text
from warpwise.analyzers.expr.cexpr import c_div, c_mod
from warpwise.analyzers.model import Function
from warpwise.lineages.deopt.base import Deopt, KernelSource, Node, ProposedCard, unparen
from warpwise.skills.rewrite import Edit
from warpwise.verify.launch import LaunchChange

WARP_LAYOUT_CARD = ProposedCard(
    "row-major-thread-tile-layout",
    "Lay the threads of a register-tiled kernel out by warp tiles",
    "Compute each thread's tile coordinates from its warp and lane so that the 32 threads of a warp cover a compact "
    "patch of the output (4 x 8 rather than one row of 16 and half of the next), which makes their shared-memory "
    "fragment reads fewer, contiguous and broadcast.",
)
REGISTER_TILE_CARD = ProposedCard(
    "register-tile-outputs",
    "Let each thread accumulate a tile of outputs in registers",
    "Give each thread a small tile of outputs (4 x 4, 8 x 8) accumulated in registers, so that every value it "
    "reads from shared memory feeds several fused multiply-adds instead of one, and the block tile grows with it.",
)
_AXES = ("x", "y", "z")
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
                "/": lambda: int(c_div(a, b)) if b else None,
                "%": lambda: int(c_mod(a, b)) if b else None,
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
    """Return the warp-layout candidate first (the optimization applied last), then the register-tile halvings."""
    return warp_layout(src) + shrink_register_tile(src)


def warp_layout(src: KernelSource) -> list[Deopt]:
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


def _tile_array(src: KernelSource, node: Node) -> tuple[str, str] | None:
    """Return the two macro names sizing the kernel's local `T acc[TM][TN]` register tile, or None."""
    found = []
    for decl in src.nodes(node, ("declaration",)):
        if "__shared__" in src.text_of(decl) or "static" in src.text_of(decl):
            continue
        for arr in decl.named_children:
            inner = arr.child_by_field_name("declarator") if arr.type == "array_declarator" else None
            if inner is None or inner.type != "array_declarator":
                continue
            base = inner.child_by_field_name("declarator")
            rows, cols = inner.child_by_field_name("size"), arr.child_by_field_name("size")
            if base is None or base.type != "identifier" or rows is None or cols is None:
                continue
            if rows.type == "identifier" and cols.type == "identifier":
                found.append((src.text_of(rows), src.text_of(cols)))
    return found[0] if len(found) == 1 else None


def _macro_text(src: KernelSource, name: str) -> str | None:
    """Return the body of a `#define NAME body` without its comments."""
    define = src.macro_definitions().get(name)
    value = define.child_by_field_name("value") if define is not None else None
    if value is None:
        return None
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", src.text_of(value), flags=re.S).strip()


def _with(src: KernelSource, macro: str, value: int, text: str) -> int | None:
    """Return the value of a macro body with `macro` set to `value` (the other constants as they are)."""
    consts = {k: v for k, v in src.model.constants.items() if isinstance(v, int)}
    consts[macro] = value
    return eval_numeric_text(text, consts)


def _grid_axis(src: KernelSource, node: Node, macro: str) -> tuple[str, int] | None:
    """Return (block-tile macro, grid axis) of the one `blockIdx.<a> * BM` whose `BM` halves with `macro`."""
    body = _code(src, node)
    v = src.macro_value(macro)
    if v is None:
        return None
    hits = set()
    for name in src.macro_definitions():
        text = _macro_text(src, name)
        if text is None or name == macro or not re.search(rf"\b{re.escape(macro)}\b", text):
            continue
        full, half = _with(src, macro, v, text), _with(src, macro, v // 2, text)
        if full is None or half is None or full != 2 * half:
            continue  # the block tile does not follow the register tile
        tile = re.escape(name)
        for m in re.finditer(rf"\bblockIdx\.([xyz])\s*\*\s*{tile}\b|\b{tile}\s*\*\s*blockIdx\.([xyz])\b", body):
            hits.add((name, _AXES.index(m.group(1) or m.group(2))))
    return hits.pop() if len(hits) == 1 else None


def _threads_stay(src: KernelSource, fn: Function, macro: str, v: int) -> bool:
    """Return whether the block's thread count (its `__launch_bounds__`) does not depend on `macro`."""
    if not fn.launch_bounds:
        return False
    bound = fn.launch_bounds[0].strip()
    text = _macro_text(src, bound) if src.macro_value(bound) is not None else bound
    if text is None:
        return False
    full, half = _with(src, macro, v, text), _with(src, macro, v // 2, text)
    return full is not None and full == half


def shrink_register_tile(src: KernelSource) -> list[Deopt]:
    """Return the candidates that halve the kernel's register tile along its rows and along its columns."""
    fn = src.kernel_fn
    node = src.function_node(fn) if fn is not None else None
    if fn is None or node is None:
        return []
    dims = _tile_array(src, node)
    if dims is None:
        return []
    defines = src.macro_definitions()
    out = []
    values = {m: src.macro_value(m) for m in dims}
    order = sorted(dims, key=lambda m: -(values[m] or 0))
    for macro, what in sorted(zip(dims, ("rows", "columns"), strict=True), key=lambda mw: order.index(mw[0])):
        v = values[macro]
        define = defines.get(macro)
        value = define.child_by_field_name("value") if define is not None else None
        if v is None or v < 2 or v & (v - 1) or value is None or _macro_text(src, macro) != str(v):
            continue
        axis = _grid_axis(src, node, macro)
        if axis is None or not _threads_stay(src, fn, macro, v):
            continue
        tile, a = axis
        other = values[dims[1] if macro == dims[0] else dims[0]]
        shape = f"{v // 2} x {other}" if what == "rows" else f"{other} x {v // 2}"
        out.append(
            Deopt(
                "untile",
                f"register-tile:{macro}={v}",
                f"halve the register tile along its {what}: `{macro}` {v} -> {v // 2} (each thread accumulates "
                f"{shape} outputs, `{tile}` halves, twice the blocks along {_AXES[a]})",
                (Edit(value.start_byte, value.end_byte, str(v // 2)),),
                None,
                REGISTER_TILE_CARD,
                (LaunchChange("grid", a, "value * 2", f"gridDim.{_AXES[a]} x 2"),),
            )
        )
    return out
