"""One query over a function's syntax, shared by the cards that look for nodes of a few types in it.

The row cards walked a kernel's whole syntax tree in Python several times to find its blocks, its declarations
with an initializer, its subscripts, dereferences and calls. `of_type` answers from one tree-sitter query over the
function definition (run in C), kept on the model (`model.memo`), so that every later question about the same
function is a dictionary look-up.
"""

from __future__ import annotations

from typing import Any

from warpwise.analyzers.facts import function_node
from warpwise.analyzers.model import FileModel, Function
from warpwise.analyzers.parse import captures, query

Node = Any

TYPES = (
    "compound_statement",
    "init_declarator",
    "declaration",
    "subscript_expression",
    "pointer_expression",
    "call_expression",
    "assignment_expression",
    "update_expression",
    "field_expression",
)
"""The node types `of_type` knows (one capture each)."""

_PATTERN = "\n".join(f"({t}) @{t}" for t in TYPES)
_EMPTY: tuple[Node, ...] = ()


def _preorder(n: Node) -> tuple[int, int]:
    return (n.start_byte, -n.end_byte)


def of_type(model: FileModel, fn: Function, node_type: str) -> tuple[Node, ...]:
    """Return a function's nodes of one type (one of `TYPES`), in the order of a pre-order walk of its definition."""
    if node_type not in TYPES:
        raise ValueError(f"function_nodes.of_type does not collect `{node_type}` nodes")
    memo: dict[tuple[int, int], dict[str, tuple[Node, ...]]] = model.memo.setdefault(f"{__name__}.of_type", {})
    key = (fn.base, fn.length)
    table = memo.get(key)
    if table is None:
        root = function_node(model, fn)
        found = captures(query(_PATTERN), root) if root is not None else {}
        # Nodes of one type nest only strictly (an outer block, subscript or call is longer than an inner one that
        # starts where it starts), so (start, -end) orders them as a pre-order walk visits them.
        table = memo[key] = {t: tuple(sorted(found.get(t, ()), key=_preorder)) for t in TYPES}
    return table.get(node_type, _EMPTY)
