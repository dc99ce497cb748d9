"""Symbolic values of integer expressions across the lanes of a warp.

Coalescing, bank conflicts and divergence all depend on one question: how does an expression change from one
lane of a warp to the next? Lanes of a warp differ in `threadIdx.x` (for blocks whose x-dimension is a
multiple of 32, which we assume and say so where it matters), so each expression is evaluated to a `Value`:

- `CONST`: the same known integer in every lane;
- `UNIFORM`: the same, unknown value in every lane (parameters, `blockIdx`, loads at uniform addresses);
- `AFFINE`: `coef * threadIdx.x + uniform`, with `coef` a known fraction or a symbolic text such as `N`;
- `INDIRECT`: differs between lanes in a way that is not affine (loaded through a lane-dependent index, products
  of two lane-dependent values, comparisons of lane-dependent values);
- `UNKNOWN`: nothing could be said (calls to unknown functions, macros, values defined in too many ways).

The evaluator reads tree-sitter nodes directly, resolves local variables through a flow-insensitive environment
(every definition of a name must agree), and never raises: anything it cannot read is `UNKNOWN`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import IntEnum
from fractions import Fraction
from typing import Any, NamedTuple

Node = Any
"""A tree-sitter node (typed loosely: the bindings ship no stubs we can rely on)."""


class Kind(IntEnum):
    """How a value varies across a warp, from the most to the least known."""

    CONST = 0
    UNIFORM = 1
    AFFINE = 2
    INDIRECT = 3
    UNKNOWN = 4


Coef = Fraction | str


class Value(NamedTuple):
    """The abstract value of one expression."""

    kind: Kind
    coef: Coef | None = None
    const: int | None = None
    text: str = ""
    ty: bool = False
    deps: frozenset[str] = frozenset()

    @property
    def thread_dependent(self) -> bool:
        """Return whether lanes (or warps of one block) can see different values."""
        return self.kind in (Kind.AFFINE, Kind.INDIRECT) or self.ty

    @property
    def lane_dependent(self) -> bool:
        """Return whether lanes of one warp can see different values."""
        return self.kind in (Kind.AFFINE, Kind.INDIRECT)


UNKNOWN = Value(Kind.UNKNOWN)
INT_SIZES = {
    "char": 1,
    "signed char": 1,
    "unsigned char": 1,
    "int8_t": 1,
    "uint8_t": 1,
    "bool": 1,
    "short": 2,
    "unsigned short": 2,
    "int16_t": 2,
    "uint16_t": 2,
    "int": 4,
    "unsigned": 4,
    "unsigned int": 4,
    "int32_t": 4,
    "uint32_t": 4,
    "long": 8,
    "unsigned long": 8,
    "long long": 8,
    "unsigned long long": 8,
    "int64_t": 8,
    "uint64_t": 8,
    "size_t": 8,
    "ptrdiff_t": 8,
}
TYPE_SIZES = {
    **INT_SIZES,
    "float": 4,
    "double": 8,
    "half": 2,
    "__half": 2,
    "__nv_bfloat16": 2,
    "nv_bfloat16": 2,
    "__half2": 4,
    "half2": 4,
    "__nv_bfloat162": 4,
    "nv_bfloat162": 4,
    "__nv_fp8_e4m3": 1,
    "__nv_fp8_e5m2": 1,
}
for _base, _size in (
    ("float", 4),
    ("int", 4),
    ("uint", 4),
    ("double", 8),
    ("char", 1),
    ("uchar", 1),
    ("short", 2),
    ("ushort", 2),
    ("long", 8),
    ("ulong", 8),
    ("longlong", 8),
    ("ulonglong", 8),
):
    for _n in (1, 2, 3, 4):
        TYPE_SIZES[f"{_base}{_n}"] = _size * _n

_INT_LITERAL = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|[0-9][0-9']*)([uUlL]*)$")


def parse_int_literal(text: str) -> int | None:
    """Return the value of a C++ integer literal, or None for floating or malformed literals."""
    m = _INT_LITERAL.match(text.strip())
    if not m:
        return None
    digits = m.group(1).replace("'", "")
    try:
        if digits[:2] in ("0x", "0X"):
            return int(digits, 16)
        if digits[:2] in ("0b", "0B"):
            return int(digits, 2)
        if len(digits) > 1 and digits.startswith("0"):
            return int(digits, 8)
        return int(digits)
    except ValueError:
        return None


def type_size(type_text: str) -> int | None:
    """Return the size in bytes of a scalar or CUDA vector type name, or None when unknown."""
    t = " ".join(type_text.replace("const", " ").replace("volatile", " ").replace("__restrict__", " ").split())
    t = t.removeprefix("struct ").removeprefix("std::").removeprefix("::")
    return TYPE_SIZES.get(t)


def _coef_text(c: Coef) -> str:
    if isinstance(c, Fraction):
        return str(c.numerator) if c.denominator == 1 else f"{c.numerator}/{c.denominator}"
    return c


def _mul_coef(c: Coef, factor: Value) -> Coef:
    if factor.kind is Kind.CONST and factor.const is not None:
        if isinstance(c, Fraction):
            return c * factor.const
        return f"{factor.const}*({c})"
    sym = factor.text or "?"
    if isinstance(c, Fraction) and c == 1:
        return sym
    return f"{_coef_text(c)}*{sym}"


def _add_coef(a: Coef, b: Coef, sign: int) -> Coef:
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a + b * sign
    return f"{_coef_text(a)}{'+' if sign > 0 else '-'}{_coef_text(b)}"


def _is_zero(c: Coef | None) -> bool:
    return isinstance(c, Fraction) and c == 0


def join(values: list[Value]) -> Value:
    """Return the value that covers every definition of a name (flow-insensitive merge)."""
    if not values:
        return UNKNOWN
    first = values[0]
    deps = frozenset().union(*(v.deps for v in values))
    ty = any(v.ty for v in values)
    if all(v.kind == first.kind and v.coef == first.coef and v.const == first.const for v in values):
        return Value(first.kind, first.coef, first.const, first.text, ty, deps)
    kinds = {v.kind for v in values}
    if kinds <= {Kind.CONST, Kind.UNIFORM}:
        return Value(Kind.UNIFORM, text=first.text, ty=ty, deps=deps)
    if Kind.UNKNOWN in kinds:
        return Value(Kind.UNKNOWN, ty=ty, deps=deps)
    return Value(Kind.INDIRECT, ty=ty, deps=deps)


class Evaluator:
    """Evaluate expressions of one function under a name environment.

    `lookup(name)` returns the `Value` of a local name (or None when the name is not local); `consts` maps
    file-level and template constants to integers; `loads` is called for every subscript met while evaluating,
    so that callers can tell indirect accesses apart.
    """

    def __init__(
        self,
        source: bytes,
        lookup: Callable[[str], Value | None],
        consts: dict[str, int],
        scalars: set[str],
    ) -> None:
        self._src = source
        self._lookup = lookup
        self._consts = consts
        self._scalars = scalars
        self._memo: dict[int, Value] = {}

    def text(self, node: Node) -> str:
        """Return the source text of a node."""
        return self._src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def eval(self, node: Node | None) -> Value:
        """Return the abstract value of an expression node."""
        if node is None:
            return UNKNOWN
        key = node.id
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        try:
            val = self._eval(node)
        except RecursionError:
            val = UNKNOWN
        self._memo[key] = val
        return val

    def const_int(self, node: Node | None) -> int | None:
        """Return the integer value of a constant expression, or None."""
        v = self.eval(node)
        return v.const if v.kind is Kind.CONST else None

    def _uniform(self, node: Node, deps: frozenset[str] = frozenset(), ty: bool = False) -> Value:
        return Value(Kind.UNIFORM, None, None, "", ty, deps)

    def _eval(self, node: Node) -> Value:
        t = node.type
        if t == "number_literal":
            raw = self.text(node)
            val = int(raw) if raw.isdigit() and (raw == "0" or raw[0] != "0") else parse_int_literal(raw)
            if val is None:
                return Value(Kind.UNIFORM, None, None, raw)
            return Value(Kind.CONST, None, val, raw)
        if t in ("true", "false", "char_literal", "string_literal", "null", "nullptr"):
            return self._uniform(node)
        if t in ("identifier", "type_identifier"):
            return self._identifier(node)
        if t in ("type_descriptor", "parameter_declaration"):
            # `k<TILE>` and `dim3 block(TILE, ROWS)` parse names as types; a lone type name is read as a name.
            inner = node.child_by_field_name("type")
            if inner is not None and node.named_child_count == 1:
                return self.eval(inner)
            return UNKNOWN
        if t == "field_expression":
            return self._field(node)
        if t in ("parenthesized_expression", "condition_clause"):
            kids = node.children
            if len(kids) == 3:
                return self.eval(kids[1])
            inner = [c for c in node.named_children if c.type != "comment"]
            return self.eval(inner[-1]) if inner else UNKNOWN
        if t == "cast_expression":
            return self.eval(node.child_by_field_name("value"))
        if t == "binary_expression":
            return self._binary(node)
        if t == "unary_expression":
            arg = self.eval(node.child_by_field_name("argument"))
            op = node.child_by_field_name("operator")
            op_t = op.type if op is not None else ""
            if arg.kind is Kind.CONST and arg.const is not None:
                if op_t == "-":
                    return Value(Kind.CONST, const=-arg.const, text=str(-arg.const), deps=arg.deps)
                if op_t == "+":
                    return arg
                if op_t == "~":
                    return Value(Kind.CONST, const=~arg.const, text=str(~arg.const), deps=arg.deps)
                if op_t == "!":
                    return Value(Kind.CONST, const=int(not arg.const), deps=arg.deps)
            if op_t == "-" and arg.kind is Kind.AFFINE and isinstance(arg.coef, Fraction):
                return Value(Kind.AFFINE, -arg.coef, text=self.text(node), ty=arg.ty, deps=arg.deps)
            if arg.kind in (Kind.CONST, Kind.UNIFORM):
                return self._uniform(node, arg.deps, arg.ty)
            if arg.kind is Kind.UNKNOWN:
                return arg
            return Value(Kind.INDIRECT, ty=arg.ty, deps=arg.deps)
        if t == "conditional_expression":
            cond = self.eval(node.child_by_field_name("condition"))
            a = self.eval(node.child_by_field_name("consequence"))
            b = self.eval(node.child_by_field_name("alternative"))
            merged = join([a, b])
            if cond.lane_dependent and merged.kind <= Kind.UNIFORM and a != b:
                return Value(Kind.INDIRECT, ty=cond.ty, deps=cond.deps | merged.deps)
            if cond.kind is Kind.UNKNOWN and a != b:
                return Value(Kind.UNKNOWN, deps=cond.deps | merged.deps)
            return Value(
                merged.kind,
                merged.coef,
                merged.const,
                self.text(node),
                merged.ty or cond.ty,
                merged.deps | cond.deps,
            )
        if t == "subscript_expression":
            return self._load(node)
        if t == "pointer_expression":
            op = node.child_by_field_name("operator")
            arg = self.eval(node.child_by_field_name("argument"))
            if op is not None and op.type == "*":
                if arg.kind in (Kind.CONST, Kind.UNIFORM):
                    return self._uniform(node, arg.deps, arg.ty)
                if arg.kind is Kind.UNKNOWN:
                    return arg
                return Value(Kind.INDIRECT, ty=arg.ty, deps=arg.deps)
            return arg
        if t == "sizeof_expression":
            ty = node.child_by_field_name("type")
            size = type_size(self.text(ty)) if ty is not None else None
            if size is not None:
                return Value(Kind.CONST, const=size, text=str(size))
            return self._uniform(node)
        if t == "call_expression":
            return self._call(node)
        if t in ("assignment_expression", "comma_expression", "update_expression"):
            return UNKNOWN
        return UNKNOWN

    def _identifier(self, node: Node) -> Value:
        name = self.text(node)
        if name == "warpSize":
            return Value(Kind.CONST, const=32, text="32")
        local = self._lookup(name)
        if local is not None:
            return Value(local.kind, local.coef, local.const, local.text or name, local.ty, local.deps | {name})
        if name in self._consts:
            val = self._consts[name]
            return Value(Kind.CONST, const=val, text=name)
        if name in self._scalars:
            return Value(Kind.UNIFORM, text=name, deps=frozenset({name}))
        return Value(Kind.UNKNOWN, text=name)

    def _field(self, node: Node) -> Value:
        kids = node.children
        if len(kids) != 3:
            return UNKNOWN
        arg, _, fld = kids
        if arg is None or fld is None or arg.type != "identifier":
            return UNKNOWN
        base = self.text(arg)
        axis = self.text(fld)
        if base == "threadIdx":
            if axis == "x":
                return Value(Kind.AFFINE, Fraction(1), text="threadIdx.x")
            return Value(Kind.UNIFORM, text=f"threadIdx.{axis}", ty=True)
        if base in ("blockIdx", "blockDim", "gridDim"):
            return Value(Kind.UNIFORM, text=f"{base}.{axis}")
        local = self._lookup(base)
        if local is not None and local.kind <= Kind.UNIFORM:
            return self._uniform(node, local.deps | {base}, local.ty)
        if base in self._scalars:
            return self._uniform(node, frozenset({base}))
        return UNKNOWN

    def _load(self, node: Node) -> Value:
        idx_list = node.child_by_field_name("indices")
        vals = [self.eval(c) for c in idx_list.named_children] if idx_list is not None else []
        arr = self.eval(node.child_by_field_name("argument"))
        deps = frozenset().union(*(v.deps for v in vals)) | arr.deps if vals else arr.deps
        ty = any(v.ty for v in vals)
        if all(v.kind <= Kind.UNIFORM for v in vals):
            return self._uniform(node, deps, ty)
        if any(v.kind is Kind.UNKNOWN for v in vals):
            return Value(Kind.UNKNOWN, ty=ty, deps=deps)
        return Value(Kind.INDIRECT, ty=ty, deps=deps)

    def _call(self, node: Node) -> Value:
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [c for c in args_node.named_children if c.type != "comment"] if args_node is not None else []
        name = ""
        if fn is not None:
            if fn.type == "template_function":
                nm = fn.child_by_field_name("name")
                name = self.text(nm) if nm is not None else ""
            elif fn.type == "field_expression":
                fld = fn.child_by_field_name("field")
                name = self.text(fld) if fld is not None else ""
            else:
                name = self.text(fn).rsplit("::", 1)[-1]
        if name in ("static_cast", "reinterpret_cast", "const_cast", "int", "unsigned", "size_t") and args:
            return self.eval(args[0])
        if name in ("thread_rank", "__lane_id", "laneid", "lane_id"):
            return Value(Kind.AFFINE, Fraction(1), text=self.text(node), ty=name == "thread_rank")
        if name in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv") and args:
            inner = self.eval(args[0])
            if inner.kind <= Kind.UNIFORM:
                return self._uniform(node, inner.deps, inner.ty)
            return Value(Kind.INDIRECT if inner.kind is not Kind.UNKNOWN else Kind.UNKNOWN, deps=inner.deps)
        vals = [self.eval(a) for a in args]
        deps = frozenset().union(*(v.deps for v in vals)) if vals else frozenset()
        ty = any(v.ty for v in vals)
        if name in ("min", "max", "umin", "umax", "llmin", "llmax") and len(vals) == 2:
            a, b = vals
            if a.kind is Kind.CONST and b.kind is Kind.CONST and a.const is not None and b.const is not None:
                c = min(a.const, b.const) if "min" in name else max(a.const, b.const)
                return Value(Kind.CONST, const=c, text=str(c), deps=deps)
        if not vals:
            return Value(Kind.UNKNOWN, text=self.text(node))
        if all(v.kind <= Kind.UNIFORM for v in vals):
            return self._uniform(node, deps, ty)
        if any(v.kind is Kind.UNKNOWN for v in vals):
            return Value(Kind.UNKNOWN, ty=ty, deps=deps)
        return Value(Kind.INDIRECT, ty=ty, deps=deps)

    def _binary(self, node: Node) -> Value:
        kids = node.children
        if len(kids) == 3:
            left, op_node, right = kids
        else:
            left, op_node, right = (node.child_by_field_name(f) for f in ("left", "operator", "right"))
        op = op_node.type if op_node is not None else ""
        a = self.eval(left)
        b = self.eval(right)
        deps = a.deps | b.deps if b.deps else a.deps
        ty = a.ty or b.ty
        text = ""
        if a.kind is Kind.CONST and b.kind is Kind.CONST and a.const is not None and b.const is not None:
            c = _fold(op, a.const, b.const)
            if c is not None:
                return Value(Kind.CONST, const=c, text=str(c), deps=deps)
            return Value(Kind.UNIFORM, text=text, deps=deps)
        if a.kind is Kind.UNKNOWN or b.kind is Kind.UNKNOWN:
            return Value(Kind.UNKNOWN, ty=ty, deps=deps)
        if a.kind <= Kind.UNIFORM and b.kind <= Kind.UNIFORM:
            return Value(Kind.UNIFORM, text=text, ty=ty, deps=deps)
        if op in ("+", "-"):
            sign = 1 if op == "+" else -1
            if a.kind is Kind.AFFINE and b.kind <= Kind.UNIFORM:
                return Value(Kind.AFFINE, a.coef, text=text, ty=ty, deps=deps)
            if b.kind is Kind.AFFINE and a.kind <= Kind.UNIFORM and b.coef is not None:
                coef = b.coef if sign > 0 else _add_coef(Fraction(0), b.coef, -1)
                return Value(Kind.AFFINE, coef, text=text, ty=ty, deps=deps)
            if a.kind is Kind.AFFINE and b.kind is Kind.AFFINE and a.coef is not None and b.coef is not None:
                coef = _add_coef(a.coef, b.coef, sign)
                if _is_zero(coef):
                    return Value(Kind.UNIFORM, text=text, ty=ty, deps=deps)
                return Value(Kind.AFFINE, coef, text=text, ty=ty, deps=deps)
            return Value(Kind.INDIRECT, ty=ty, deps=deps)
        if op == "*":
            if a.kind is Kind.AFFINE and b.kind <= Kind.UNIFORM and a.coef is not None:
                return self._scaled(a.coef, b if b.text else b._replace(text=self.text(right)), text, ty, deps)
            if b.kind is Kind.AFFINE and a.kind <= Kind.UNIFORM and b.coef is not None:
                return self._scaled(b.coef, a if a.text else a._replace(text=self.text(left)), text, ty, deps)
            return Value(Kind.INDIRECT, ty=ty, deps=deps)
        if op == "<<" and a.kind is Kind.AFFINE and b.kind is Kind.CONST and b.const is not None and a.coef is not None:
            return self._scaled(a.coef, Value(Kind.CONST, const=1 << max(b.const, 0)), text, ty, deps)
        if op in ("/", ">>") and a.kind is Kind.AFFINE and b.kind is Kind.CONST and b.const and b.const > 0:
            divisor = b.const if op == "/" else 1 << b.const
            if isinstance(a.coef, Fraction):
                coef = a.coef / divisor
                if abs(coef) * 32 <= 1:
                    return Value(Kind.UNIFORM, text=text, ty=ty, deps=deps)
                return Value(Kind.AFFINE, coef, text=text, ty=ty, deps=deps)
            return Value(Kind.INDIRECT, ty=ty, deps=deps)
        if op in ("%", "&") and a.kind is Kind.AFFINE and b.kind is Kind.CONST and b.const is not None:
            period = b.const if op == "%" else b.const + 1
            if op == "&" and (period & (period - 1)) != 0:
                return Value(Kind.INDIRECT, ty=ty, deps=deps)
            if isinstance(a.coef, Fraction) and abs(a.coef) == 1 and period >= 1:
                return Value(Kind.AFFINE, a.coef, text=text, ty=ty, deps=deps)
            return Value(Kind.INDIRECT, ty=ty, deps=deps)
        if op == "^" and a.kind is Kind.AFFINE and b.kind <= Kind.UNIFORM:
            return Value(Kind.AFFINE, a.coef, text=text, ty=ty, deps=deps)
        return Value(Kind.INDIRECT, ty=ty, deps=deps)

    def _scaled(self, coef: Coef, factor: Value, text: str, ty: bool, deps: frozenset[str]) -> Value:
        new = _mul_coef(coef, factor)
        if _is_zero(new):
            return Value(Kind.UNIFORM, text=text, ty=ty, deps=deps)
        return Value(Kind.AFFINE, new, text=text, ty=ty, deps=deps)


def _fold(op: str, a: int, b: int) -> int | None:
    """Fold a binary operator over two integers as C++ would for non-negative operands."""
    try:
        match op:
            case "+":
                return a + b
            case "-":
                return a - b
            case "*":
                return a * b
            case "/":
                return int(a / b) if b else None
            case "%":
                return a - int(a / b) * b if b else None
            case "<<":
                return a << b if 0 <= b < 64 else None
            case ">>":
                return a >> b if 0 <= b < 64 else None
            case "&":
                return a & b
            case "|":
                return a | b
            case "^":
                return a ^ b
            case "<":
                return int(a < b)
            case "<=":
                return int(a <= b)
            case ">":
                return int(a > b)
            case ">=":
                return int(a >= b)
            case "==":
                return int(a == b)
            case "!=":
                return int(a != b)
            case "&&":
                return int(bool(a) and bool(b))
            case "||":
                return int(bool(a) or bool(b))
    except (OverflowError, ValueError):
        return None
    return None


def coef_text(c: Coef | None) -> str:
    """Return a readable coefficient."""
    return "?" if c is None else _coef_text(c)
