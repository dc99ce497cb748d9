"""Enum parameters of kernels: passed to the kernel as the integer they are.

A kernel parameter of an enum type (`adamMode_t mode`, `Activation act`) is an integer at the ABI level: an
unscoped enum without a fixed underlying type is 4 bytes when its enumerators fit an `int` (what nvcc and the host
compilers it uses do), a scoped enum without one is `int`, and `enum class E : unsigned char` is its base. The gate
passes scalars by their C type, so an enum argument is passed as that integer, its value the host code's argument
(`(adamMode_t)mode` with `mode` known) read with the enumerators as named constants.

Only enums declared in the file's text are read (a `typedef enum {...} T;`, `enum T {...};`, `enum class T : U
{...};`, inside namespaces too); enumerator values are evaluated in order as C does (implicit ones count up from
the previous one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.model import FileModel
from warpwise.verify.spec import normalise_type
from warpwise.verify.types import SCALAR_CTYPES


@dataclass(frozen=True)
class EnumType:
    """An enum declared in the file: its name, the integer type it is passed as, and its enumerators' values."""

    name: str
    ctype: str
    values: tuple[tuple[str, int], ...]


def _text(src: bytes, node: Any) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _enumerators(src: bytes, body: Any, known: dict[str, int]) -> tuple[tuple[str, int], ...] | None:
    """Return an enumerator list's names and values, or None when a value does not evaluate."""
    out: list[tuple[str, int]] = []
    nxt = 0
    for e in body.named_children:
        if e.type != "enumerator":
            continue
        name = e.child_by_field_name("name")
        value = e.child_by_field_name("value")
        if name is None:
            return None
        if value is not None:
            try:
                nxt = cexpr.evaluate_int(_text(src, value), {**known, **dict(out)})
            except cexpr.ExprError:
                return None
        out.append((_text(src, name), nxt))
        nxt += 1
    return tuple(out)


def enum_types(model: FileModel) -> dict[str, EnumType]:
    """Return the enums the file declares, by type name (the typedef's name for `typedef enum {...} T;`)."""
    src = model.text
    out: dict[str, EnumType] = {}
    stack = [model.tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type != "enum_specifier":
            continue
        body = node.child_by_field_name("body")
        if body is None:
            continue
        name_node = node.child_by_field_name("name")
        parent = node.parent
        names = [_text(src, name_node)] if name_node is not None else []
        if parent is not None and parent.type == "type_definition":
            names += [_text(src, d) for d in parent.children_by_field_name("declarator") if d.type == "type_identifier"]
        if not names:
            continue
        base = node.child_by_field_name("base")
        ctype = normalise_type(_text(src, base)) if base is not None else "int"
        if ctype not in SCALAR_CTYPES:
            continue
        values = _enumerators(src, body, dict(model.constants))
        if values is None:
            continue
        for n in names:
            out[n] = EnumType(n, ctype, values)
    return out


def enum_of(model: FileModel, type_text: str) -> EnumType | None:
    """Return the enum a parameter's type names (`const adamMode_t`, `enum Mode`), if the file declares it."""
    name = normalise_type(re.sub(r"\b(?:const|volatile|enum|class|struct)\b", " ", type_text)).strip()
    name = name.rsplit("::", 1)[-1]
    return enum_types(model).get(name)


def argument_text(raw: str, enum: EnumType) -> str:
    """Return a launch argument without a cast to the enum (`(adamMode_t)mode` -> `mode`), else as written."""
    t = re.escape(enum.name)
    m = re.fullmatch(rf"\s*\(\s*(?:enum\s+)?(?:\w+::)*{t}\s*\)\s*(.+)", raw, re.S)
    if m:
        return m.group(1)
    m = re.fullmatch(rf"\s*(?:static_cast\s*<\s*(?:\w+::)*{t}\s*>|(?:\w+::)*{t})\s*\((.+)\)\s*", raw, re.S)
    return m.group(1) if m else raw
