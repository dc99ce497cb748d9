"""The model builder's reading of memory accesses: which array an index or dereference reaches (through casts,
aliases and view macros), in which memory space, how it is used, and how its index moves across threads."""

from __future__ import annotations

from fractions import Fraction

from warpwise.analyzers.build_state import _BuilderState
from warpwise.analyzers.build_syntax import (
    _ADDRESS,
    _AFFINE,
    _ATOMIC,
    _CONSTANT,
    _F_ARGUMENT,
    _F_FUNCTION,
    _F_INDICES,
    _F_LEFT,
    _F_OPERATOR,
    _F_RIGHT,
    _FRACTION_ZERO,
    _GLOBAL,
    _INDIRECT,
    _LDG_NAMES,
    _LOCAL,
    _PATTERN_CONTIGUOUS,
    _PATTERN_INDIRECT,
    _PATTERN_STRIDED,
    _PATTERN_UNIFORM,
    _PATTERN_UNKNOWN,
    _READ,
    _READ_WRITE,
    _SHARED,
    _SPACE_UNKNOWN,
    _SPAN,
    _UNIFORM,
    _WRITE,
    _ZERO_VALUE,
    Node,
    _named,
)
from warpwise.analyzers.cuda_api import ATOMIC_CALLS
from warpwise.analyzers.expr.values import Kind, Value, type_size
from warpwise.analyzers.macros import MacroView
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, Branch, Loop, MemorySpace


