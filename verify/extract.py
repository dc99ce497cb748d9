"""Extracting the device code of a `.cu` file into a translation unit that NVRTC can compile.

A user's file mixes host code (`main`, launch wrappers, `printf`, `std::vector`) with device code. NVRTC
compiles device code only, so the host parts are blanked out: host function definitions and declarations, and
`#include`s of headers that are neither found in the CUDA toolkit's include folders nor provided by NVRTC
(`<cstdio>`, `<vector>`, `<math.h>`). Everything else stays: macros, constants, structs, templates,
`__device__` helpers, `__constant__` arrays and the kernels themselves.

Blanking replaces each removed byte by a space (newlines are kept), so line and column numbers in NVRTC's log
point at the user's own source. A short prelude, placed before the code and followed by `#line 1`, stands in
for the dropped standard headers that device code commonly relies on: `INFINITY` and `NAN` for `<math.h>`,
CCCL's `<cuda/std/climits>` for `<climits>`, fixed-width integer types for `<cstdint>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warpwise.analyzers.parse import new_parser, parse_source

_CONTAINERS = frozenset(
    {
        "translation_unit",
        "namespace_definition",
        "declaration_list",
        "linkage_specification",
        "preproc_ifdef",
        "preproc_if",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
    }
)
_DEVICE_TOKENS = ("__global__", "__device__")

_MATH = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
"""
_LIMITS = """#ifndef INT_MAX
#define INT_MAX 2147483647
#endif
#ifndef INT_MIN
#define INT_MIN (-2147483647 - 1)
#endif
#ifndef UINT_MAX
#define UINT_MAX 4294967295U
#endif
"""
_FLOATS = """#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38F
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.192092896e-07F
#endif
#ifndef DBL_MAX
#define DBL_MAX 1.7976931348623158e+308
#endif
"""
_INTS = """typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t; typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
"""

# What each dropped standard header is replaced by: a CCCL header when the toolkit has it, else definitions.
_REPLACEMENTS: dict[str, tuple[str | None, str]] = {
    "math.h": (None, _MATH),
    "cmath": (None, _MATH),
    "climits": ("cuda/std/climits", _LIMITS),
    "limits.h": ("cuda/std/climits", _LIMITS),
    "cfloat": ("cuda/std/cfloat", _FLOATS),
    "float.h": ("cuda/std/cfloat", _FLOATS),
    "cstdint": (None, _INTS),
    "stdint.h": (None, _INTS),
}


def prelude_for(dropped: list[str], include_dirs: list[str]) -> str:
    """Return the definitions that stand in for the dropped standard headers."""
    parts: list[str] = []
    for name in dict.fromkeys(dropped):
        if name not in _REPLACEMENTS:
            continue
        header, fallback = _REPLACEMENTS[name]
        text = f"#include <{header}>\n" if header and _header_found(header, include_dirs) else fallback
        if text not in parts:
            parts.append(text)
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class DeviceSource:
    """A device-only translation unit and what was removed to make it."""

    text: str
    dropped_functions: tuple[str, ...]
    dropped_includes: tuple[str, ...]


def _has_token(node: Any, tokens: tuple[str, ...]) -> bool:
    """Return whether a direct child, or a qualifier below one, is one of `tokens`."""
    for c in node.children:
        if c.type in tokens:
            return True
        if c.type in ("type_qualifier", "storage_class_specifier", "attribute_specifier") and any(
            g.type in tokens for g in c.children
        ):
            return True
    return False


def _is_function_declaration(node: Any) -> bool:
    """Return whether a declaration declares a function (a prototype)."""
    for d in node.children_by_field_name("declarator"):
        inner = d
        while inner is not None and inner.type in ("pointer_declarator", "reference_declarator"):
            inner = inner.child_by_field_name("declarator")
        if inner is not None and inner.type == "function_declarator":
            return True
    return False


def _header_found(name: str, include_dirs: list[str]) -> bool:
    """Return whether a header exists in one of the include folders."""
    return any((Path(d) / name).is_file() for d in include_dirs)


def device_source(
    text: str | bytes, filename: str = "kernel.cu", include_dirs: list[str] | None = None
) -> DeviceSource:
    """Return the file with host code blanked out, ready for NVRTC (compiler messages name `filename`)."""
    from warpwise.verify.nvbuild import cuda_include_dirs

    dirs = include_dirs if include_dirs is not None else cuda_include_dirs()
    data = bytearray(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    tree = new_parser().parse(parse_source(bytes(data)))
    spans: list[tuple[int, int]] = []
    dropped_fns: list[str] = []
    dropped_incs: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        for child in node.children:
            t = child.type
            if t in _CONTAINERS:
                stack.append(child)
            elif t == "function_definition":
                if not _has_token(child, _DEVICE_TOKENS):
                    spans.append((child.start_byte, child.end_byte))
                    dropped_fns.append(_function_name(data, child))
            elif t == "template_declaration":
                inner = [c for c in child.named_children if c.type in ("function_definition", "declaration")]
                if inner and inner[-1].type == "function_definition" and not _has_token(inner[-1], _DEVICE_TOKENS):
                    spans.append((child.start_byte, child.end_byte))
                    dropped_fns.append(_function_name(data, inner[-1]))
            elif t == "declaration":
                if _is_function_declaration(child) and not _has_token(child, _DEVICE_TOKENS):
                    spans.append((child.start_byte, child.end_byte))
            elif t == "preproc_include":
                path = child.child_by_field_name("path")
                if path is None:
                    continue
                name = bytes(data[path.start_byte : path.end_byte]).decode("utf-8", "replace").strip('<>"')
                if not _header_found(name, dirs):
                    spans.append((child.start_byte, child.end_byte))
                    dropped_incs.append(name)
    for start, end in spans:
        for i in range(start, end):
            if data[i] not in (0x0A, 0x0D):
                data[i] = 0x20
    body = data.decode("utf-8", "replace")
    prelude = prelude_for(dropped_incs, dirs) + f'#line 1 "{filename}"\n'
    return DeviceSource(prelude + body, tuple(dropped_fns), tuple(dropped_incs))


def _function_name(data: bytearray, fn: Any) -> str:
    """Return the declared name of a function definition."""
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    if d is None:
        return "?"
    name = d.child_by_field_name("declarator")
    return bytes(data[name.start_byte : name.end_byte]).decode("utf-8", "replace") if name is not None else "?"


def qualified_name(text: str | bytes, offset: int, name: str) -> str:
    """Return `name` qualified by the namespaces that enclose the byte offset (`outer::inner::apply`)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    tree = new_parser().parse(parse_source(data))
    node = tree.root_node.descendant_for_byte_range(offset, offset)
    scopes: list[str] = []
    while node is not None:
        if node.type == "namespace_definition":
            n = node.child_by_field_name("name")
            if n is not None:
                scopes.append(data[n.start_byte : n.end_byte].decode("utf-8", "replace"))
        node = node.parent
    return "::".join([*reversed(scopes), name])
