"""File-level facts the model builder reads before it analyses any function.

`FileContext` holds the file's constants (`#define`s and `const` integers it can evaluate), its `__constant__`
and `__device__` arrays, type aliases and view macros; it is part of each function's cache key. This module also
finds the function definitions in the file's top-level structure, says where each runs, and lists the syntax
problems the parser reported.
"""

from __future__ import annotations

import dataclasses
import re

from warpwise.analyzers.build_syntax import (
    _EXEC_SPACE_TOKENS,
    _HOST,
    _KERNEL,
    _QUALIFIER_TYPES,
    Node,
    _declarator_name,
    _text,
)
from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.expr.values import TYPE_SIZES, parse_int_literal
from warpwise.analyzers.macros import MacroView, view_macros
from warpwise.analyzers.model import FunctionKind, SyntaxProblem
from warpwise.analyzers.parse import captures, query

KNOWN_GAP_TOKENS = ("__device__", "__host__", "__cluster_dims__", "__align__", "__grid_constant__")
_NUMERIC_TEXT = re.compile(r"^[\s()0-9xXa-fA-FuUlL+\-*/%<>&|^~]*$")

_MACRO_COMMENT = re.compile(r"/\*.*?\*/|//.*$", re.S)


def eval_numeric_text(text: str, consts: dict[str, int]) -> int | None:
    """Evaluate a macro body made of integer literals, known constants and arithmetic, or return None."""
    # tree-sitter keeps a trailing `// comment` inside the macro's body (`preproc_arg`); it is not part of it.
    stripped = _MACRO_COMMENT.sub(" ", text).strip()
    if not stripped:
        return None
    lit = parse_int_literal(stripped.strip("()"))
    if lit is not None:
        return lit
    names = re.findall(r"[A-Za-z_]\w*", stripped)
    for n in names:
        if n not in consts and not re.fullmatch(r"[uUlL]+", n):
            return None
    expr = re.sub(r"(?<=[0-9])[uUlL]+\b", "", stripped)
    expr = re.sub(r"[A-Za-z_]\w*", lambda m: str(consts.get(m.group(0), m.group(0))), expr)
    if not _NUMERIC_TEXT.match(expr):
        return None
    try:
        val = cexpr.evaluate_int(expr, {})
    except (ValueError, ArithmeticError):  # cexpr.ExprError, and a negative or huge shift
        return None
    return val if abs(val) < 1 << 62 else None


@dataclasses.dataclass(frozen=True, slots=True)
class FileContext:
    """File-level facts that a function's analysis reads; part of each function's cache key."""

    consts: tuple[tuple[str, int], ...]
    constant_arrays: frozenset[str]
    device_arrays: frozenset[str]
    typedefs: tuple[tuple[str, str], ...] = ()
    """File-level `typedef` / `using` aliases (and `#define`s that name a type), resolved to the type they name."""
    views: tuple[MacroView, ...] = ()
    """The file's function-like macros that view an element through another pointer type (`HALF2(x)`)."""


_CONTAINERS = frozenset(
    {
        "translation_unit",
        "namespace_definition",
        "declaration_list",
        "linkage_specification",
        "template_declaration",
        "preproc_ifdef",
        "preproc_if",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "field_declaration_list",
        "struct_specifier",
        "class_specifier",
        "union_specifier",
        "ERROR",
        "access_specifier",
    }
)


def _top_level(root: Node) -> tuple[list[tuple[Node, Node | None]], list[Node], list[Node]]:
    """Walk the file's top-level structure (namespaces, `extern "C"`, templates, structs, `#if` blocks).

    Returns the function definitions (each with its enclosing `template_declaration`, if any), the `#define`s,
    and the declarations outside functions. This shallow walk touches a few hundred nodes, far fewer than a
    query over the whole tree, which matters after every keystroke.
    """
    functions: list[tuple[Node, Node | None]] = []
    defines: list[Node] = []
    decls: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        for child in reversed(node.children):
            t = child.type
            if t == "function_definition":
                functions.append((child, node if node.type == "template_declaration" else None))
                if child.has_error:
                    # Half-typed code can leave later functions nested inside an unclosed body; keep them.
                    nested = captures(query("(function_definition) @fn"), child).get("fn", [])
                    functions.extend((n, None) for n in nested if n.start_byte > child.start_byte)
            elif t in ("preproc_def", "preproc_function_def"):
                defines.append(child)
            elif t == "type_definition" or t == "alias_declaration":
                decls.append(child)
            elif t == "declaration" or t == "field_declaration":
                decls.append(child)
                ty = child.child_by_field_name("type")
                if ty is not None and ty.type in ("struct_specifier", "class_specifier"):
                    stack.append(ty)
            elif t in _CONTAINERS:
                stack.append(child)
    functions.sort(key=lambda pair: pair[0].start_byte)
    return functions, defines, decls


