"""The one walk from tree-sitter expression nodes to values of an algebra.

Every reading of a C integer expression from a syntax tree goes through the same steps: look through
parentheses, give up beyond a nesting depth, and take the node apart by its kind (a literal, a name, a member
such as `threadIdx.x`, a cast, a unary or binary operator, a conditional, a subscript). `ExprWalk` does these
steps once; an algebra says what each kind of node is worth in it by overriding the `on_*` methods, and what an
expression it cannot read is (`unknown`: None, or an exception). The integer ranges (`ranges.IntRanges`) and the
lineages' exact polynomials (`warpwise.lineages.deopt.unstage`) are two such algebras; what a name or a type means
stays the caller's (a walk is told through the methods it overrides).
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

Node = Any
T = TypeVar("T")


def unparen(node: Node | None) -> Node | None:
    """Return the expression inside any number of parentheses (comments inside them ignored)."""
    while node is not None and node.type == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        node = inner[0] if len(inner) == 1 else None
    return node


class ExprWalk(Generic[T]):
    """Walk an expression node into a value of `T`, one `on_*` method per kind of node.

    `walk(node, depth)` looks through parentheses (`unparen`), answers `unknown` for a missing node or beyond
    `max_depth`, and hands the node to the method of its kind with its depth; a method walks the parts it needs
    with `self.walk(child, depth + 1)`. Every method answers `unknown` unless the algebra overrides it.
    """

    max_depth: ClassVar[int] = 24

    def unknown(self, node: Node | None) -> T:
        """Return what an expression the algebra cannot read is (or raise)."""
        raise NotImplementedError

    def unparen(self, node: Node | None) -> Node | None:
        """Return the expression inside parentheses (an algebra may read parentheses its own way)."""
        return unparen(node)

    def walk(self, node: Node | None, depth: int = 0) -> T:
        """Return the value of an expression node."""
        node = self.unparen(node)
        if node is None or depth > self.max_depth:
            return self.unknown(node)
        name = _KINDS.get(node.type)
        return getattr(self, name)(node, depth) if name is not None else self.on_other(node, depth)

    def on_number(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_identifier(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_field(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_cast(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_unary(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_binary(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_conditional(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_subscript(self, node: Node, depth: int) -> T:
        return self.unknown(node)

    def on_other(self, node: Node, depth: int) -> T:
        return self.unknown(node)


_KINDS: dict[str, str] = {
    "number_literal": "on_number",
    "identifier": "on_identifier",
    "field_expression": "on_field",
    "cast_expression": "on_cast",
    "unary_expression": "on_unary",
    "binary_expression": "on_binary",
    "conditional_expression": "on_conditional",
    "subscript_expression": "on_subscript",
}
"""The kinds of node a walk takes apart, and the method of each (looked up on the algebra, so overrides count)."""
