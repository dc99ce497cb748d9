"""Host helper functions evaluated: the sizes and launch shapes real host code computes through its own helpers.

Real launchers seldom write their geometry as plain arithmetic. They call small host functions of their file:

    __host__ int h_last_pow2(unsigned int n) { n |= n >> 1; ...; return n - (n >> 1); }
    __host__ int get_tensor_spatial_size(const at::Tensor& input) {
      auto s = input.size(2); for (int i = 3; i < input.ndimension(); i++) s *= input.size(i); return s;
    }
    int block_x = max(1, min(MAX_BLOCK_SIZE / block_y, h_last_pow2(space_size)));
    flexible_launch_configs(reduction, stride, block, grid);   // sets block.x, block.y through references

`HostEval` reads such code with concrete values: an expression walk (`analyzers.expr.walk.ExprWalk`, C
arithmetic from `cexpr`) that also takes comparisons, `&&`/`||`, `?:`, `std::min`/`max`, functional casts, a
tensor's `size(i)`/`numel()`/`dim()` (tensors bound to representative shapes by `torchspec`), and calls of the
file's own host functions, whose bodies it interprets (declarations, assignments, `if`, `for`/`while` with a step
budget, `return`; `dim3&` and integer reference parameters written back to the caller). A `std::vector` is a
value too (`push_back`, `back`, `size`, `data`, an index in bounds), and a pointer to a known allocation is a
`Buffer` (a condition or a vector of data pointers may choose it: `out = last ? y : scratch`, `bias = ptrs[i]`).
Pointers go further where the host code does: a helper's pointer parameters (`int* grid_x` passed `&gx`: a `Ref` to
the caller's variable, read by `*p` and written by `*p = e`; `const int* feats` passed a vector's data), a typed
pointer into a buffer (`*dx = *dy + n` advances by `n` elements of the pointer's type, `reinterpret_cast<float*>`
changes that type; never past the allocation's end), a template helper called with its arguments
(`workspace_bytes<float>(...)`: `sizeof(T)` is 4 there), a host array from `malloc`/`calloc` that a helper fills
(`offsets[i] = ...`: an element never written has no value), and the tensors a binding makes (`at::empty(x.sizes())`,
`t.contiguous()`, `t.data_ptr<float>()`: the tensor's elements seen as that type).
Anything else (an unknown call, a pointer into nothing known, a global the file does not define) makes the whole
value unknown: never a guess.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.expr.walk import ExprWalk, unparen

MAX_STEPS = 20_000
"""Statements and loop iterations one top-level evaluation may run (a helper that loops longer is unknown)."""
MAX_CALL_DEPTH = 8

Value = Any
"""An int, a float, a `Dim3` or a `Tensor`."""


_MATH: dict[str, tuple[int, Callable[..., float]]] = {
    **{n: (2, math.pow) for n in ("pow", "powf")},
    **{n: (1, math.sqrt) for n in ("sqrt", "sqrtf")},
    **{n: (1, math.exp) for n in ("exp", "expf")},
    **{n: (1, math.log) for n in ("log", "logf")},
    **{n: (1, math.fabs) for n in ("fabs", "fabsf")},
}
"""The C math functions a host computes a kernel's scalar argument with (`lr * std::sqrt(1 - std::pow(b2, step))`):
pure functions of their arguments, evaluated in double precision; a domain error makes the value unknown."""


class Unknown(Exception):
    """An expression or statement the evaluator cannot give a concrete value."""


@dataclass
class Dim3:
    """A `dim3` value (mutable: helpers set its fields through references)."""

    x: int = 1
    y: int = 1
    z: int = 1

    def as_tuple(self) -> tuple[int, int, int]:
        """Return (x, y, z)."""
        return (self.x, self.y, self.z)


@dataclass(frozen=True)
class Tensor:
    """A tensor of a representative shape (what `torchspec` chose for it); `name` is the host name it is bound to
    (its data pointer, once a binding's `t.data_ptr<T>()` reads as `t`). `nbytes` and `elem`: its data as the host
    code's pointer sees it, when the caller knows them (0: not known)."""

    shape: tuple[int, ...]
    name: str = field(default="", compare=False)
    nbytes: int = field(default=0, compare=False)
    elem: int = field(default=0, compare=False)
    origin: str = field(default="", compare=False)


@dataclass(frozen=True)
class Buffer:
    """A pointer to a known allocation (a `cudaMalloc`, a tensor's data): `nbytes` from it to the allocation's end.

    `elem` is the size of the element type the pointer has (0: not known, so no arithmetic on it), `offset` the
    bytes from the allocation's start, `origin` what the allocation is (for the notes).
    """

    name: str
    nbytes: int
    elem: int = 0
    offset: int = 0
    origin: str = field(default="", compare=False)

    def __bool__(self) -> bool:
        return True


class Vector(list[Any]):
    """A `std::vector` (and the pointer its `data()` returns): values appended by `push_back`, read by index.

    A host array from `malloc` is one too, of a fixed length, its elements None until written.
    """


class VectorView(Vector):
    """`v.data() + k`: the elements of a vector from the k-th on, a copy that may be read and never written."""


@dataclass(frozen=True, eq=False)
class Ref:
    """`&x`: the address of a variable of one evaluation frame (a helper writes the caller's `x` through it)."""

    frame: Frame
    name: str

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True)
class _Malloc:
    """What `malloc(n)` / `calloc(n, s)` returns before a cast gives it a type: `nbytes`, zeroed or not."""

    nbytes: int
    zeroed: bool

    def __bool__(self) -> bool:
        return True


