"""Evaluating the small C expressions that sizes and launch geometry are written in.

Annotations (`n=1<<24 grid=(n+255)/256`) and host code (`cudaMalloc(&x, n * sizeof(float))`) use the same
arithmetic: integer and floating literals with C suffixes, names bound to known values, `sizeof` of built-in
types, `+ - * / % << >> & | ^ ~`, unary minus, parentheses and `?:`-free casts such as `(int)` or
`static_cast<size_t>(...)`. Integer division and remainder truncate toward zero as in C. Anything else
(function calls, unknown names) is an `ExprError` that names the offending piece.
"""

from __future__ import annotations

import ast
import re

SIZEOF: dict[str, int] = {
    "char": 1,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "int8_t": 1,
    "uint8_t": 1,
    "short": 2,
    "unsigned short": 2,
    "int16_t": 2,
    "uint16_t": 2,
    "half": 2,
    "__half": 2,
    "__nv_bfloat16": 2,
    "nv_bfloat16": 2,
    "int": 4,
    "unsigned": 4,
    "unsigned int": 4,
    "int32_t": 4,
    "uint32_t": 4,
    "float": 4,
    "long": 8,
    "unsigned long": 8,
    "long long": 8,
    "unsigned long long": 8,
    "int64_t": 8,
    "uint64_t": 8,
    "size_t": 8,
    "double": 8,
    "float2": 8,
    "float4": 16,
    "int2": 8,
    "int4": 16,
    "uint2": 8,
    "uint4": 16,
    "double2": 16,
    "half2": 4,
    "__half2": 4,
}

_CAST = re.compile(
    r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|long long|size_t|float|double|int64_t|uint64_t|"
    r"int32_t|uint32_t|unsigned|short|char)\s*\)"
)
_STATIC_CAST = re.compile(r"static_cast\s*<\s*[\w\s:]+>\s*")
_SIZEOF = re.compile(r"sizeof\s*\(\s*([\w\s:]+?)\s*\)")
_INT_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)([uUlL]+)\b")
_FLOAT_SUFFIX = re.compile(r"\b(\d+\.\d*(?:[eE][-+]?\d+)?|\d*\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)[fFlL]\b")


class ExprError(ValueError):
    """An expression that cannot be evaluated; `offset` points into the original text when known."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


def _normalise(text: str, types: dict[str, int] | None = None) -> str:
    """Rewrite C spellings (suffixes, casts, sizeof) into Python-parsable arithmetic."""
    sizes = {**SIZEOF, **(types or {})}

    def sizeof(m: re.Match[str]) -> str:
        name = " ".join(m.group(1).split()).replace("std::", "")
        if name not in sizes:
            raise ExprError(f"sizeof({name}) is not a known type size", m.start())
        return str(sizes[name])

    out = _SIZEOF.sub(sizeof, text)
    out = _STATIC_CAST.sub("", out)
    out = _CAST.sub("", out)
    out = _FLOAT_SUFFIX.sub(r"\1", out)
    out = _INT_SUFFIX.sub(r"\1", out)
    return out


def c_div(a: int | float, b: int | float) -> int | float:
    """Divide as C does (truncating for integers)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ExprError("division by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if b == 0:
        # C gives an infinity or a NaN here: no value a size or a launch argument can be read from.
        raise ExprError("floating-point division by zero")
    return a / b


def c_mod(a: int | float, b: int | float) -> int | float:
    """Take the remainder as C does."""
    if not (isinstance(a, int) and isinstance(b, int)):
        raise ExprError("% needs integer operands")
    if b == 0:
        raise ExprError("remainder by zero")
    return a - b * int(c_div(a, b))


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: c_div,
    ast.FloorDiv: c_div,
    ast.Mod: c_mod,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}


def evaluate(text: str, names: dict[str, int | float], types: dict[str, int] | None = None) -> int | float:
    """Evaluate a C arithmetic expression with the given names bound; raise `ExprError` when it cannot."""
    src = _normalise(text, types)
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"`{text.strip()}` is not an arithmetic expression", max((exc.offset or 1) - 1, 0)) from exc

    def ev(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in names:
                return names[node.id]
            raise ExprError(f"`{node.id}` has no known value", node.col_offset)
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Invert) and isinstance(v, int):
                return ~v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            try:
                return _BINOPS[type(node.op)](a, b)
            except TypeError as exc:
                raise ExprError(f"bad operands in `{text.strip()}`", node.col_offset) from exc
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            vals = [ev(a) for a in node.args]
            return min(vals) if node.func.id == "min" else max(vals)
        raise ExprError(f"`{ast.unparse(node)}` cannot be evaluated here", getattr(node, "col_offset", 0))

    value = ev(tree)
    if isinstance(value, int) and abs(value) >= 1 << 63:
        raise ExprError(f"`{text.strip()}` overflows 64 bits")
    return value


def evaluate_int(text: str, names: dict[str, int | float], types: dict[str, int] | None = None) -> int:
    """Evaluate an expression that must give an integer."""
    v = evaluate(text, names, types)
    if isinstance(v, float):
        if v.is_integer():
            return int(v)
        raise ExprError(f"`{text.strip()}` is {v}, not an integer")
    return v


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on a separator outside parentheses, brackets and angle-free nesting."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts]
