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

import functools
import re
from collections.abc import Callable
from enum import IntEnum
from fractions import Fraction
from typing import Any, NamedTuple

from warpwise.analyzers.expr.cexpr import c_div, c_mod
from warpwise.analyzers.parse import language

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
        kind = self.kind
        return kind is _AFFINE_KIND or kind is _INDIRECT_KIND or self.ty

    @property
    def lane_dependent(self) -> bool:
        """Return whether lanes of one warp can see different values."""
        kind = self.kind
        return kind is _AFFINE_KIND or kind is _INDIRECT_KIND


UNKNOWN = Value(Kind.UNKNOWN)
_AFFINE_KIND = Kind.AFFINE
_INDIRECT_KIND = Kind.INDIRECT
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


@functools.lru_cache(maxsize=4096)
def type_size(type_text: str) -> int | None:
    """Return the size in bytes of a scalar or CUDA vector type name, or None when unknown."""
    t = " ".join(type_text.replace("const", " ").replace("volatile", " ").replace("__restrict__", " ").split())
    t = t.removeprefix("struct ").removeprefix("std::").removeprefix("::")
    return TYPE_SIZES.get(t)


# The evaluator runs a few thousand times per file, so it avoids what is slow in CPython 3.11: looking up enum
# members on their class (a descriptor call each time), building named tuples by keyword, and constructing
# `Fraction`s. These aliases and constants stand for exactly the values they name.
_CONST = Kind.CONST
_UNIFORM = Kind.UNIFORM
_AFFINE = Kind.AFFINE
_INDIRECT = Kind.INDIRECT
_UNKNOWN = Kind.UNKNOWN
_EMPTY: frozenset[str] = frozenset()
_ZERO = Fraction(0)
_ONE = Fraction(1)
_new = tuple.__new__
_PLAIN_UNIFORM = Value(Kind.UNIFORM)
_THREAD_X = Value(Kind.AFFINE, Fraction(1), text="threadIdx.x")
_WARP_SIZE = Value(Kind.CONST, const=32, text="32")
_CAST_CALLS = frozenset({"static_cast", "reinterpret_cast", "const_cast", "int", "unsigned", "size_t"})
_LANE_CALLS = frozenset({"thread_rank", "__lane_id", "laneid", "lane_id"})
_LOAD_CALLS = frozenset({"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"})
_MINMAX_CALLS = frozenset({"min", "max", "umin", "umax", "llmin", "llmax"})
_GROUP_CALLS = frozenset({"this_thread_block", "this_grid", "this_cluster", "this_multi_grid", "tiled_partition"})
"""Cooperative-groups handles: the same group for every thread that asks (a tile's size is the same in every warp)."""
_GROUP_SHAPE_CALLS = frozenset(
    {"size", "num_threads", "dim_threads", "group_dim", "num_blocks", "dim_blocks", "block_index", "group_index"}
)
"""Members of a group handle that every thread of a block reads alike (`block.size()` is `blockDim`'s product)."""
_WARP_INDEX_CALLS = frozenset({"meta_group_rank"})
"""Members that are the same within a warp but differ between the warps of a block."""
_GROUP_MEMBER_CALLS = _GROUP_SHAPE_CALLS | _WARP_INDEX_CALLS


def _coef_text(c: Coef) -> str:
    if isinstance(c, Fraction):
        return str(c.numerator) if c.denominator == 1 else f"{c.numerator}/{c.denominator}"
    return c


def _mul_coef(c: Coef, factor: Value) -> Coef:
    if factor.kind is _CONST and factor.const is not None:
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
    if len(values) == 1:
        # One definition: the merge is the value itself (its `ty` is a bool and its deps a frozenset).
        return first
    deps = frozenset().union(*[v.deps for v in values])
    ty = False
    for v in values:
        if v.ty:
            ty = True
            break
    kind, coef, const = first.kind, first.coef, first.const
    for v in values:
        if v.kind != kind or v.coef != coef or v.const != const:
            break
    else:
        return _new(Value, (kind, coef, const, first.text, ty, deps))
    kinds = {v.kind for v in values}
    if kinds <= {_CONST, _UNIFORM}:
        return _new(Value, (_UNIFORM, None, None, first.text, ty, deps))
    if _UNKNOWN in kinds:
        return _new(Value, (_UNKNOWN, None, None, "", ty, deps))
    return _new(Value, (_INDIRECT, None, None, "", ty, deps))


