"""One element per thread instead of coarsening: launch enough threads that each does one iteration.

Two shapes:
- `grid-x` / `grid-y` / `grid-z`: a grid-stride kernel (every use of `gridDim.D` is a loop stride, declared
  `const int stride = gridDim.x * E` or written in the loop update) is correct for any grid, so the simpler
  kernel is the same code launched with one block per E iterations: grid.D = ceil(bound / E), where `bound` is
  the limit of every loop that steps by the stride (translated to the problem's inputs, see `PythonExpr`).
- `block`: a block-size macro B (the kernel's `__launch_bounds__(B)`) from which a per-thread work count
  W = (... / B) > 1 is derived becomes B * W (at most 1024), and the block is launched W times larger, so W
  becomes 1: each thread moves one piece where it moved W.

The forward rewrite is the card `one-element-per-thread`.
"""

from __future__ import annotations

import re

from warpwise.analyzers.model import Function
from warpwise.lineages.deopt.base import (
    Deopt,
    KernelSource,
    LaunchChange,
    Node,
    PythonExpr,
    enclosing,
    unparen,
)
from warpwise.skills.rewrite import Edit

AXES = ("x", "y", "z")
GRID_LIMITS = (2**31 - 1, 65535, 65535)
MAX_BLOCK = 1024


def _grid_uses(src: KernelSource, node: Node, axis: str) -> list[Node]:
    """Return the `gridDim.<axis>` expressions below a node."""
    out = []
    for f in src.nodes(node, ("field_expression",)):
        arg = f.child_by_field_name("argument")
        field = f.child_by_field_name("field")
        if arg is not None and field is not None and src.text_of(arg) == "gridDim" and src.text_of(field) == axis:
            out.append(f)
    return out


def _product_other(src: KernelSource, use: Node) -> tuple[Node, Node | None] | None:
    """Return (the whole stride expression, the per-block factor or None) of `gridDim.D [* E]`."""
    parent = use.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    if parent is not None and parent.type == "binary_expression":
        op = parent.child_by_field_name("operator")
        if op is not None and op.type == "*":
            left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
            other = right if unparen(left).id == use.id else left
            return parent, other
    return use, None


def _factor_python(src: KernelSource, expr: PythonExpr, node: Node | None) -> str | None:
    """Return the Python text of a per-block factor (`blockDim.x` reads the current launch)."""
    if node is None:
        return "1"
    node = unparen(node)
    if node.type == "field_expression":
        arg, field = node.child_by_field_name("argument"), node.child_by_field_name("field")
        if arg is not None and field is not None and src.text_of(arg) == "blockDim":
            return f"g[1][{AXES.index(src.text_of(field))}]"
        return None
    return expr.translate(node)


def _stride_bounds(src: KernelSource, fn: Function, fn_node: Node, stride: str) -> list[Node] | None:
    """Return the bounds of every `for` loop that steps by `stride`; None when a loop has another shape."""
    bounds = []
    for loop in src.nodes(fn_node, ("for_statement",)):
        update = loop.child_by_field_name("update")
        if update is None or not re.search(rf"\b{re.escape(stride)}\b", src.text_of(update)):
            continue
        if update.type != "assignment_expression" or src.text_of(update.child_by_field_name("operator")) != "+=":
            return None
        var = src.text_of(update.child_by_field_name("left"))
        cond = loop.child_by_field_name("condition")
        cond = unparen(cond) if cond is not None else None
        if cond is None or cond.type != "binary_expression":
            return None
        op = cond.child_by_field_name("operator")
        left = cond.child_by_field_name("left")
        if op is None or op.type != "<" or not re.match(rf"\s*{re.escape(var)}\b", src.text_of(left)):
            return None
        bounds.append(cond.child_by_field_name("right"))
    return bounds


def _grid_candidates(src: KernelSource, fn: Function) -> list[Deopt]:
    """Return one candidate per grid axis along which the kernel is a grid-stride loop."""
    fn_node = src.function_node(fn)
    if fn_node is None:
        return []
    expr = PythonExpr(src, fn)
    out = []
    for d, axis in enumerate(AXES):
        uses = _grid_uses(src, fn_node, axis)
        if not uses:
            continue
        factors: list[tuple[str, str]] = []
        bounds: list[Node] = []
        ok = True
        for use in uses:
            found = _product_other(src, use)
            whole, other = found if found is not None else (use, None)
            factor = _factor_python(src, expr, other)
            decl = enclosing(whole, "init_declarator")
            if factor is None or decl is None or unparen(decl.child_by_field_name("value")).id != whole.id:
                ok = False
                break
            name = src.text_of(decl.child_by_field_name("declarator"))
            found_bounds = _stride_bounds(src, fn, fn_node, name)
            if not found_bounds:
                ok = False
                break
            bounds += found_bounds
            factors.append((factor, src.text_of(other) if other is not None else "1"))
        if not ok or len({f for f, _ in factors}) != 1:
            continue
        py_bounds = [expr.translate(b) for b in bounds]
        if any(b is None for b in py_bounds):
            continue
        factor, factor_c = factors[0]
        ceil = ", ".join(f"-(-({b}) // ({factor}))" for b in dict.fromkeys(py_bounds))
        c_bounds = " or ".join(dict.fromkeys(src.text_of(b) for b in bounds))
        change = LaunchChange(
            "grid",
            d,
            f"max(1, min({GRID_LIMITS[d]}, max({ceil}, 0)))",
            f"grid.{axis} = ceil({c_bounds} / {factor_c})",
        )
        out.append(
            Deopt(
                "coarsening",
                f"grid-{axis}",
                f"one iteration per thread: launch grid.{axis} = ceil({c_bounds} / {factor_c}) blocks instead of a "
                f"smaller grid that strides",
                (),
                "one-element-per-thread",
                launch=(change,),
            )
        )
    return out


def _block_candidates(src: KernelSource, fn: Function) -> list[Deopt]:
    """Return the candidate that grows a block-size macro until the per-thread work count derived from it is 1."""
    if not fn.launch_bounds:
        return []
    block = fn.launch_bounds[0].strip()
    b = src.macro_value(block)
    defs = src.macro_definitions()
    if b is None or block not in defs:
        return []
    fn_node = src.function_node(fn)
    for name, node in defs.items():
        value = node.child_by_field_name("value")
        w = src.macro_value(name)
        if value is None or w is None or w <= 1 or name == block:
            continue
        if not re.search(rf"/\s*{re.escape(block)}\b", src.text_of(value)) or b * w > MAX_BLOCK:
            continue
        if not re.search(rf"<\s*{re.escape(name)}\b", src.text_of(fn_node)):
            continue
        block_value = defs[block].child_by_field_name("value")
        if block_value is None or src.text_of(block_value).strip() != str(b):
            continue
        change = LaunchChange("block", 0, f"value * {w}", f"block.x = {block} * {w} = {b * w}")
        return [
            Deopt(
                "coarsening",
                "block",
                f"one piece per thread: `{block}` {b} -> {b * w} threads, so `{name}` is 1 instead of {w}",
                (Edit(block_value.start_byte, block_value.end_byte, str(b * w)),),
                "one-element-per-thread",
                launch=(change,),
            )
        ]
    return []


def one_element_per_thread(src: KernelSource) -> list[Deopt]:
    """Return the candidates that undo thread coarsening in the walked kernel."""
    fn = src.kernel_fn
    if fn is None:
        return []
    return _grid_candidates(src, fn) + _block_candidates(src, fn)