class _Pointer:
    """A pointer known not to be null (an allocation): true in a condition, nothing else."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "POINTER"


POINTER = _Pointer()


H200: dict[str, int] = {
    "multiProcessorCount": 132,
    "major": 9,
    "minor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiProcessor": 2048,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "sharedMemPerBlockOptin": 232448,
    "sharedMemPerMultiprocessor": 233472,
    "regsPerBlock": 65536,
    "regsPerMultiprocessor": 65536,
    "l2CacheSize": 52428800,
    "maxBlocksPerMultiProcessor": 32,
}
"""The device properties host code reads, as the H200 the gate times on reports them (`cudaGetDeviceProperties`)."""

H200_ARRAYS: dict[str, tuple[int, int, int]] = {
    "maxGridSize": (2147483647, 65535, 65535),
    "maxThreadsDim": (1024, 1024, 64),
}


@dataclass(frozen=True)
class Device:
    """`cudaDeviceProp` of the representative device (host code sizing its grid by the number of SMs)."""

    name: str = "NVIDIA H200"

    def get(self, field_name: str) -> int | tuple[int, int, int] | None:
        """Return one property, or None when the evaluator does not model it."""
        return H200.get(field_name, H200_ARRAYS.get(field_name))


DEVICE = Device()
_DEVICE_CALLS = frozenset({"getCurrentDeviceProperties", "getDeviceProperties"})


@dataclass
class Frame:
    """The names one function body sees."""

    names: dict[str, Value] = field(default_factory=dict)


class _Return(Exception):
    def __init__(self, value: Value) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


_TYPE_BYTES: dict[str, int] = {
    "half": 2,
    "__half": 2,
    "at::Half": 2,
    "c10::Half": 2,
    "at::BFloat16": 2,
    "c10::BFloat16": 2,
    "__nv_bfloat16": 2,
    "nv_bfloat16": 2,
    "half2": 4,
    "__half2": 4,
}
"""Sizes of the 16-bit float types host code points with (C's `sizeof` knows the others)."""

_TENSOR_MAKERS = frozenset({"empty", "zeros", "ones", "empty_like", "zeros_like", "ones_like"})
"""The `at::` / `torch::` functions that make a tensor (of the sizes given, or of another tensor's)."""

_CASTS: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "unsigned": int,
    "long": int,
    "size_t": int,
    "int64_t": int,
    "int32_t": int,
    "uint32_t": int,
    "uint64_t": int,
    "uint": int,
    "short": int,
    "float": float,
    "double": float,
    "bool": lambda v: int(bool(v)),
}


def _text(src: bytes, node: Any) -> str:
    """Return a node's source text."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def host_functions(src: bytes, root: Any) -> dict[str, Any]:
    """Return the file's function definitions by name (top level, in namespaces and templates), kernels included."""
    out: dict[str, Any] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if child.type == "function_definition":
                name = _function_name(src, child)
                body = child.child_by_field_name("body")
                head = src[child.start_byte : body.start_byte if body is not None else child.end_byte]
                if name and body is not None and b"__global__" not in head:
                    out.setdefault(name, child)
            elif child.type in (
                "template_declaration",
                "namespace_definition",
                "declaration_list",
                "linkage_specification",
                "preproc_ifdef",
                "preproc_if",
                "preproc_else",
            ):
                stack.append(child)
    return out


def _function_name(src: bytes, fn_node: Any) -> str:
    """Return a function definition's unqualified name."""
    decl = fn_node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    name = decl.child_by_field_name("declarator") if decl is not None else None
    return _text(src, name).split("::")[-1] if name is not None else ""


def parameters(src: bytes, fn_node: Any) -> list[tuple[str, bool, Any]]:
    """Return a host function's parameters as (name, by reference, default value node); `Unknown` when odd."""
    return _params(src, fn_node)


def _params(src: bytes, fn_node: Any) -> list[tuple[str, bool, Any]]:
    """Return a function's parameters as (name, by reference, default value node).

    A pointer parameter takes what its argument evaluates to (a `Ref`, a `Buffer`, a vector's data).
    """
    decl = fn_node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    out: list[tuple[str, bool, Any]] = []
    for p in plist.named_children if plist is not None else []:
        if p.type == "comment":
            continue
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            raise Unknown("variadic or odd parameter")
        d = p.child_by_field_name("declarator")
        ref = False
        while d is not None and d.type != "identifier":
            if d.type == "reference_declarator":
                ref = True
            d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
        if d is None:
            raise Unknown("unnamed parameter")
        out.append((_text(src, d), ref, p.child_by_field_name("default_value")))
    return out


