"""Compile-time constants the model cannot give a value: template parameters, `constexpr` locals, static members.

`i < kItems` with a template `kItems` has no number in the model (the file does not instantiate the kernel, or
instantiates it several ways), yet it is a constant of every instance: the compiler unrolls a loop over it, folds
a group size `tid % NUM_WARPS` and keeps an array indexed by such values in registers. Rules that must not call
such a value "known only at run time" ask `compile_time`.
"""

from __future__ import annotations

import re

from warpwise.analyzers.facts_reduce import Node, field, single_definition, text_of, unparen
from warpwise.analyzers.model import FileModel, Function

_COMPOUND = frozenset(
    {"binary_expression", "unary_expression", "conditional_expression", "parenthesized_expression", "cast_expression"}
)


def compile_time(model: FileModel, fn: Function, node: Node | None, depth: int = 0) -> bool:
    """Return whether an expression is a compile-time constant of every instance of the function: literals,
    `sizeof`, the file's constants, non-type template parameters, static members of types (`Traits::kItems`) and
    locals defined once from such values, combined by arithmetic."""
    node = unparen(node)
    if node is None or depth > 6:
        return False
    t = node.type
    if t in ("number_literal", "sizeof_expression", "true", "false", "char_literal"):
        return True
    if t == "identifier":
        name = text_of(model, node)
        if name in model.constants or any(tp.kind == "value" and tp.name == name for tp in fn.template_params):
            return True
        if name in dimension_names(fn):
            return True
        value = single_definition(model, fn, name)
        return _declared_constexpr(model, value) or compile_time(model, fn, value, depth + 1)
    if t == "qualified_identifier":
        # `Ktraits::kNItems`, `Config::N`: a static member named through a type, constant per instance.
        return field(node, "name") is not None and field(node, "name").type == "identifier"
    if t in _COMPOUND:
        parts = [c for c in node.named_children if c.type not in ("comment", "type_descriptor")]
        return bool(parts) and all(compile_time(model, fn, c, depth + 1) for c in parts)
    return False


def _declared_constexpr(model: FileModel, value: Node | None) -> bool:
    """Return whether an initializer is that of a `constexpr` variable (a constant expression by definition, even
    when it calls a `constexpr` function the model cannot evaluate)."""
    decl = value.parent if value is not None else None
    if decl is None or decl.type != "init_declarator" or decl.parent is None or decl.parent.type != "declaration":
        return False
    return any(c.type == "type_qualifier" and text_of(model, c) == "constexpr" for c in decl.parent.children)


_NAME = re.compile(r"[A-Za-z_]\w*")


def dimension_names(fn: Function) -> frozenset[str]:
    """Return the names in the dimensions of the function's per-thread arrays (`float acc[WARP_M / MMA_M][4]`):
    a local array's dimensions are constant expressions in C++ (device code has no variable-length arrays), so each
    of these names is a compile-time constant, wherever it is defined (a header the file includes, say)."""
    names: set[str] = set()
    for type_text in fn.locals.values():
        if "[" in type_text:
            for dim in re.findall(r"\[([^\]]*)\]", type_text):
                names.update(n for n in _NAME.findall(dim) if n != "sizeof")
    return frozenset(names)


def compile_time_name(model: FileModel, fn: Function, name: str) -> bool:
    """Return whether a name is a compile-time constant of every instance of the function (see `compile_time`)."""
    if name in model.constants or name in dimension_names(fn):
        return True
    if any(tp.kind == "value" and tp.name == name for tp in fn.template_params):
        return True
    value = single_definition(model, fn, name)
    return _declared_constexpr(model, value) or compile_time(model, fn, value)
