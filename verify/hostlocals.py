"""Names a host body declares before a launch: what the launch's template arguments mean there.

A torch extension launches its kernels inside the lambda of an `AT_DISPATCH_*` macro, and the template arguments
it passes are often names the lambda (or the function around it) declares just before the launch:

    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "op", [&] {
      using accscalar_t = at::acc_type<scalar_t, true>;
      const int ILP = sizeof(float4) / sizeof(scalar_t);
      op_kernel<ILP, scalar_t, accscalar_t><<<grid, block>>>(...);
    });

Those names mean nothing at file scope, so NVRTC cannot take `op_kernel<ILP, ...>` as a name expression.
`local_bindings` reads, from the syntax tree, the `using` aliases, `typedef`s and initialised `const` /
`constexpr` / `auto` variables of every block around the launch that come before it (the innermost block's
latest declaration wins, as in C++ scoping); `bind` substitutes them into the template arguments, with
`scalar_t` bound to each dispatched dtype, so each dtype gets its own instance.
"""

from __future__ import annotations

import re
from typing import Any

_BLOCKS = frozenset({"compound_statement"})
_NAME = re.compile(r"(?<![\w:.])([A-Za-z_]\w*)\b(?!\s*::)")
_MAX_ROUNDS = 6


def _text(data: bytes, node: Any) -> str:
    """Return a node's source text, whitespace collapsed."""
    return " ".join(data[node.start_byte : node.end_byte].decode("utf-8", "replace").split())


def _declared(data: bytes, node: Any) -> tuple[str, str] | None:
    """Return (name, meaning) for a local alias, typedef or initialised variable declaration, else None."""
    if node.type == "alias_declaration":
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("type")
        return (_text(data, name), _text(data, value)) if name is not None and value is not None else None
    if node.type == "type_definition":
        value = node.child_by_field_name("type")
        decl = node.child_by_field_name("declarator")
        if value is None or decl is None or decl.type != "type_identifier":
            return None
        return _text(data, decl), _text(data, value)
    if node.type == "declaration":
        inits = [c for c in node.children_by_field_name("declarator") if c.type == "init_declarator"]
        if len(inits) != 1:
            return None
        ident = inits[0].child_by_field_name("declarator")
        value = inits[0].child_by_field_name("value")
        if ident is None or value is None or ident.type != "identifier" or value.type == "initializer_list":
            return None
        # Only names whose value a template argument can take: constants and `auto` of a constant expression.
        qualifiers = {c.type for c in node.children}
        if not qualifiers & {"type_qualifier", "placeholder_type_specifier"}:
            return None
        return _text(data, ident), f"({_text(data, value)})"
    return None


def local_bindings(data: bytes, tree: Any, offset: int) -> dict[str, str]:
    """Return the names the blocks around byte `offset` declare before it, each with what it stands for."""
    env: dict[str, str] = {}
    node = tree.root_node.descendant_for_byte_range(offset, offset)
    while node is not None:
        if node.type in _BLOCKS:
            scope: dict[str, str] = {}
            for child in node.named_children:
                if child.end_byte > offset:
                    break
                found = _declared(data, child)
                if found is not None:
                    scope[found[0]] = found[1]
            for name, value in scope.items():
                env.setdefault(name, value)
        if node.type == "function_definition":
            break
        node = node.parent
    return env


def bind(args: tuple[str, ...] | list[str], env: dict[str, str]) -> tuple[str, ...]:
    """Return template arguments with the names `env` binds replaced (aliases of aliases too)."""
    out: list[str] = []
    for arg in args:
        text = arg
        for _ in range(_MAX_ROUNDS):
            new = _NAME.sub(lambda m: env.get(m.group(1), m.group(1)), text)
            if new == text:
                break
            text = new
        out.append(" ".join(text.split()))
    return tuple(out)


def names_in(args: tuple[str, ...] | list[str]) -> set[str]:
    """Return the unqualified names the template arguments use."""
    return {m.group(1) for a in args for m in _NAME.finditer(a)}