class _AccessAnalysis(_BuilderState):
    """Model the function's array accesses (subscripts and dereferences)."""

    def _resolve(self, node: Node) -> tuple[str, str, MemorySpace, str | None, bool, Node | None, Fraction]:
        """Return (array text, base name, space, element type, vector cast, alias offset, offset scale) of an array
        expression.

        The offset is counted in elements of the pointer it is added to: under a cast (`(float4*)(x + 4 * t)`) that is
        `x`'s element, so the scale converts it to elements of the cast type (1/4 for `float` to `float4`); an offset
        added after the cast (`(float4*)x + t`) is already in the cast type's elements (scale 1).
        """
        cast_type: str | None = None
        offset: Node | None = None
        offset_under_cast = False
        array_text = self.t(node)
        if node.type == "identifier":
            name = array_text
        else:
            for _ in range(8):
                t = node.type
                if t == "parenthesized_expression":
                    inner = _named(node)
                    if not inner:
                        break
                    node = inner[0]
                elif t == "cast_expression" or t == "call_expression":
                    cast = self._cast(node)
                    if cast is None:
                        break
                    cast_type, operand = cast
                    if operand is None:
                        break
                    node = operand
                elif t == "binary_expression" and node.child_by_field_id(_F_OPERATOR).type in ("+", "-"):
                    offset = node.child_by_field_id(_F_RIGHT)
                    offset_under_cast = cast_type is not None
                    node = node.child_by_field_id(_F_LEFT)
                else:
                    break
                if node is None:
                    return array_text, array_text, _SPACE_UNKNOWN, cast_type, cast_type is not None, offset, _ONE
            if node is None or node.type != "identifier":
                return array_text, array_text, _SPACE_UNKNOWN, cast_type, cast_type is not None, offset, _ONE
            name = self.t(node)
        vector = cast_type is not None
        aliases = self.aliases
        if name in aliases:
            seen: set[str] = set()
            while name in aliases and name not in seen:
                seen.add(name)
                base, alias_off, alias_type = aliases[name]
                if alias_off is not None:
                    offset = alias_off if offset is None else offset
                if alias_type and cast_type is None:
                    cast_type = alias_type
                name = base
        shared = self.shared.get(name)
        if shared is not None:
            elem = cast_type or shared.element_type
            return (
                array_text,
                name,
                _SHARED,
                elem,
                vector or (cast_type is not None and cast_type != shared.element_type),
                offset,
                _offset_scale(offset_under_cast, shared.element_type, cast_type),
            )
        if name in self.local_arrays:
            return array_text, name, _LOCAL, self.local_arrays[name], False, offset, _ONE
        if name in self.ctx.constant_arrays:
            return array_text, name, _CONSTANT, cast_type, vector, offset, _ONE
        if name in self.ctx.device_arrays:
            return array_text, name, _GLOBAL, cast_type, vector, offset, _ONE
        param = self._param_by_name.get(name)
        if param is not None and param.pointer_depth > 0:
            elem = cast_type or param.base_type
            is_vec = cast_type is not None and type_size(cast_type) != type_size(param.base_type)
            # Pointer parameters of kernels point to global memory; a device helper may be handed shared memory.
            space = _GLOBAL if self.is_kernel else _SPACE_UNKNOWN
            scale = _offset_scale(offset_under_cast, param.base_type, cast_type)
            return array_text, name, space, elem, is_vec, offset, scale
        return array_text, name, _SPACE_UNKNOWN, cast_type, vector, offset, _ONE

    def _under_ldg(self, calls: list[Node]) -> set[int]:
        """Return the ids of the nodes whose nearest `call_expression` within three parents is an `__ldg`-like load.

        This is the top-down form of walking up from each access (at most three parents, stopping at the first
        call), which costs a tree-sitter parent look-up per step.
        """
        marked: set[int] = set()
        for call in calls:
            fn = call.child_by_field_id(_F_FUNCTION)
            if fn is None or self.t(fn) not in _LDG_NAMES:
                continue
            level = call.children
            for depth in (1, 2, 3):
                nxt: list[Node] = []
                for n in level:
                    marked.add(n.id)
                    if depth < 3 and n.type != "call_expression":
                        nxt.extend(n.children)
                level = nxt
        return marked

    def _accesses(self, subs: list[Node], ptrs: list[Node], loops: list[Loop], branches: list[Branch]) -> list[Access]:
        out: list[Access] = []
        if not subs and not ptrs:
            return out
        base = self.base
        loop_ranges = [(lp.span[0] + base, lp.span[1] + base, lp.id) for lp in loops]
        thread_branches = [(b.span[0] + base, b.span[1] + base) for b in branches if b.thread_dependent]
        # A subscript that is the array of another (`a[i]` in `a[i][j]`) is part of that access, not its own.
        parts: dict[int, tuple[Node | None, Node | None]] = {}
        inner: set[int] = set()
        for node in subs:
            arr = node.child_by_field_id(_F_ARGUMENT)
            parts[node.id] = (node.child_by_field_id(_F_INDICES), arr)
            if arr is not None and arr.type == "subscript_expression":
                inner.add(arr.id)
        for node in subs:
            if node.id in inner:
                continue
            chain: list[Node | None] = []
            root: Node | None = node
            while root is not None and root.type == "subscript_expression":
                got = parts.get(root.id)
                if got is None:
                    idx, nxt = root.child_by_field_id(_F_INDICES), root.child_by_field_id(_F_ARGUMENT)
                else:
                    idx, nxt = got
                if idx is None:
                    chain.append(None)
                else:
                    first = None
                    for c in idx.named_children:
                        if c.type != "comment":
                            first = c
                            break
                    chain.append(first if first is not None else idx)
                root = nxt
            if root is None:
                continue
            chain.reverse()
            acc = self._access(node, root, chain, loop_ranges, thread_branches)
            if acc is not None:
                out.append(acc)
        for node in ptrs:
            op = node.child_by_field_id(_F_OPERATOR)
            if op is None or op.type != "*":
                continue
            arg = node.child_by_field_id(_F_ARGUMENT)
            if arg is None:
                continue
            target = arg
            while target.type == "parenthesized_expression" and _named(target):
                target = _named(target)[0]
            if target.type == "binary_expression" and target.child_by_field_id(_F_OPERATOR).type == "+":
                root, index = target.child_by_field_id(_F_LEFT), target.child_by_field_id(_F_RIGHT)
            elif target.type == "identifier":
                root, index = target, None
            else:
                continue
            if root is None:
                continue
            acc = self._access(node, root, [index], loop_ranges, thread_branches)
            if acc is not None:
                out.append(acc)
        out.sort(key=_SPAN)
        return out

    def _access(
        self,
        node: Node,
        root: Node,
        chain: list[Node | None],
        loop_ranges: list[tuple[int, int, int]],
        thread_branches: list[tuple[int, int]],
    ) -> Access | None:
        array_text, base, space, elem, vector, offset, offset_scale = self._resolve(root)
        if (
            space is _SPACE_UNKNOWN
            and base not in self.locals
            and base not in self.scalars
            and root.type != "identifier"
        ):
            return None
        view = self._macro_view(node) if self.views else None
        if view is not None:
            call, macro = view
            kind = self._access_kind(call, call.parent)
            vector = vector or type_size(macro.type) != (type_size(elem) if elem else None)
        else:
            kind = self._access_kind(node, node.parent)
        via_ldg = node.id in self._ldg_marked
        if via_ldg:
            kind = _READ
        ev = self.ev
        values = [ev.eval(c) if c is not None else _ZERO_VALUE for c in chain]
        if offset is not None and values:
            off = ev.eval(offset)
            if offset_scale != 1:
                off = _scale_value(off, offset_scale)
            values[-1] = _add_values(values[-1], off)
        if len(values) == 1:
            combined = values[0]
        elif space is _SHARED and base in self.shared:
            arr = self.shared[base]
            combined = _linearize(values, arr.dim_values, arr.dims)
        else:
            combined = _linearize(values, (), ())
        pattern, stride, stride_text = _classify(combined)
        width = type_size(elem) if elem else None
        start = node.start_byte
        loop_ids = tuple([lid for lo, hi, lid in loop_ranges if lo <= start < hi])
        in_branch = False
        for lo, hi in thread_branches:
            if lo <= start < hi:
                in_branch = True
                break
        if len(values) == 1:
            deps = values[0].deps
        else:
            deps = frozenset().union(*[v.deps for v in values]) if values else frozenset()
        texts = tuple([self.t(c) if c is not None else "0" for c in chain])
        first = chain[0] if chain and chain[0] is not None else node
        last = chain[-1] if chain and chain[-1] is not None else node
        b = self.base
        return Access(
            array_text,
            base,
            space,
            kind,
            texts[0] if len(texts) == 1 else ", ".join(texts),
            texts,
            pattern,
            stride,
            stride_text,
            width,
            elem,
            vector,
            loop_ids,
            deps,
            (start - b, node.end_byte - b),
            (first.start_byte - b, last.end_byte - b),
            in_branch,
            via_ldg,
            view[1].name if view is not None else None,
            (f"const {view[1].type}" if view[1].const else view[1].type) if view is not None else None,
        )

    def _macro_view(self, node: Node) -> tuple[Node, MacroView] | None:
        """Return the call of a view macro of the file that `node` is the viewed argument of, and the macro."""
        child = node
        parent = node.parent
        while parent is not None and parent.type == "parenthesized_expression":
            child, parent = parent, parent.parent
        if parent is None or parent.type != "argument_list":
            return None
        call = parent.parent
        fn = call.child_by_field_id(_F_FUNCTION) if call is not None else None
        if call is None or fn is None or fn.type != "identifier":
            return None
        macro = self.views.get(self.t(fn))
        if macro is None:
            return None
        args = [c for c in parent.named_children if c.type != "comment"]
        if macro.param >= len(args) or args[macro.param] != child:
            return None
        return call, macro

    def _access_kind(self, node: Node, parent: Node | None) -> AccessKind:
        child = node
        while parent is not None and parent.type in ("field_expression", "parenthesized_expression"):
            child, parent = parent, parent.parent
        if parent is None:
            return _READ
        t = parent.type
        if t == "assignment_expression":
            if parent.child_by_field_id(_F_LEFT) == child:
                op = parent.child_by_field_id(_F_OPERATOR)
                return _WRITE if op is not None and op.type == "=" else _READ_WRITE
            return _READ
        if t == "update_expression":
            return _READ_WRITE
        if t == "pointer_expression" and parent.child_by_field_id(_F_OPERATOR).type == "&":
            gp = parent.parent
            if gp is not None and gp.type == "argument_list":
                call = gp.parent
                fn = call.child_by_field_id(_F_FUNCTION) if call is not None else None
                fname = self.t(fn).rsplit("::", 1)[-1] if fn is not None else ""
                args = _named(gp)
                if fname in ATOMIC_CALLS and args and args[0] == parent:
                    return _ATOMIC
                if fname in _LDG_NAMES:
                    return _READ
            return _ADDRESS
        return _READ


