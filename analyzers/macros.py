"""Function-like macros of a file that view an element through a pointer of another type.

Real kernels load and store vectors through macros such as

    #define HALF2(x) (reinterpret_cast<half2 *>(&(x))[0])
    #define FLOAT4(p) (*reinterpret_cast<float4 *>(&(p)))

so `HALF2(c[idx]) = v` is a store of a `half2` at `c + idx`, and `FLOAT4(a[i])` is a 16-byte load. Read as text,
the access inside the macro call is an element passed to a call. This module reads each function-like macro's
body once (parsed by tree-sitter as an expression, with the macro's parameters as names) and says which of them
are such views: the parameter whose address is taken, and the pointer type it is cast to. The model builder then
records an access made through a view macro as what the expansion does (its kind from where the macro call
stands, its width from the view's type), so every rule, card and the problem-spec inference read the expansion.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tree_sitter import Node

from warpwise.analyzers.expr.poly import Poly
from warpwise.analyzers.parse import SourceFile

if TYPE_CHECKING:
    from warpwise.analyzers.model import FileModel

_CASTS = frozenset({"reinterpret_cast", "static_cast"})
_WRAPPER_HEAD = b"void warpwise_macro_view_() {\n("
_WRAPPER_TAIL = b"\n);\n}\n"
_MAX_BODY = 2000


@dataclass(frozen=True, slots=True)
class MacroView:
    """A function-like macro whose expansion is the lvalue `*(T *)&(argument)`."""

    name: str
    param: int
    """The position of the parameter whose address is cast."""
    type: str
    """The pointee type of the cast (`half2`), without `const`."""
    const: bool
    """Whether the cast's pointee is `const` (`reinterpret_cast<const float4 *>`)."""


def _named(node: Node | None) -> list[Node]:
    return [] if node is None else [c for c in node.named_children if c.type != "comment"]


def _unparen(node: Node | None) -> Node | None:
    while node is not None and node.type == "parenthesized_expression":
        inner = _named(node)
        node = inner[0] if len(inner) == 1 else None
    return node


def _text(src: bytes, node: Node) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _pointee(type_text: str) -> tuple[str, bool] | None:
    """Return (pointee type without `const`, whether it was `const`) of a one-level pointer type's text."""
    t = " ".join(type_text.split())
    if not t.endswith("*") or t.count("*") != 1:
        return None
    words = t[:-1].replace("__restrict__", " ").split()
    const = "const" in words
    base = " ".join(w for w in words if w not in ("const", "volatile"))
    return (base, const) if base else None


def _view(body: Node, src: bytes, params: list[str]) -> tuple[int, str, bool] | None:
    """Return (parameter, pointee, const) when an expression is `(cast<T *>(&(param)))[0]` or `*cast<T *>(&param)`."""
    node = _unparen(body)
    if node is None:
        return None
    if node.type == "subscript_expression":
        index = _named(node.child_by_field_name("indices"))
        if len(index) != 1 or index[0].type != "number_literal" or _text(src, index[0]).strip() not in ("0", "0u"):
            return None
        ptr = _unparen(node.child_by_field_name("argument"))
    elif node.type == "pointer_expression":
        op = node.child_by_field_name("operator")
        if op is None or op.type != "*":
            return None
        ptr = _unparen(node.child_by_field_name("argument"))
    else:
        return None
    if ptr is None:
        return None
    if ptr.type == "cast_expression":
        ty = ptr.child_by_field_name("type")
        target = _pointee(_text(src, ty)) if ty is not None else None
        inner = _unparen(ptr.child_by_field_name("value"))
    elif ptr.type == "call_expression":
        fn = ptr.child_by_field_name("function")
        if fn is None or fn.type != "template_function":
            return None
        name = fn.child_by_field_name("name")
        if name is None or _text(src, name).rsplit("::", 1)[-1] not in _CASTS:
            return None
        targs = fn.child_by_field_name("arguments")
        target = _pointee(_text(src, targs)[1:-1]) if targs is not None else None
        args = _named(ptr.child_by_field_name("arguments"))
        inner = _unparen(args[0]) if len(args) == 1 else None
    else:
        return None
    if target is None or inner is None or inner.type != "pointer_expression":
        return None
    op = inner.child_by_field_name("operator")
    arg = _unparen(inner.child_by_field_name("argument"))
    if op is None or op.type != "&" or arg is None or arg.type != "identifier":
        return None
    name_text = _text(src, arg)
    if name_text not in params:
        return None
    return params.index(name_text), target[0], target[1]