def _union_deps(vals: list[Value]) -> frozenset[str]:
    """Return the union of the dependencies of some values."""
    if len(vals) == 1:
        return vals[0].deps
    return frozenset().union(*[v.deps for v in vals])


def _spread(vals: list[Value], deps: frozenset[str]) -> Value:
    """Return the value of an operation whose result varies exactly as much as its most varying operand."""
    ty = False
    worst = _CONST
    for v in vals:
        if v.ty:
            ty = True
        if v.kind > worst:
            worst = v.kind
    if worst <= _UNIFORM:
        return _new(Value, (_UNIFORM, None, None, "", ty, deps))
    if worst is _UNKNOWN:
        return _new(Value, (_UNKNOWN, None, None, "", ty, deps))
    return _new(Value, (_INDIRECT, None, None, "", ty, deps))


class Evaluator:
    """Evaluate expressions of one function under a name environment.

    `lookup(name)` returns the `Value` of a local name (or None when the name is not local); `consts` maps
    file-level and template constants to integers; `scalars` holds the names of uniform scalars (parameters).
    Each node is evaluated once (results are memoised by node), and once `seal` has been called, each name is
    resolved once as well.
    """

    __slots__ = ("_consts", "_lookup", "_memo", "_names", "_scalars", "_src", "_text", "_visiting")

    def __init__(
        self,
        source: bytes,
        lookup: Callable[[str], Value | None],
        consts: dict[str, int],
        scalars: set[str],
        text: Callable[[Node], str] | None = None,
    ) -> None:
        self._src = source
        self._text = text if text is not None else self._decode
        self._lookup = lookup
        self._consts = consts
        self._scalars = scalars
        self._memo: dict[int, Value] = {}
        self._names: dict[str, Value] | None = None
        self._visiting: set[str] = set()

    def seal(self, visiting: set[str]) -> None:
        """Start caching the value of each name: from now on definitions, constants and scalars stay as they are.

        `visiting` is the set of names whose definitions are being evaluated right now; a name found there is
        read as unknown for the moment and is not cached.
        """
        self._names = {}
        self._visiting = visiting

    def _decode(self, node: Node) -> str:
        return self._src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def text(self, node: Node) -> str:
        """Return the source text of a node."""
        return self._text(node)

    def eval(self, node: Node | None) -> Value:
        """Return the abstract value of an expression node."""
        if node is None:
            return UNKNOWN
        key = node.id
        memo = self._memo
        hit = memo.get(key)
        if hit is not None:
            return hit
        handler = _HANDLERS_BY_KIND.get(node.kind_id)
        if handler is None:
            val = UNKNOWN
        else:
            try:
                val = handler(self, node)
            except RecursionError:
                val = UNKNOWN
        memo[key] = val
        return val

    def const_int(self, node: Node | None) -> int | None:
        """Return the integer value of a constant expression, or None."""
        v = self.eval(node)
        return v.const if v.kind is _CONST else None

    def _number(self, node: Node) -> Value:
        raw = self._text(node)
        val = int(raw) if raw.isdigit() and (raw == "0" or raw[0] != "0") else parse_int_literal(raw)
        if val is None:
            return _new(Value, (_UNIFORM, None, None, raw, False, _EMPTY))
        return _new(Value, (_CONST, None, val, raw, False, _EMPTY))

    def _literal(self, node: Node) -> Value:
        return _PLAIN_UNIFORM

    def _type_name(self, node: Node) -> Value:
        # `k<TILE>` and `dim3 block(TILE, ROWS)` parse names as types; a lone type name is read as a name.
        inner = node.child_by_field_name("type")
        if inner is not None and node.named_child_count == 1:
            return self.eval(inner)
        return UNKNOWN

    def _parenthesized(self, node: Node) -> Value:
        kids = node.children
        if len(kids) == 3:
            return self.eval(kids[1])
        inner = [c for c in node.named_children if c.type != "comment"]
        return self.eval(inner[-1]) if inner else UNKNOWN

    def _cast(self, node: Node) -> Value:
        return self.eval(node.child_by_field_name("value"))

    def _unary(self, node: Node) -> Value:
        arg = self.eval(node.child_by_field_name("argument"))
        op = node.child_by_field_name("operator")
        op_t = op.type if op is not None else ""
        kind = arg.kind
        if kind is _CONST and arg.const is not None:
            if op_t == "-":
                return _new(Value, (_CONST, None, -arg.const, str(-arg.const), False, arg.deps))
            if op_t == "+":
                return arg
            if op_t == "~":
                return _new(Value, (_CONST, None, ~arg.const, str(~arg.const), False, arg.deps))
            if op_t == "!":
                return _new(Value, (_CONST, None, int(not arg.const), "", False, arg.deps))
        if op_t == "-" and kind is _AFFINE and isinstance(arg.coef, Fraction):
            return _new(Value, (_AFFINE, -arg.coef, None, self._text(node), arg.ty, arg.deps))
        if kind <= _UNIFORM:
            return _new(Value, (_UNIFORM, None, None, "", arg.ty, arg.deps))
        if kind is _UNKNOWN:
            return arg
        return _new(Value, (_INDIRECT, None, None, "", arg.ty, arg.deps))

    def _conditional(self, node: Node) -> Value:
        cond = self.eval(node.child_by_field_name("condition"))
        a = self.eval(node.child_by_field_name("consequence"))
        b = self.eval(node.child_by_field_name("alternative"))
        merged = join([a, b])
        if cond.lane_dependent and merged.kind <= _UNIFORM and a != b:
            return _new(Value, (_INDIRECT, None, None, "", cond.ty, cond.deps | merged.deps))
        if cond.kind is _UNKNOWN and a != b:
            return _new(Value, (_UNKNOWN, None, None, "", False, cond.deps | merged.deps))
        return _new(
            Value,
            (merged.kind, merged.coef, merged.const, self._text(node), merged.ty or cond.ty, merged.deps | cond.deps),
        )

    def _pointer(self, node: Node) -> Value:
        op = node.child_by_field_name("operator")
        arg = self.eval(node.child_by_field_name("argument"))
        if op is not None and op.type == "*":
            if arg.kind <= _UNIFORM:
                return _new(Value, (_UNIFORM, None, None, "", arg.ty, arg.deps))
            if arg.kind is _UNKNOWN:
                return arg
            return _new(Value, (_INDIRECT, None, None, "", arg.ty, arg.deps))
        return arg

    def _sizeof(self, node: Node) -> Value:
        ty = node.child_by_field_name("type")
        size = type_size(self._text(ty)) if ty is not None else None
        if size is not None:
            return _new(Value, (_CONST, None, size, str(size), False, _EMPTY))
        return _PLAIN_UNIFORM

    def _identifier(self, node: Node) -> Value:
        name = self._text(node)
        names = self._names
        if names is not None:
            hit = names.get(name)
            if hit is not None:
                return hit
        if name == "warpSize":
            val = _WARP_SIZE
        else:
            local = self._lookup(name)
            if local is not None:
                val = _new(
                    Value,
                    (local.kind, local.coef, local.const, local.text or name, local.ty, local.deps | {name}),
                )
            elif name in self._consts:
                val = _new(Value, (_CONST, None, self._consts[name], name, False, _EMPTY))
            elif name in self._scalars:
                val = _new(Value, (_UNIFORM, None, None, name, False, frozenset((name,))))
            else:
                val = _new(Value, (_UNKNOWN, None, None, name, False, _EMPTY))
        if names is not None and name not in self._visiting:
            names[name] = val
        return val

    def _field(self, node: Node) -> Value:
        kids = node.children
        if len(kids) != 3:
            return UNKNOWN
        arg, _, fld = kids
        if arg.type != "identifier":
            return UNKNOWN
        text = self._text
        base = text(arg)
        if base == "threadIdx":
            axis = text(fld)
            if axis == "x":
                return _THREAD_X
            return _new(Value, (_UNIFORM, None, None, f"threadIdx.{axis}", True, _EMPTY))
        if base in ("blockIdx", "blockDim", "gridDim"):
            axis = text(fld)
            return _new(Value, (_UNIFORM, None, None, f"{base}.{axis}", False, _EMPTY))
        local = self._lookup(base)
        if local is not None and local.kind <= _UNIFORM:
            return _new(Value, (_UNIFORM, None, None, "", local.ty, local.deps | {base}))
        if base in self._scalars:
            return _new(Value, (_UNIFORM, None, None, "", False, frozenset((base,))))
        return UNKNOWN

    def _load(self, node: Node) -> Value:
        idx_list = node.child_by_field_name("indices")
        vals = [self.eval(c) for c in idx_list.named_children] if idx_list is not None else []
        arr = self.eval(node.child_by_field_name("argument"))
        if not vals:
            deps = arr.deps
        elif len(vals) == 1:
            deps = vals[0].deps | arr.deps
        else:
            deps = frozenset().union(*[v.deps for v in vals]) | arr.deps
        return _spread(vals, deps)

    def _call(self, node: Node) -> Value:
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [c for c in args_node.named_children if c.type != "comment"] if args_node is not None else []
        name = ""
        if fn is not None:
            ft = fn.type
            if ft == "template_function":
                nm = fn.child_by_field_name("name")
                name = self._text(nm) if nm is not None else ""
            elif ft == "field_expression":
                fld = fn.child_by_field_name("field")
                name = self._text(fld) if fld is not None else ""
            else:
                name = self._text(fn).rsplit("::", 1)[-1]
        if args and name in _CAST_CALLS:
            return self.eval(args[0])
        if name in _GROUP_CALLS:
            return _PLAIN_UNIFORM
        if (
            not args
            and fn is not None
            and fn.type == "field_expression"
            and name in _GROUP_SHAPE_CALLS | _WARP_INDEX_CALLS
        ):
            receiver = self.eval(fn.child_by_field_name("argument"))
            if receiver.kind <= _UNIFORM and not receiver.ty:
                warp = name in _WARP_INDEX_CALLS
                return _new(Value, (_UNIFORM, None, None, self._text(node), warp, receiver.deps))
        if name in _LANE_CALLS:
            return _new(Value, (_AFFINE, _ONE, None, self._text(node), name == "thread_rank", _EMPTY))
        if args and name in _LOAD_CALLS:
            inner = self.eval(args[0])
            if inner.kind <= _UNIFORM:
                return _new(Value, (_UNIFORM, None, None, "", inner.ty, inner.deps))
            kind = _INDIRECT if inner.kind is not _UNKNOWN else _UNKNOWN
            return _new(Value, (kind, None, None, "", False, inner.deps))
        if not args:
            return _new(Value, (_UNKNOWN, None, None, self._text(node), False, _EMPTY))
        vals = [self.eval(a) for a in args]
        deps = _union_deps(vals)
        if len(vals) == 2 and name in _MINMAX_CALLS:
            a, b = vals
            if a.kind is _CONST and b.kind is _CONST and a.const is not None and b.const is not None:
                c = min(a.const, b.const) if "min" in name else max(a.const, b.const)
                return _new(Value, (_CONST, None, c, str(c), False, deps))
        return _spread(vals, deps)

    def _binary(self, node: Node) -> Value:
        kids = node.children
        if len(kids) == 3:
            left, op_node, right = kids
        else:
            left = node.child_by_field_name("left")
            op_node = node.child_by_field_name("operator")
            right = node.child_by_field_name("right")
        op = op_node.type if op_node is not None else ""
        a = self.eval(left)
        b = self.eval(right)
        deps = a.deps | b.deps if b.deps else a.deps
        ty = a.ty or b.ty
        ak = a.kind
        bk = b.kind
        if ak is _CONST and bk is _CONST and a.const is not None and b.const is not None:
            c = _fold(op, a.const, b.const)
            if c is not None:
                return _new(Value, (_CONST, None, c, str(c), False, deps))
            return _new(Value, (_UNIFORM, None, None, "", False, deps))
        if ak is _UNKNOWN or bk is _UNKNOWN:
            return _new(Value, (_UNKNOWN, None, None, "", ty, deps))
        if ak <= _UNIFORM and bk <= _UNIFORM:
            return _new(Value, (_UNIFORM, None, None, "", ty, deps))
        if op == "+" or op == "-":
            if ak is _AFFINE and bk <= _UNIFORM:
                return _new(Value, (_AFFINE, a.coef, None, "", ty, deps))
            if bk is _AFFINE and ak <= _UNIFORM and b.coef is not None:
                coef = b.coef if op == "+" else _add_coef(_ZERO, b.coef, -1)
                return _new(Value, (_AFFINE, coef, None, "", ty, deps))
            if ak is _AFFINE and bk is _AFFINE and a.coef is not None and b.coef is not None:
                coef = _add_coef(a.coef, b.coef, 1 if op == "+" else -1)
                if _is_zero(coef):
                    return _new(Value, (_UNIFORM, None, None, "", ty, deps))
                return _new(Value, (_AFFINE, coef, None, "", ty, deps))
            return _new(Value, (_INDIRECT, None, None, "", ty, deps))
        if op == "*":
            if ak is _AFFINE and bk <= _UNIFORM and a.coef is not None:
                return _scaled(a.coef, b if b.text else b._replace(text=self._text(right)), ty, deps)
            if bk is _AFFINE and ak <= _UNIFORM and b.coef is not None:
                return _scaled(b.coef, a if a.text else a._replace(text=self._text(left)), ty, deps)
            return _new(Value, (_INDIRECT, None, None, "", ty, deps))
        if op == "<<" and ak is _AFFINE and bk is _CONST and b.const is not None and a.coef is not None:
            return _scaled(a.coef, Value(_CONST, const=1 << max(b.const, 0)), ty, deps)
        if (op == "/" or op == ">>") and ak is _AFFINE and bk is _CONST and b.const and b.const > 0:
            divisor = b.const if op == "/" else 1 << b.const
            if isinstance(a.coef, Fraction):
                coef = a.coef / divisor
                # Groups of 8 or more consecutive lanes share the quotient: within a group it is uniform (an access
                # indexed by it is coalesced per group), but it still differs between groups and warps of a block.
                if abs(coef) * 8 <= 1:
                    return _new(Value, (_UNIFORM, None, None, "", True, deps))
                return _new(Value, (_AFFINE, coef, None, "", ty, deps))
            return _new(Value, (_INDIRECT, None, None, "", ty, deps))
        if (op == "%" or op == "&") and ak is _AFFINE and bk is _CONST and b.const is not None:
            period = b.const if op == "%" else b.const + 1
            if op == "&" and (period & (period - 1)) != 0:
                return _new(Value, (_INDIRECT, None, None, "", ty, deps))
            if isinstance(a.coef, Fraction) and abs(a.coef) == 1 and period >= 1:
                return _new(Value, (_AFFINE, a.coef, None, "", ty, deps))
            return _new(Value, (_INDIRECT, None, None, "", ty, deps))
        if op == "^" and ak is _AFFINE and bk <= _UNIFORM:
            return _new(Value, (_AFFINE, a.coef, None, "", ty, deps))
        return _new(Value, (_INDIRECT, None, None, "", ty, deps))


