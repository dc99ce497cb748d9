"""`function_nodes.of_type` answers what a pre-order walk of a function's definition would find, in its order."""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.facts import function_node
from warpwise.analyzers.function_nodes import TYPES, of_type
from warpwise.engine import parsed_model

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "skills" / "row-register-cache" / "fixtures").glob("*.cu")) + sorted(
    (ROOT / "skills" / "row-cooperative-reduction" / "fixtures").glob("*.cu")
)

NESTED = b"""
__global__ void k(float **x, float *y, int n) {
  { { int a = 1, b = a; } }
  y[0] = x[1][2] + *(y + 1);
  for (int i = 0; i < n; i += 1) { if (i) { y[i] = f(g(i))(i); } }
}
"""


def _preorder(node):  # type: ignore[no-untyped-def]
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


@pytest.mark.parametrize("path", [None, *FILES], ids=lambda p: "nested" if p is None else p.name)
def test_of_type_is_the_walk(path: Path | None) -> None:
    data = NESTED if path is None else path.read_bytes()
    model = parsed_model(data, "nested.cu" if path is None else str(path))
    assert model.functions
    for fn in model.functions:
        walked = list(_preorder(function_node(model, fn)))
        for t in TYPES:
            want = [(n.start_byte, n.end_byte) for n in walked if n.type == t]
            assert [(n.start_byte, n.end_byte) for n in of_type(model, fn, t)] == want, (fn.name, t)
    if path is None:  # the body, two nested blocks, the loop's and the branch's
        assert len(of_type(model, model.functions[0], "compound_statement")) == 5


def test_an_unknown_type_is_refused() -> None:
    model = parsed_model(NESTED, "nested.cu")
    with pytest.raises(ValueError, match="for_statement"):
        of_type(model, model.functions[0], "for_statement")