@functools.lru_cache(maxsize=1024)
def _body_expression(wrapped: bytes) -> Node | None:
    """Return the one expression of a macro body wrapped as a function, or None (a parse error, or not one expression).

    The body is a text of its own, parsed once as its own source. The answer depends on the text alone, so it is
    kept per text: a keystroke elsewhere in the file builds a new model whose macros are the same texts, and their
    bodies are not parsed again (the small trees are never edited, so sharing their nodes is safe).
    """
    tree = SourceFile(wrapped).tree
    if tree.root_node.has_error:
        return None
    fn = tree.root_node.named_children[0] if tree.root_node.named_children else None
    block = fn.child_by_field_name("body") if fn is not None else None
    stmts = _named(block)
    if len(stmts) != 1 or stmts[0].type != "expression_statement":
        return None
    expr = _named(stmts[0])
    return expr[0] if len(expr) == 1 else None


def view_macros(defines: list[Node], src: bytes) -> tuple[MacroView, ...]:
    """Return the view macros among a file's `#define`s (function-like ones only; the last definition wins)."""
    found: dict[str, MacroView | None] = {}
    for d in defines:
        if d.type != "preproc_function_def":
            continue
        name_node = d.child_by_field_name("name")
        params_node = d.child_by_field_name("parameters")
        value = d.child_by_field_name("value")
        if name_node is None or params_node is None:
            continue
        name = _text(src, name_node)
        found[name] = None
        if value is None or value.end_byte - value.start_byte > _MAX_BODY:
            continue
        params = [_text(src, p) for p in params_node.named_children if p.type == "identifier"]
        body = src[value.start_byte : value.end_byte].replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
        if b"&" not in body or b"*" not in body:
            continue
        wrapped = _WRAPPER_HEAD + body + _WRAPPER_TAIL
        expr = _body_expression(wrapped)
        got = _view(expr, wrapped, params) if expr is not None else None
        if got is not None:
            found[name] = MacroView(name, *got)
    return tuple(v for v in found.values() if v is not None)


def view_width(view_type: str | None) -> int | None:
    """Return the bytes one access through a view of `view_type` (`const float4`) moves, or None."""
    if not view_type:
        return None
    from warpwise.analyzers.expr.values import type_size

    base = view_type.removeprefix("const ").strip()
    return type_size(base) or None


@dataclass(frozen=True, slots=True)
class ExpressionMacro:
    """A function-like macro whose body is one expression (`#define IDX2C(i, j, ld) (((j) * (ld)) + (i))`)."""

    name: str
    params: tuple[str, ...]
    source: bytes
    """The body wrapped as a function of its own; `expr` is a node of this text's tree."""
    expr: Node


def function_macro_defs(root: Node, src: bytes) -> list[Node]:
    """Return the file's function-like `#define`s wherever they are (inside function bodies too), in file order.

    The definitions are found from the file's `#` characters (every `#define` token starts with one), not by a walk
    or a query over the whole tree, which would cost milliseconds on every keystroke.
    """
    found = []
    i = src.find(b"#")
    while i >= 0:
        n: Node | None = root.descendant_for_byte_range(i, i + 1)
        while n is not None and n.start_byte == i and n.type != "preproc_function_def":
            n = n.parent
        if n is not None and n.start_byte == i and n.type == "preproc_function_def":
            found.append(n)
        i = src.find(b"#", i + 1)
    return found


