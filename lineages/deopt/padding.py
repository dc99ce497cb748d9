"""Remove padding: a shared array's rows lose the extra elements that spread column accesses over the banks.

Two shapes, each exact when every index stays below the unpadded width (the gate checks it):
- a two-dimensional `__shared__` array whose last dimension is `W + k` (k from 1 to 8) becomes `W`;
- a `#define LD (W + k)` (k from 1 to 8) that serves as the row pitch of shared memory (it multiplies an index in
  the address of a shared-memory access, or sizes a shared array) becomes `(W)`.

The forward rewrite is the card `shared-bank-conflict`.
"""

from __future__ import annotations

import re

from warpwise.lineages.deopt.base import Deopt, KernelSource, Node, unparen
from warpwise.skills.rewrite import Edit

MAX_PAD = 8


def _padded(src: KernelSource, node: Node) -> tuple[Node, Node] | None:
    """Return (expression, whole) of `W + k` with a small literal k, else None."""
    node = unparen(node)
    if node is None or node.type != "binary_expression":
        return None
    op = node.child_by_field_name("operator")
    right = node.child_by_field_name("right")
    left = node.child_by_field_name("left")
    if op is None or op.type != "+" or right is None or left is None or right.type != "number_literal":
        return None
    try:
        k = int(src.text_of(right).rstrip("uUlL"), 0)
    except ValueError:
        return None
    return (left, node) if 1 <= k <= MAX_PAD else None


def _array_edits(src: KernelSource) -> list[tuple[Edit, str]]:
    """Return the edits that unpad two-dimensional shared arrays."""
    out = []
    for decl in src.nodes(None, ("declaration",)):
        if "__shared__" not in src.text_of(decl).split("=")[0]:
            continue
        for arr in src.nodes(decl, ("array_declarator",)):
            inner = arr.child_by_field_name("declarator")
            size = arr.child_by_field_name("size")
            if inner is None or inner.type != "array_declarator" or size is None:
                continue
            found = _padded(src, size)
            if found is None:
                continue
            width, whole = found
            name = inner
            while name is not None and name.type == "array_declarator":
                name = name.child_by_field_name("declarator")
            out.append((Edit(whole.start_byte, whole.end_byte, src.text_of(width)), f"`{src.text_of(name)}`"))
    return out


def _pitch_edits(src: KernelSource) -> list[tuple[Edit, str]]:
    """Return the edits that unpad `#define` row pitches of shared memory."""
    if not any(fn.shared for fn in src.device_functions()):
        return []
    out = []
    for name, node in src.macro_definitions().items():
        value = node.child_by_field_name("value")
        if value is None:
            continue
        m = re.fullmatch(r"\s*\(\s*(\w+)\s*\+\s*(\d+)\s*\)\s*", src.text_of(value))
        if m is None or not 1 <= int(m.group(2)) <= MAX_PAD:
            continue
        uses = src.code_matches(rf"\*\s*{re.escape(name)}\b|\b{re.escape(name)}\s*\*|\[\s*{re.escape(name)}\s*\]")
        if not uses:
            continue
        out.append((Edit(value.start_byte, value.end_byte, f"({m.group(1)})"), f"`{name}`"))
    return out


def remove_padding(src: KernelSource) -> list[Deopt]:
    """Return the candidate that removes the padding of shared arrays and shared row pitches."""
    found = _array_edits(src) + _pitch_edits(src)
    if not found:
        return []
    return [
        Deopt(
            "padding",
            "shared",
            f"remove the padding of {', '.join(label for _, label in found)}",
            tuple(e for e, _ in found),
            "shared-bank-conflict",
        )
    ]
