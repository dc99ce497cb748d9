"""Canonical forms: expressions that compute the same value compare equal, whatever their spelling."""

from __future__ import annotations

import pytest

from warpwise.analyzers.expr.canon import Canonicalizer
from warpwise.analyzers.parse import parse_tree


def _form(expr: str, constants: dict[str, int] | None = None) -> object:
    src = f"void f() {{ x = {expr}; }}".encode()
    tree = parse_tree(src)
    node = tree.root_node
    while node.type != "assignment_expression":
        node = next(c for c in node.named_children if c.start_byte <= src.index(b"x =") < c.end_byte)
    return Canonicalizer(src, constants or {}).of(node.child_by_field_name("right"))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("blockDim.x / 2", "blockDim.x/2"),
        ("blockDim.x / 2", "blockDim.x >> 1"),
        ("blockDim.x / 2", "(blockDim.x * 0.5)"),
        ("blockIdx.x * blockDim.x + threadIdx.x", "threadIdx.x + blockDim.x*blockIdx.x"),
        ("2 * s * tid", "tid * (s << 1)"),
        ("(2 * s) / 2", "s"),
        ("BLOCK / 2", "128"),
        ("a > b", "b < a"),
        ("(unsigned int)tid", "tid"),
    ],
)
def test_same_value_same_form(a: str, b: str) -> None:
    assert _form(a, {"BLOCK": 256}) == _form(b, {"BLOCK": 256})


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("blockDim.x / 2", "blockDim.x / 4"),
        ("(s + 1) / 2", "s / 2 + 1"),
        ("a - b", "b - a"),
        ("a < b", "a <= b"),
        ("x[i + 1]", "x[i]"),
    ],
)
def test_different_values_differ(a: str, b: str) -> None:
    assert _form(a) != _form(b)