def file_function_macro_defs(model: FileModel) -> list[Node]:
    """Return `function_macro_defs` of a model's file, found once per model (several cards read them)."""
    key = "warpwise.analyzers.macros.function_macro_defs"
    got: list[Node] | None = model.memo.get(key)
    if got is None:
        got = function_macro_defs(model.tree.root_node, model.text)
        model.memo[key] = got
    return got


def expression_macros(defines: list[Node], src: bytes) -> dict[str, ExpressionMacro]:
    """Return the macros among function-like `#define`s whose body parses as one expression (the last one wins)."""
    found: dict[str, ExpressionMacro | None] = {}
    for d in defines:
        name_node = d.child_by_field_name("name")
        params_node = d.child_by_field_name("parameters")
        value = d.child_by_field_name("value")
        if name_node is None or params_node is None:
            continue
        name = _text(src, name_node)
        found[name] = None
        if value is None or value.end_byte - value.start_byte > _MAX_BODY:
            continue
        params = tuple(_text(src, p) for p in params_node.named_children if p.type == "identifier")
        body = src[value.start_byte : value.end_byte].replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
        wrapped = _WRAPPER_HEAD + body + _WRAPPER_TAIL
        expr = _body_expression(wrapped)
        if expr is not None:
            found[name] = ExpressionMacro(name, params, wrapped, expr)
    return {k: v for k, v in found.items() if v is not None}


def file_expression_macros(model: FileModel) -> dict[str, ExpressionMacro]:
    """Return `expression_macros` of a model's file, read once per model (several recognisers expand them)."""
    key = "warpwise.analyzers.macros.expression_macros"
    got: dict[str, ExpressionMacro] | None = model.memo.get(key)
    if got is None:
        got = expression_macros(file_function_macro_defs(model), model.text)
        model.memo[key] = got
    return got


def expansion_poly(
    macros: dict[str, ExpressionMacro],
    macro: ExpressionMacro,
    node: Node | None,
    env: dict[str, Poly],
    depth: int = 0,
    max_depth: int = 24,
) -> Poly | None:
    """Read a macro body's integer expression as a polynomial, its parameters replaced by their arguments' values.

    Only `+`, `-`, `*`, casts, parentheses, integer literals, names and calls of other expression macros are read,
    so a macro accepted here has no side effects; a name that is not a parameter (an object-like macro, a constant)
    is a symbol of its own, the same in every thread.
    """
    if node is None or depth > max_depth:
        return None
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    text = macro.source[node.start_byte : node.end_byte].decode(errors="replace")

    def read(n: Node | None) -> Poly | None:
        return expansion_poly(macros, macro, n, env, depth + 1, max_depth)

    if node.type == "number_literal":
        try:
            return Poly.const(int(text.rstrip("uUlL"), 0))
        except ValueError:
            return None
    if node.type == "identifier":
        return env.get(text, Poly.atom(text))
    if node.type == "cast_expression":
        return read(node.child_by_field_name("value"))
    if node.type == "call_expression":
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        inner_macro = macros.get(macro.source[fn.start_byte : fn.end_byte].decode(errors="replace")) if fn else None
        items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        if inner_macro is None or len(items) != len(inner_macro.params):
            return None
        values = [read(a) for a in items]
        if any(v is None for v in values):
            return None
        inner_env = {k: v for k, v in zip(inner_macro.params, values, strict=True) if v is not None}
        return expansion_poly(macros, inner_macro, inner_macro.expr, inner_env, depth + 1, max_depth)
    if node.type == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = read(node.child_by_field_name("argument"))
        sign = macro.source[op.start_byte : op.end_byte] if op is not None else b""
        if arg is None or sign not in (b"-", b"+"):
            return None
        return arg.scale(-1) if sign == b"-" else arg
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator")
        a = read(node.child_by_field_name("left"))
        b = read(node.child_by_field_name("right"))
        o = macro.source[op.start_byte : op.end_byte] if op is not None else b""
        if a is None or b is None or o not in (b"+", b"-", b"*"):
            return None
        return a + b if o == b"+" else a - b if o == b"-" else a * b
    return None