class HostEval(ExprWalk[Value]):
    """Evaluate host expressions and helper calls of one file with concrete values."""

    max_depth = 48

    def __init__(
        self,
        src: bytes,
        functions: dict[str, Any],
        frame: Frame,
        constants: dict[str, Value] | None = None,
        types: dict[str, str] | None = None,
    ) -> None:
        self.src = src
        self.functions = functions
        self.frame = frame
        self.constants = constants or {}
        """The file's named constants (`#define`s): every helper sees them, under its own names."""
        self.types = types or {}
        """The template parameters of the helper being run, bound to the types its call names (`T` = float)."""
        self.steps = 0
        self.calls = 0
        self.device_fields: set[str] = set()

    def type_bytes(self, type_text: str) -> int:
        """Return the size of a type named in host code (`float`, `T` bound to `half`), or 0 when not known."""
        t = " ".join(type_text.replace("const ", "").replace("volatile ", "").split())
        t = self.types.get(t, t)
        if t in _TYPE_BYTES:
            return _TYPE_BYTES[t]
        try:
            n = cexpr.evaluate(f"sizeof({t})", {})
        except cexpr.ExprError:
            alias = _alias(self.src, t)
            if alias is None:
                return 0
            try:
                n = cexpr.evaluate(f"sizeof({alias})", {})
            except cexpr.ExprError:
                return 0
        return n if isinstance(n, int) and n > 0 else 0

    def as_pointer(self, v: Value, type_text: str, node: Any) -> Value:
        """Return a value seen as a pointer to `type_text`'s pointee (`(int*) p`, `reinterpret_cast<T*>(p)`)."""
        pointee = type_text.strip()
        if not pointee.endswith("*"):
            return self.unknown(node)
        pointee = pointee[:-1].strip()
        size = 8 if pointee.endswith("*") else self.type_bytes(pointee)
        if isinstance(v, _Malloc):
            # A host array of `nbytes / sizeof(T)` elements: zeros from `calloc`, no value yet from `malloc`.
            if size <= 0:
                return self.unknown(node)
            return Vector([0 if v.zeroed else None] * (v.nbytes // size))
        if isinstance(v, Tensor) and v.nbytes > 0:
            return Buffer(v.name, v.nbytes, size, 0, v.origin)
        if isinstance(v, Buffer):
            return Buffer(v.name, v.nbytes, size, v.offset, v.origin)
        if isinstance(v, Tensor | Vector | Ref):
            # `(float*) p`, `(void*)(t)`: the same allocation, seen as another type.
            return v
        return self.unknown(node)

    # Expressions.

    def unknown(self, node: Any) -> Value:
        raise Unknown(_text(self.src, node) if node is not None else "nothing")

    def on_number(self, node: Any, depth: int) -> Value:
        try:
            return cexpr.evaluate(_text(self.src, node), {})
        except cexpr.ExprError:
            return self.unknown(node)

    def on_identifier(self, node: Any, depth: int) -> Value:
        name = _text(self.src, node)
        if name in self.frame.names:
            return self.frame.names[name]
        if name in self.constants:
            return self.constants[name]
        return self.unknown(node)

    def on_field(self, node: Any, depth: int) -> Value:
        arg = self.walk(node.child_by_field_name("argument"), depth + 1)
        f = node.child_by_field_name("field")
        name = _text(self.src, f) if f is not None else ""
        if isinstance(arg, Dim3) and name in ("x", "y", "z"):
            return getattr(arg, name)
        if isinstance(arg, Device) and arg.get(name) is not None:
            self.device_fields.add(name)
            return arg.get(name)
        return self.unknown(node)

    def on_subscript(self, node: Any, depth: int) -> Value:
        arg = self.walk(node.child_by_field_name("argument"), depth + 1)
        index = node.child_by_field_name("index") or node.child_by_field_name("indices")
        if index is not None and index.type == "subscript_argument_list":
            index = index.named_children[0] if index.named_children else None
        i = self.walk(index, depth + 1)
        if isinstance(arg, tuple | Vector) and isinstance(i, int) and 0 <= i < len(arg) and arg[i] is not None:
            return arg[i]
        return self.unknown(node)

    def on_cast(self, node: Any, depth: int) -> Value:
        ty = node.child_by_field_name("type")
        v = self.walk(node.child_by_field_name("value"), depth + 1)
        if ty is not None and _text(self.src, ty).rstrip().endswith("*"):
            return self.as_pointer(v, _text(self.src, ty), node)
        conv = _CASTS.get(" ".join(_text(self.src, ty).split()).replace("const ", "")) if ty is not None else None
        if conv is None or not isinstance(v, int | float):
            return self.unknown(node)
        return conv(v)

    def on_unary(self, node: Any, depth: int) -> Value:
        op = node.child_by_field_name("operator")
        v = self.walk(node.child_by_field_name("argument"), depth + 1)
        o = _text(self.src, op) if op is not None else ""
        if o == "!" and isinstance(v, _Pointer | Tensor | Buffer):
            return 0
        if not isinstance(v, int | float):
            return self.unknown(node)
        if o == "-":
            return -v
        if o == "+":
            return v
        if o == "!":
            return int(not v)
        if o == "~" and isinstance(v, int):
            return ~v
        return self.unknown(node)

    def on_binary(self, node: Any, depth: int) -> Value:
        op = _text(self.src, node.child_by_field_name("operator"))
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op in ("==", "!=") and right is not None and _text(self.src, right) in _NULLS:
            # `p == nullptr` / `p != NULL` of a pointer known to be present.
            present = self.walk(left, depth + 1)
            if isinstance(present, int | float) and _text(self.src, right) == "0":
                # `layer == 0`: a number compared with zero.
                return int((present == 0) == (op == "=="))
            if not isinstance(present, _Pointer | Tensor | Buffer | Vector | Ref):
                return self.unknown(node)
            return int(op == "!=")
        a = self.walk(left, depth + 1)
        if op == "&&" and not a:
            return 0
        if op == "||" and a:
            return 1
        b = self.walk(right, depth + 1)
        if op in ("&&", "||"):
            return int(bool(b))
        if op in ("+", "-") and isinstance(b, int) and isinstance(a, Buffer | Vector):
            return _advance(a, b if op == "+" else -b, node, self)
        if op == "+" and isinstance(a, int) and isinstance(b, Buffer | Vector):
            return _advance(b, a, node, self)
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            return self.unknown(node)
        try:
            return _BIN[op](a, b)
        except (KeyError, TypeError, ValueError, cexpr.ExprError):
            return self.unknown(node)

    def on_conditional(self, node: Any, depth: int) -> Value:
        cond = self.walk(node.child_by_field_name("condition"), depth + 1)
        part = node.child_by_field_name("consequence" if cond else "alternative")
        return self.walk(part, depth + 1)

    def on_other(self, node: Any, depth: int) -> Value:
        if node.type == "true":
            return 1
        if node.type == "false":
            return 0
        if node.type == "sizeof_expression":
            text = _text(self.src, node)
            try:
                return cexpr.evaluate(text, {})
            except cexpr.ExprError:
                pass
            # `sizeof(T)` of a template helper (`T` bound by its call), `sizeof(at::Half)`: the size of that type.
            m = re.fullmatch(r"sizeof\s*\(\s*([\w:]+)\s*\)", text)
            if m and self.type_bytes(m.group(1)):
                return self.type_bytes(m.group(1))
            # `sizeof(vector_t)` for a file's `typedef uint4 vector_t;`: the size of the type it names.
            m = re.fullmatch(r"sizeof\s*\(\s*(\w+)\s*\)", text)
            alias = _alias(self.src, m.group(1)) if m else None
            if alias is None:
                return self.unknown(node)
            try:
                return cexpr.evaluate(f"sizeof({alias})", {})
            except cexpr.ExprError:
                return self.unknown(node)
        if node.type == "call_expression":
            return self._call(node, depth)
        if node.type == "assignment_expression":
            return self._assign(node)
        if node.type == "pointer_expression":
            return self._pointer(node, depth)
        return self.unknown(node)

    def _pointer(self, node: Any, depth: int) -> Value:
        """Return `&x` (a `Ref` to a variable of this frame) or `*p` (what `p` points to: a variable, a first
        element)."""
        op = node.child_by_field_name("operator")
        arg = unparen(node.child_by_field_name("argument"))
        if op is None or arg is None:
            return self.unknown(node)
        if _text(self.src, op) == "&":
            if arg.type != "identifier":
                return self.unknown(node)
            return Ref(self.frame, _text(self.src, arg))
        target = self.walk(arg, depth + 1)
        if isinstance(target, Ref) and target.name in target.frame.names:
            return target.frame.names[target.name]
        if isinstance(target, Vector) and target and target[0] is not None:
            return target[0]
        return self.unknown(node)

    def _call(self, node: Any, depth: int) -> Value:
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if fn is None:
            return self.unknown(node)
        if fn.type == "field_expression":
            target = self.walk(fn.child_by_field_name("argument"), depth + 1)
            field_node = fn.child_by_field_name("field")
            method = _text(self.src, field_node)
            if isinstance(target, Tensor) and field_node is not None and field_node.type == "template_method":
                return self._tensor_data(target, field_node, args, node)
            if isinstance(target, Tensor) and method == "contiguous" and not args:
                # `t.contiguous()`: the same elements (a copy when `t` is strided, of the same size).
                return target
            if isinstance(target, Tensor):
                return _tensor_query(target, method, [self.walk(a, depth + 1) for a in args], node, self)
            if isinstance(target, Vector):
                return _vector_method(target, method, [self.walk(a, depth + 1) for a in args], node, self)
            return self.unknown(node)
        cast = re.fullmatch(r"static_cast\s*<\s*([\w\s:]+?)\s*>", _text(self.src, fn))
        if cast is not None and len(args) == 1:
            v = self.walk(args[0], depth + 1)
            conv = _CASTS.get(" ".join(cast.group(1).replace("const ", "").split()).replace("unsigned int", "unsigned"))
            if conv is None or not isinstance(v, int | float):
                return self.unknown(node)
            return conv(v)
        pointer_cast = re.fullmatch(
            r"(?:reinterpret_cast|static_cast|const_cast)\s*<\s*(.+\*)\s*>", _text(self.src, fn), re.S
        )
        if pointer_cast is not None and len(args) == 1:
            return self.as_pointer(self.walk(args[0], depth + 1), pointer_cast.group(1), node)
        explicit: list[str] = []
        if fn.type == "template_function":
            # `std::max<int>(a, b)`: the explicit argument changes nothing the evaluator models; a helper's own
            # template (`bytes_of<float>(n)`) runs with its parameters bound to the types named.
            targs = fn.child_by_field_name("arguments")
            explicit = [
                self.types.get(t, t)
                for t in (" ".join(_text(self.src, a).split()) for a in (targs.named_children if targs else []))
            ]
            fn = fn.child_by_field_name("name") or fn
        name = re.sub(r"<[^<>()]*>$", "", _text(self.src, fn).replace(" ", ""))
        base = name.removeprefix("std::").removeprefix("::")
        if base in ("malloc", "calloc") and len(args) == (1 if base == "malloc" else 2):
            sizes = [self.walk(a, depth + 1) for a in args]
            if not all(isinstance(v, int) and v >= 0 for v in sizes):
                return self.unknown(node)
            return _Malloc(sizes[0] if base == "malloc" else sizes[0] * sizes[1], base == "calloc")
        if base.split("::")[0] in ("at", "torch") and base.split("::")[-1] in _TENSOR_MAKERS and args:
            return self._make_tensor(base.split("::")[-1], args[0], node, depth)
        if base.split("::")[-1] in _DEVICE_CALLS:
            return DEVICE
        if base in ("min", "max") and len(args) >= 2:
            vals = [self.walk(a, depth + 1) for a in args]
            if not all(isinstance(v, int | float) for v in vals):
                return self.unknown(node)
            return min(vals) if base == "min" else max(vals)
        if base in _MATH and len(args) == _MATH[base][0]:
            vals = [self.walk(a, depth + 1) for a in args]
            if not all(isinstance(v, int | float) for v in vals):
                return self.unknown(node)
            try:
                return float(_MATH[base][1](*vals))
            except (ValueError, OverflowError, ZeroDivisionError):
                return self.unknown(node)
        if base in _CASTS and len(args) == 1:
            v = self.walk(args[0], depth + 1)
            if not isinstance(v, int | float):
                return self.unknown(node)
            return _CASTS[base](v)
        if base == "dim3":
            vals = [self.walk(a, depth + 1) for a in args]
            if not all(isinstance(v, int) for v in vals) or len(vals) > 3:
                return self.unknown(node)
            return Dim3(*vals)
        definition = self.functions.get(base.split("::")[-1])
        if definition is None or self.calls >= MAX_CALL_DEPTH:
            return self.unknown(node)
        return self.call(definition, args, depth, explicit)

    def _tensor_data(self, t: Tensor, method: Any, args: list[Any], node: Any) -> Value:
        """Return `t.data_ptr<T>()`: the tensor's elements as a buffer of `T` (what the running code reads)."""
        name = method.child_by_field_name("name")
        targs = method.child_by_field_name("arguments")
        if name is None or _text(self.src, name) != "data_ptr" or targs is None or args:
            return self.unknown(node)
        size = self.type_bytes(_text(self.src, targs)[1:-1])
        if size <= 0:
            return self.unknown(node)
        numel = _prod(t.shape)
        origin = t.origin or (f"tensor `{t.name}` of shape {list(t.shape)}" if t.name else f"a tensor {list(t.shape)}")
        return Buffer(t.name or _text(self.src, node), numel * size, size, 0, origin)

    def _make_tensor(self, maker: str, sizes: Any, node: Any, depth: int) -> Value:
        """Return the tensor `at::empty({a, b}, ...)` / `at::empty(x.sizes(), ...)` / `at::zeros_like(x)` makes."""
        if maker.endswith("_like"):
            like = self.walk(sizes, depth + 1)
            shape = like.shape if isinstance(like, Tensor) else None
        elif sizes.type == "initializer_list":
            vals = [self.walk(v, depth + 1) for v in sizes.named_children if v.type != "comment"]
            shape = tuple(vals) if all(isinstance(v, int) for v in vals) else None
        else:
            got = self.walk(sizes, depth + 1)
            shape = got if isinstance(got, tuple) else (got,) if isinstance(got, int) else None
        if shape is None or not all(isinstance(v, int) and v >= 0 for v in shape):
            return self.unknown(node)
        text = " ".join(_text(self.src, node).split())
        return Tensor(tuple(shape), "", origin=f"the tensor `{text[:70]}` of shape {list(shape)}")

    def call(self, definition: Any, args: list[Any], depth: int = 0, explicit: list[str] | None = None) -> Value:
        """Run a helper with its arguments evaluated here; write reference parameters back; return its value.

        `explicit`: the template arguments the call names (`f<float>(...)`), bound to the helper's template
        parameters in order.
        """
        params = _params(self.src, definition)
        if len(args) > len(params):
            raise Unknown("too many arguments")
        frame = Frame()
        refs: dict[str, Any] = {}
        for i, (pname, ref, default) in enumerate(params):
            if i < len(args):
                node = unparen(args[i])
                frame.names[pname] = self.walk(node, depth + 1)
                if ref and node is not None and node.type == "identifier":
                    refs[pname] = _text(self.src, node)
            elif default is not None:
                frame.names[pname] = self.walk(default, depth + 1)
            else:
                raise Unknown("missing argument")
        body = definition.child_by_field_name("body")
        types = dict(zip(_template_params(self.src, definition), explicit or [], strict=False))
        inner = HostEval(self.src, self.functions, frame, self.constants, types)
        inner.steps, inner.calls = self.steps, self.calls + 1
        result: Value = None
        try:
            inner.run(body)
        except _Return as r:
            result = r.value
        finally:
            self.steps = inner.steps
        for pname, outer in refs.items():
            value = frame.names.get(pname)
            if isinstance(value, int | float | Dim3) and outer in self.frame.names:
                self.frame.names[outer] = value
        return result

    def _assign(self, node: Any) -> Value:
        left = unparen(node.child_by_field_name("left"))
        op = _text(self.src, node.child_by_field_name("operator"))
        value = self.walk(node.child_by_field_name("right"))
        if op != "=":
            old = self.walk(left)
            if not isinstance(old, int | float) or not isinstance(value, int | float) or op[:-1] not in _BIN:
                raise Unknown("compound assignment")
            value = _BIN[op[:-1]](old, value)
        if left is not None and left.type == "identifier":
            name = _text(self.src, left)
            old = self.frame.names.get(name)
            if isinstance(old, Dim3) and isinstance(value, int):
                value = Dim3(value)
            elif isinstance(old, int) and isinstance(value, float):
                value = int(value)
            self.frame.names[name] = value
            return value
        if left is not None and left.type == "field_expression":
            target = self.walk(left.child_by_field_name("argument"))
            fname = _text(self.src, left.child_by_field_name("field"))
            if isinstance(target, Dim3) and fname in ("x", "y", "z") and isinstance(value, int | float):
                setattr(target, fname, int(value))
                return value
        if left is not None and left.type == "pointer_expression" and _text(self.src, left).startswith("*"):
            # `*grid_x = e` through a `Ref` (the caller's variable), `*a = e` the first element of a host array.
            target = self.walk(left.child_by_field_name("argument"))
            if isinstance(target, Ref):
                target.frame.names[target.name] = value
                return value
            if isinstance(target, Vector) and not isinstance(target, VectorView) and target and value is not None:
                target[0] = value
                return value
        if left is not None and left.type == "subscript_expression":
            # `offsets[i] = e` of a host array or vector (an index in bounds; a view of one is read-only).
            target = self.walk(left.child_by_field_name("argument"))
            index = left.child_by_field_name("index") or left.child_by_field_name("indices")
            if index is not None and index.type == "subscript_argument_list":
                index = index.named_children[0] if index.named_children else None
            i = self.walk(index)
            if (
                isinstance(target, Vector)
                and not isinstance(target, VectorView)
                and isinstance(i, int)
                and 0 <= i < len(target)
                and value is not None
            ):
                target[i] = value
                return value
        raise Unknown("assignment target")

    # Statements.

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unknown("step budget")

    def run(self, node: Any) -> None:
        """Run one statement."""
        self._tick()
        t = node.type
        if t == "compound_statement":
            for child in node.named_children:
                self.run(child)
        elif t == "declaration":
            self._declaration(node)
        elif t == "expression_statement":
            inner = node.named_children[0] if node.named_children else None
            if inner is None:
                return
            if inner.type in ("assignment_expression", "update_expression"):
                self._effect(inner)
            elif inner.type == "call_expression":
                # A call for its effect: a helper of the file runs; anything else (a check, a print) is skipped.
                fn = inner.child_by_field_name("function")
                # A `std::vector` method (`v.push_back(x)`) changes the vector in place.
                if fn is not None and (
                    callee_name(self.src, fn) in self.functions
                    or (fn.type == "field_expression" and vector_call(self.src, inner))
                ):
                    self.walk(inner)
            elif inner.type == "comma_expression":
                for part in inner.named_children:
                    self._effect(part)
            else:
                raise Unknown(t)
        elif t == "if_statement":
            cond = node.child_by_field_name("condition")
            value = self.walk(_condition(cond))
            if value:
                self.run(node.child_by_field_name("consequence"))
            else:
                alt = node.child_by_field_name("alternative")
                if alt is not None:
                    self.run(alt.named_children[-1] if alt.type == "else_clause" else alt)
        elif t == "for_statement":
            init = node.child_by_field_name("initializer")
            if init is not None:
                if init.type == "declaration":
                    self._declaration(init)
                else:
                    self._effect(init)
            cond = node.child_by_field_name("condition")
            update = node.child_by_field_name("update")
            body = node.child_by_field_name("body")
            while cond is None or self.walk(cond):
                self._tick()
                try:
                    if body is not None:
                        self.run(body)
                except _Break:
                    break
                except _Continue:
                    pass
                if update is not None:
                    self._effect(update)
        elif t == "while_statement":
            cond = node.child_by_field_name("condition")
            body = node.child_by_field_name("body")
            while self.walk(_condition(cond)):
                self._tick()
                try:
                    self.run(body)
                except _Break:
                    break
                except _Continue:
                    pass
        elif t == "return_statement":
            value = node.named_children[0] if node.named_children else None
            raise _Return(self.walk(value) if value is not None else None)
        elif t == "break_statement":
            raise _Break
        elif t == "continue_statement":
            raise _Continue
        elif t in ("comment", "empty_statement"):
            return
        else:
            raise Unknown(t)

    def _effect(self, node: Any) -> None:
        """Apply an assignment or `++`/`--` (or a comma list of them)."""
        node = unparen(node)
        if node is None:
            return
        if node.type == "update_expression":
            arg = node.child_by_field_name("argument")
            name = _text(self.src, arg)
            old = self.frame.names.get(name)
            if not isinstance(old, int | float):
                raise Unknown("update")
            self.frame.names[name] = old + (1 if "++" in _text(self.src, node) else -1)
        elif node.type == "comma_expression":
            for part in node.named_children:
                self._effect(part)
        else:
            self.walk(node)

    def _declaration(self, decl: Any) -> None:
        """Bind the names one declaration introduces (a `dim3` without initialiser is (1, 1, 1))."""
        ty = decl.child_by_field_name("type")
        type_text = _text(self.src, ty) if ty is not None else ""
        for d in decl.children_by_field_name("declarator"):
            if d.type == "identifier":
                # An uninitialised `dim3` is (1, 1, 1), a `std::vector` empty; any other uninitialised local has no
                # value yet.
                if type_text == "dim3":
                    self.frame.names[_text(self.src, d)] = Dim3()
                elif is_vector_type(type_text):
                    self.frame.names[_text(self.src, d)] = Vector()
                else:
                    self.frame.names.pop(_text(self.src, d), None)
                continue
            if d.type == "pointer_declarator" and declared_name(self.src, d):
                # `T *a, *b;`: pointers with no value yet.
                self.frame.names.pop(declared_name(self.src, d) or "", None)
                continue
            if d.type != "init_declarator":
                raise Unknown("declarator")
            name_node = d.child_by_field_name("declarator")
            value = d.child_by_field_name("value")
            pointer = name_node is not None and name_node.type == "pointer_declarator"
            if name_node is not None and name_node.type in ("pointer_declarator", "reference_declarator"):
                # `T* p = e;` binds a pointer (a buffer, a vector's data); `const int& r = e;` the value it refers to.
                name_node = _innermost(name_node)
            if name_node is None or name_node.type != "identifier" or value is None:
                raise Unknown("declarator")
            name = _text(self.src, name_node)
            if value.type in ("argument_list", "initializer_list"):
                vals = [self.walk(v) for v in value.named_children]
                if type_text == "dim3":
                    if not all(isinstance(v, int | float) for v in vals) or len(vals) > 3:
                        raise Unknown("dim3")
                    self.frame.names[name] = Dim3(*[int(v) for v in vals])
                    continue
                if len(vals) != 1:
                    raise Unknown("initialiser")
                v = vals[0]
            else:
                v = self.walk(value)
            if type_text == "dim3" and isinstance(v, int):
                v = Dim3(v)
            if pointer and (isinstance(v, Buffer | _Malloc) or (isinstance(v, Tensor) and v.nbytes)):
                # `float* p = buf;`: the buffer seen with the declared element type.
                v = self.as_pointer(v, type_text + "*", d)
            conv = _CASTS.get(type_text.replace("const ", "").replace("unsigned int", "unsigned"))
            if conv is not None and isinstance(v, int | float):
                v = conv(v)
            self.frame.names[name] = v


def _prod(shape: tuple[int, ...]) -> int:
    """Return the product of a shape's sizes."""
    n = 1
    for s in shape:
        n *= s
    return n


def _advance(p: Buffer | Vector, n: int, node: Any, ev: HostEval) -> Value:
    """Return `p + n`: `n` elements further into the same allocation (never outside it), or a vector's tail."""
    if isinstance(p, Vector):
        if not 0 <= n <= len(p):
            return ev.unknown(node)
        return VectorView(p[n:])
    if p.elem <= 0 or not 0 <= n * p.elem <= p.nbytes or p.offset + n * p.elem < 0:
        return ev.unknown(node)
    return Buffer(p.name, p.nbytes - n * p.elem, p.elem, p.offset + n * p.elem, p.origin)


def _template_params(src: bytes, definition: Any) -> list[str]:
    """Return the names of a function template's parameters (`template <typename T, int N>`: T, N)."""
    parent = definition.parent
    if parent is None or parent.type != "template_declaration":
        return []
    plist = parent.child_by_field_name("parameters")
    out: list[str] = []
    for p in plist.named_children if plist is not None else []:
        ident = [c for c in p.named_children if c.type in ("type_identifier", "identifier")]
        if ident:
            out.append(_text(src, ident[-1]))
    return out


def callee_name(src: bytes, fn: Any) -> str:
    """Return the unqualified name a call's function names (`ns::f`, `f<float>`: f)."""
    if fn.type == "template_function":
        fn = fn.child_by_field_name("name") or fn
    return _text(src, fn).split("::")[-1].strip()


def is_vector_type(type_text: str) -> bool:
    """Return whether a declaration's type is a `std::vector<...>`."""
    return re.fullmatch(r"(?:std::)?vector\s*<.*>", " ".join(type_text.split()), re.S) is not None


_VECTOR_METHODS = frozenset({"push_back", "emplace_back", "back", "front", "size", "data", "empty"})


def vector_call(src: bytes, call: Any) -> bool:
    """Return whether a call is a `std::vector` method the evaluator models (`v.push_back(x)`, `v.back()`)."""
    fn = call.child_by_field_name("function")
    if fn is None or fn.type != "field_expression":
        return False
    f = fn.child_by_field_name("field")
    return f is not None and _text(src, f) in _VECTOR_METHODS


def _vector_method(v: Vector, method: str, args: list[Value], node: Any, ev: HostEval) -> Value:
    """Apply one `std::vector` method: `push_back` appends (in place); `back`, `size`, `data`... read."""
    if method in ("push_back", "emplace_back") and len(args) == 1 and args[0] is not None:
        v.append(args[0])
        return None
    if args:
        return ev.unknown(node)
    if method == "size":
        return len(v)
    if method == "empty":
        return int(not v)
    if method == "data":
        return v
    if method in ("back", "front") and v:
        return v[-1] if method == "back" else v[0]
    return ev.unknown(node)


def _innermost(d: Any) -> Any:
    """Return the identifier inside pointer and reference declarators (`*p`, `&r`, `* const p`)."""
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
    return d


def declared_name(src: bytes, d: Any) -> str | None:
    """Return the name a pointer or reference declarator declares, if it is a plain identifier."""
    inner = _innermost(d)
    return _text(src, inner) if inner is not None and inner.type == "identifier" else None


def _alias(src: bytes, name: str) -> str | None:
    """Return the type a file's `typedef T name;` or `using name = T;` names (one level), if it has one."""
    n = re.escape(name).encode()
    m = re.search(rb"\btypedef\s+([\w:]+(?:\s+[\w:]+)*?)\s+" + n + rb"\s*;", src) or re.search(
        rb"\busing\s+" + n + rb"\s*=\s*([\w:]+(?:\s+[\w:]+)*?)\s*;", src
    )
    return m.group(1).decode("utf-8", "replace") if m else None


def condition_value(node: Any) -> Any:
    """Return the expression of an `if`/`while` condition clause (public for host inference)."""
    return _condition(node)


def _condition(node: Any) -> Any:
    """Return the expression of an `if`/`while` condition clause."""
    if node is not None and node.type == "condition_clause":
        inner = node.child_by_field_name("value") or (node.named_children[0] if node.named_children else None)
        return inner
    return node


def _tensor_query(t: Tensor, method: str, args: list[Value], node: Any, ev: HostEval) -> Value:
    """Return `t.size(i)`, `t.numel()`, `t.dim()`, `t.stride(i)` of a representative tensor."""
    n = len(t.shape)
    if method in ("numel",) and not args:
        p = 1
        for s in t.shape:
            p *= s
        return p
    if method in ("dim", "ndimension") and not args:
        return n
    if method == "sizes" and not args:
        return t.shape
    if method in ("size", "stride") and len(args) == 1 and isinstance(args[0], int):
        i = args[0] + n if args[0] < 0 else args[0]
        if not 0 <= i < n:
            return ev.unknown(node)
        if method == "size":
            return t.shape[i]
        p = 1
        for s in t.shape[i + 1 :]:
            p *= s
        return p
    return ev.unknown(node)


_NULLS = frozenset({"nullptr", "NULL", "0"})

_BIN: dict[str, Any] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": cexpr.c_div,
    "%": cexpr.c_mod,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a) and bool(b)),
    "||": lambda a, b: int(bool(a) or bool(b)),
}