_ONE = Fraction(1)


def _offset_scale(under_cast: bool, pointee: str | None, cast_type: str | None) -> Fraction:
    """Return the factor converting an offset counted in `pointee` elements to elements of `cast_type`."""
    if not under_cast or not pointee or not cast_type:
        return _ONE
    inner = type_size(pointee)
    outer = type_size(cast_type.replace("const", "").strip())
    if not inner or not outer or inner == outer:
        return _ONE
    return Fraction(inner, outer)


def _scale_value(v: Value, factor: Fraction) -> Value:
    """Return `v * factor` for an offset: a thread coefficient scales; a uniform or constant offset stays uniform
    (its exact value does not change the pattern across threads); anything else keeps its kind."""
    if v.kind is Kind.AFFINE and isinstance(v.coef, Fraction):
        return Value(Kind.AFFINE, v.coef * factor, None, "", v.ty, v.deps)
    if v.kind is Kind.AFFINE and v.coef is not None:
        # A symbolic coefficient (`N` in `(row + t) * N`) keeps its name, counted in the cast type's elements.
        scaled = f"({v.coef})/{factor.denominator}" if factor.numerator == 1 else f"({v.coef})*{factor}"
        return Value(Kind.AFFINE, scaled, None, "", v.ty, v.deps)
    return v