def _scaled(coef: Coef, factor: Value, ty: bool, deps: frozenset[str]) -> Value:
    new = _mul_coef(coef, factor)
    if _is_zero(new):
        return _new(Value, (_UNIFORM, None, None, "", ty, deps))
    return _new(Value, (_AFFINE, new, None, "", ty, deps))


_HANDLERS: dict[str, Callable[[Evaluator, Node], Value]] = {
    "number_literal": Evaluator._number,
    "true": Evaluator._literal,
    "false": Evaluator._literal,
    "char_literal": Evaluator._literal,
    "string_literal": Evaluator._literal,
    "null": Evaluator._literal,
    "nullptr": Evaluator._literal,
    "identifier": Evaluator._identifier,
    "type_identifier": Evaluator._identifier,
    "type_descriptor": Evaluator._type_name,
    "parameter_declaration": Evaluator._type_name,
    "field_expression": Evaluator._field,
    "parenthesized_expression": Evaluator._parenthesized,
    "condition_clause": Evaluator._parenthesized,
    "cast_expression": Evaluator._cast,
    "binary_expression": Evaluator._binary,
    "unary_expression": Evaluator._unary,
    "conditional_expression": Evaluator._conditional,
    "subscript_expression": Evaluator._load,
    "pointer_expression": Evaluator._pointer,
    "sizeof_expression": Evaluator._sizeof,
    "call_expression": Evaluator._call,
}
"""The expression kinds the evaluator reads, by node type; any other node is unknown."""


def _by_kind_id() -> dict[int, Callable[[Evaluator, Node], Value]]:
    """Return the handlers by grammar symbol id (several ids can share a node type name, e.g. aliases)."""
    lang = language()
    out: dict[int, Callable[[Evaluator, Node], Value]] = {}
    for kind_id in range(lang.node_kind_count):
        handler = _HANDLERS.get(lang.node_kind_for_id(kind_id) or "")
        if handler is not None:
            out[kind_id] = handler
    return out


_HANDLERS_BY_KIND = _by_kind_id()
"""The same handlers keyed by `node.kind_id`, which is cheaper to read than `node.type`."""


def _fold(op: str, a: int, b: int) -> int | None:
    """Fold a binary operator over two integers as C++ does (truncating division, C remainder)."""
    try:
        match op:
            case "+":
                return a + b
            case "-":
                return a - b
            case "*":
                return a * b
            case "/":
                return int(c_div(a, b)) if b else None
            case "%":
                return int(c_mod(a, b)) if b else None
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