def value_of(
    src: bytes,
    functions: dict[str, Any],
    node: Any,
    names: dict[str, Value],
    device_fields: set[str] | None = None,
    constants: dict[str, Value] | None = None,
) -> Value | None:
    """Return the concrete value of an expression node with `names` bound, or None when it has none.

    `device_fields` collects the representative device's properties the value read (for the provenance);
    `constants` are the file's named constants, which the helpers it calls see too.
    """
    ev = HostEval(src, functions, Frame(dict(names)), constants)
    with contextlib.suppress(Unknown, _Return, _Break, _Continue, RecursionError, OverflowError, ZeroDivisionError):
        v = ev.walk(node)
        if isinstance(v, int) and abs(v) >= 1 << 63:
            return None
        if device_fields is not None:
            device_fields |= ev.device_fields
        return v
    return None


def run_call(
    src: bytes, functions: dict[str, Any], call: Any, names: dict[str, Value], constants: dict[str, Value] | None = None
) -> bool:
    """Run a call for its effect on the objects `names` holds (`v.push_back(x)`); return whether it ran."""
    ev = HostEval(src, functions, Frame(dict(names)), constants)
    try:
        ev.walk(call)
    except (Unknown, _Return, _Break, _Continue, RecursionError, OverflowError, ZeroDivisionError):
        return False
    return True


def call_effects(
    src: bytes, functions: dict[str, Any], call: Any, names: dict[str, Value], constants: dict[str, Value] | None = None
) -> dict[str, Value] | None:
    """Run a call statement of a file's helper; return the caller's names it changed (through references and
    pointers: `f(&n)` sets `n`)."""
    fn = call.child_by_field_name("function")
    if fn is None or callee_name(src, fn) not in functions:
        return None
    before = {k: (v.as_tuple() if isinstance(v, Dim3) else v) for k, v in names.items()}
    frame = Frame({k: (Dim3(*v.as_tuple()) if isinstance(v, Dim3) else v) for k, v in names.items()})
    ev = HostEval(src, functions, frame, constants)
    try:
        ev.walk(call)
    except (Unknown, _Return, _Break, _Continue, RecursionError, OverflowError, ZeroDivisionError):
        return None
    out: dict[str, Value] = {}
    for k, v in frame.names.items():
        now = v.as_tuple() if isinstance(v, Dim3) else v
        if before.get(k) != now:
            out[k] = v
    return out
