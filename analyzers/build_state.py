"""The state of one function's analysis: where it starts, what its names mean, and the values of local names.

`_BuilderState` is the base of the model builder's parts (`build_function._FunctionBuilder`): it holds the
function's node, the file context, the local definitions of each name and the evaluator that reads them, and
answers a name's value (merged over its definitions, flow-insensitively, memoised).
"""

from __future__ import annotations

from collections.abc import Callable

from warpwise.analyzers.build_file import FileContext, _kind_of
from warpwise.analyzers.build_syntax import (
    _AFFINE,
    _CAST_NAMES,
    _CONST,
    _F_ARGUMENTS,
    _F_FUNCTION,
    _F_NAME,
    _F_TYPE,
    _F_VALUE,
    _INDIRECT,
    _UNIFORM,
    _UNKNOWN,
    Node,
    _named,
    _new,
    _texter,
)
from warpwise.analyzers.expr.values import UNKNOWN, Evaluator, Value, join
from warpwise.analyzers.macros import MacroView
from warpwise.analyzers.model import FunctionKind, Param, SharedArray, Span, TemplateParam

_Def = tuple[str, Node | None, int]
"""One definition of a local name: the operator (`=`, `+=`, `decl`, ...), its value node and its byte offset."""


_RELEASED = Evaluator(b"", lambda name: None, {}, set())
"""The evaluator a builder holds once released (it resolves no name)."""


class _BuilderState:
    """Hold one function's analysis state and answer the values of its local names."""

    def __init__(
        self,
        fn: Node,
        template: Node | None,
        src: bytes,
        ctx: FileContext,
        text: Callable[[Node], str] | None = None,
        kind: FunctionKind | None = None,
    ) -> None:
        self.fn = fn
        self.template = template
        self.src = src
        self.ctx = ctx
        self.t = text if text is not None else _texter(src, None)
        self.fkind = kind if kind is not None else _kind_of(fn)
        self.base = fn.start_byte
        self.consts = dict(ctx.consts)
        self.defs: dict[str, list[_Def]] = {}
        self.vals: dict[str, Value] = {}
        self.visiting: set[str] = set()
        self.scalars: set[str] = set()
        self.locals: dict[str, str] = {}
        self.local_arrays: dict[str, str] = {}
        self.shared: dict[str, SharedArray] = {}
        self.aliases: dict[str, tuple[str, Node | None, str | None]] = {}
        self.dim3: dict[str, list[Node]] = {}
        self.loop_var_of: dict[int, str] = {}
        self._pending_shared: list[tuple[str, str, list[Node | None], bool, Node, Node]] = []
        self._params: tuple[Param, ...] = ()
        self._param_by_name: dict[str, Param] = {}
        self._ldg_marked: set[int] = set()
        self.has_launch = True
        self.is_kernel = False
        self.binding: tuple[str, ...] = ()
        self.type_binding: dict[str, str] = dict(ctx.typedefs)
        self.file_types: dict[str, str] = dict(ctx.typedefs)
        self.views: dict[str, MacroView] = {v.name: v for v in ctx.views}
        self._tparams: tuple[TemplateParam, ...] = ()
        self.ev = Evaluator(src, self._lookup, self.consts, self.scalars, self.t)

    def release(self) -> None:
        """Drop the evaluator, whose name look-up refers back to this builder, so that no cycle outlives it."""
        self.ev = _RELEASED

    def rel(self, node: Node) -> Span:
        return (node.start_byte - self.base, node.end_byte - self.base)

    def text(self, node: Node | None) -> str:
        return "" if node is None else self.t(node)

    def _lookup(self, name: str) -> Value | None:
        hit = self.vals.get(name)
        if hit is not None:
            return hit
        defs = self.defs.get(name)
        if defs is None:
            return None
        visiting = self.visiting
        if name in visiting:
            return UNKNOWN
        visiting.add(name)
        try:
            ev = self.ev
            plain: list[Value] = []
            compound: list[tuple[str, Value]] = []
            for op, node, _ in defs:
                if op == "=":
                    plain.append(ev.eval(node))
                elif op == "++" or op == "--":
                    continue
                else:
                    compound.append((op, ev.eval(node)))
            base = join(plain) if plain else UNKNOWN
            for op, v in compound:
                deps = base.deps | v.deps
                if v.kind is _UNKNOWN:
                    base = _new(Value, (_UNKNOWN, None, None, "", False, deps))
                elif v.kind <= _UNIFORM and (op == "+=" or op == "-="):
                    kind = _UNIFORM if base.kind is _CONST else base.kind
                    base = _new(Value, (kind, base.coef, None, base.text, base.ty or v.ty, deps))
                elif v.kind <= _UNIFORM and base.kind <= _UNIFORM:
                    base = _new(Value, (_UNIFORM, None, None, base.text, base.ty or v.ty, deps))
                elif v.kind is _AFFINE and base.kind <= _UNIFORM and (op == "+=" or op == "-="):
                    base = _new(Value, (_AFFINE, v.coef, None, base.text, base.ty or v.ty, deps))
                else:
                    base = _new(Value, (_INDIRECT, None, None, "", base.ty or v.ty, deps))
            self.vals[name] = base
            return base
        finally:
            visiting.discard(name)

    def _define(self, name: str, op: str, node: Node | None, pos: int) -> None:
        defs = self.defs.get(name)
        if defs is None:
            self.defs[name] = [(op, node, pos)]
        else:
            defs.append((op, node, pos))

    def _cast(self, node: Node) -> tuple[str, Node | None] | None:
        """Return the pointee type and the operand of a cast (`(T*)p`, `reinterpret_cast<T*>(p)`), or None."""
        if node.type == "cast_expression":
            cast_type = self.text(node.child_by_field_id(_F_TYPE)).replace("*", "").replace("const", "").strip()
            return cast_type, node.child_by_field_id(_F_VALUE)
        if node.type != "call_expression":
            return None
        fn = node.child_by_field_id(_F_FUNCTION)
        if fn is None or fn.type != "template_function" or self.text(fn.child_by_field_id(_F_NAME)) not in _CAST_NAMES:
            return None
        targs = self.text(fn.child_by_field_id(_F_ARGUMENTS))
        cast_type = targs.strip("<>").replace("*", "").replace("const", "").strip()
        args = _named(node.child_by_field_id(_F_ARGUMENTS))
        return cast_type, args[0] if args else None