def _file_context(root: Node, src: bytes) -> tuple[FileContext, frozenset[str], list[tuple[Node, Node | None]]]:
    """Read file-level constants, `__constant__`/`__device__` arrays and the function definitions."""
    functions, defines, decls = _top_level(root)
    consts: dict[str, int] = {}
    macros: set[str] = set()
    constant_arrays: set[str] = set()
    device_arrays: set[str] = set()
    for d in sorted(defines, key=lambda n: n.start_byte):
        name_node = d.child_by_field_name("name")
        if name_node is None:
            continue
        name = _text(src, name_node)
        macros.add(name)
        if d.type != "preproc_def":
            continue
        val_node = d.child_by_field_name("value")
        if val_node is not None:
            val = eval_numeric_text(_text(src, val_node), consts)
            if val is not None:
                consts[name] = val
    typedefs = _typedefs(decls, defines, src)
    for d in sorted(decls, key=lambda n: n.start_byte):
        if d.type == "type_definition" or d.type == "alias_declaration":
            continue
        quals = {_text(src, c) for c in d.children if c.type in ("type_qualifier", "storage_class_specifier")}
        quals |= {c.type for c in d.children if c.type in ("__device__", "__constant__", "__shared__")}
        if not quals:
            continue
        for decl in d.children_by_field_name("declarator"):
            dname = _declarator_name(decl, src)
            if dname is None:
                continue
            if "__constant__" in quals:
                constant_arrays.add(dname)
            elif "__device__" in quals:
                device_arrays.add(dname)
            elif ("constexpr" in quals or "const" in quals) and decl.type == "init_declarator":
                value = decl.child_by_field_name("value")
                if value is not None:
                    val = eval_numeric_text(_text(src, value), consts)
                    if val is not None:
                        consts[dname] = val
    ctx = FileContext(
        tuple(sorted(consts.items())),
        frozenset(constant_arrays),
        frozenset(device_arrays),
        typedefs,
        view_macros(defines, src),
    )
    return ctx, frozenset(macros), functions


_TYPE_WORDS = re.compile(
    r"^(?:(?:const|volatile|signed|unsigned|short|long|struct)\s+)*[A-Za-z_][\w:]*(?:\s+(?:int|long|char|short))*$"
)


def _typedefs(decls: list[Node], defines: list[Node], src: bytes) -> tuple[tuple[str, str], ...]:
    """Return the file's type aliases (`typedef float floatX;`, `using T = __half;`, `#define realT float`) with
    chains resolved (`typedef floatX realT;` names `float`), so that the model reads the types they stand for."""
    raw: dict[str, str] = {}
    for d in sorted(decls, key=lambda n: n.start_byte):
        if d.type == "type_definition":
            ty = d.child_by_field_name("type")
            if ty is None or ty.type in ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier"):
                continue
            target = " ".join(_text(src, ty).split())
            for decl in d.children_by_field_name("declarator"):
                if decl.type == "type_identifier":
                    raw[_text(src, decl)] = target
        elif d.type == "alias_declaration":
            name, ty = d.child_by_field_name("name"), d.child_by_field_name("type")
            if name is not None and ty is not None:
                raw[_text(src, name)] = " ".join(_text(src, ty).split())
    for d in defines:
        if d.type != "preproc_def":
            continue
        name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
        if name is None or value is None:
            continue
        body = " ".join(_MACRO_COMMENT.sub(" ", _text(src, value)).split())
        if body in TYPE_SIZES or raw.get(body) is not None:
            raw.setdefault(_text(src, name), body)
    out: dict[str, str] = {}
    for name, target in raw.items():
        seen = {name}
        while target in raw and target not in seen:
            seen.add(target)
            target = raw[target]
        if _TYPE_WORDS.match(target) and target != name:
            out[name] = target.removeprefix("const ").strip()
    return tuple(sorted(out.items()))


def _syntax_problems(root: Node, src: bytes) -> list[SyntaxProblem]:
    if not root.has_error:
        return []
    out: list[SyntaxProblem] = []
    stack = [root]
    while stack and len(out) < 200:
        n = stack.pop()
        if n.is_missing:
            out.append(SyntaxProblem(f"expected `{n.type}` here", (n.start_byte, max(n.end_byte, n.start_byte))))
            continue
        if n.type == "ERROR":
            text = _text(src, n).strip()
            if text.startswith(KNOWN_GAP_TOKENS):
                continue
            first = text.splitlines()[0][:40] if text else ""
            out.append(
                SyntaxProblem(
                    f"cannot parse `{first}`" if first else "cannot parse this code",
                    (n.start_byte, n.end_byte),
                )
            )
            continue
        if n.has_error:
            stack.extend(reversed(n.children))
    out.sort(key=lambda p: p.span)
    return out


def _kind_of(fn: Node) -> FunctionKind:
    """Return where a function runs, from its `__global__`, `__device__` and `__host__` specifiers."""
    dev = host = False
    for c in fn.children:
        ct = c.type
        if ct in _EXEC_SPACE_TOKENS:
            if ct == "__global__":
                return _KERNEL
            if ct == "__device__":
                dev = True
            else:
                host = True
        elif ct in _QUALIFIER_TYPES:
            for g in c.children:
                gt = g.type
                if gt == "__global__":
                    return _KERNEL
                if gt == "__device__":
                    dev = True
                elif gt == "__host__":
                    host = True
    if dev:
        return FunctionKind.HOST_DEVICE if host else FunctionKind.DEVICE
    return _HOST