def _add_values(a: Value, b: Value) -> Value:
    deps = a.deps | b.deps
    if a.kind is Kind.UNKNOWN or b.kind is Kind.UNKNOWN:
        return Value(Kind.UNKNOWN, deps=deps)
    if b.kind <= Kind.UNIFORM:
        kind = a.kind if a.kind is not Kind.CONST else Kind.UNIFORM
        return Value(kind, a.coef, None, a.text, a.ty or b.ty, deps)
    if a.kind <= Kind.UNIFORM:
        kind = b.kind if b.kind is not Kind.CONST else Kind.UNIFORM
        return Value(kind, b.coef, None, b.text, a.ty or b.ty, deps)
    if (
        a.kind is Kind.AFFINE
        and b.kind is Kind.AFFINE
        and isinstance(a.coef, Fraction)
        and isinstance(b.coef, Fraction)
    ):
        return Value(Kind.AFFINE, a.coef + b.coef, None, "", a.ty or b.ty, deps)
    return Value(Kind.INDIRECT, ty=a.ty or b.ty, deps=deps)


def _linearize(values: list[Value], dims: tuple[int | None, ...], dim_texts: tuple[str, ...]) -> Value:
    """Combine the indices of a multi-dimensional access into one value over the flattened array."""
    if len(values) == 1:
        return values[0]
    deps = frozenset().union(*(v.deps for v in values))
    ty = any(v.ty for v in values)
    kinds = [v.kind for v in values]
    if Kind.UNKNOWN in kinds:
        return Value(Kind.UNKNOWN, ty=ty, deps=deps)
    if Kind.INDIRECT in kinds:
        return Value(Kind.INDIRECT, ty=ty, deps=deps)
    if all(k <= Kind.UNIFORM for k in kinds):
        return Value(Kind.UNIFORM, ty=ty, deps=deps)
    coef: Fraction | str | None = Fraction(0)
    for i, v in enumerate(values):
        if v.kind is not Kind.AFFINE or v.coef is None:
            continue
        stride: int | str = 1
        for j in range(i + 1, len(values)):
            d = dims[j] if j < len(dims) else None
            if d is None:
                stride = f"{dim_texts[j]}" if j < len(dim_texts) and dim_texts[j] else "?"
                break
            stride = stride * d if isinstance(stride, int) else stride
        if isinstance(stride, int) and isinstance(v.coef, Fraction) and isinstance(coef, Fraction):
            coef = coef + v.coef * stride
        else:
            coef = f"{v.coef}*{stride}"
    if isinstance(coef, Fraction) and coef == 0:
        return Value(Kind.UNIFORM, ty=ty, deps=deps)
    return Value(Kind.AFFINE, coef, ty=ty, deps=deps)


def _classify(v: Value) -> tuple[AccessPattern, Fraction | None, str | None]:
    kind = v.kind
    if kind <= _UNIFORM:
        return _PATTERN_UNIFORM, _FRACTION_ZERO, None
    if kind is _AFFINE:
        coef = v.coef
        if isinstance(coef, Fraction):
            if abs(coef.numerator) <= coef.denominator:
                return _PATTERN_CONTIGUOUS, coef, None
            return _PATTERN_STRIDED, coef, None
        return _PATTERN_STRIDED, None, str(coef)
    if kind is _INDIRECT:
        return _PATTERN_INDIRECT, None, None
    return _PATTERN_UNKNOWN, None, None
