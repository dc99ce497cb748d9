"""Build the kernel model (`FileModel`) from a tree-sitter tree.

The file is cut into function definitions; each is analysed on its own by `_FunctionBuilder` with one query over
its subtree, and the result is kept in the document's cache under the function's text (plus the file-level
constants it may read). After an edit only the functions whose text changed are analysed again; the others are
reused with their base offset moved. Nothing here raises on any input: a construct that cannot be read is left
out of the model or classified `unknown`.
"""

from __future__ import annotations

import ast
import dataclasses
import logging
import re
from fractions import Fraction
from typing import Any

from warpwise.analyzers.model import (
    Access,
    AccessKind,
    AccessPattern,
    Branch,
    Call,
    FileModel,
    Function,
    FunctionKind,
    Launch,
    LineIndex,
    Loop,
    MemorySpace,
    Param,
    SharedArray,
    Span,
    SyntaxProblem,
    TemplateParam,
)
from warpwise.analyzers.parse import CudaDocument, captures, query
from warpwise.analyzers.values import Evaluator, Kind, Value, join, parse_int_literal, type_size

log = logging.getLogger(__name__)
Node = Any

_LAUNCH_QUERY = """
(call_expression (kernel_call_syntax)) @launch
"""

_HOST_QUERY = """
(declaration) @decl
(assignment_expression) @assign
"""

_BODY_QUERY = """
(declaration) @decl
(subscript_expression) @sub
(pointer_expression) @ptr
(call_expression) @call
(for_statement) @loop
(while_statement) @loop
(do_statement) @loop
(for_range_loop) @loop
(if_statement) @if
(assignment_expression) @assign
(update_expression) @update
(return_statement) @return
"""

SYNC_CALLS = {
    "__syncthreads": "syncthreads",
    "__syncthreads_count": "syncthreads",
    "__syncthreads_and": "syncthreads",
    "__syncthreads_or": "syncthreads",
    "__syncwarp": "syncwarp",
    "__threadfence": "fence",
    "__threadfence_block": "fence",
    "__threadfence_system": "fence",
    "__pipeline_wait_prior": "async_wait",
    "__pipeline_commit": "async_commit",
}
CG_SYNC_METHODS = {"sync", "arrive_and_wait", "wait", "wait_prior"}
ATOMIC_CALLS = {
    f"atomic{op}{suffix}"
    for op in ("Add", "Sub", "Exch", "Min", "Max", "Inc", "Dec", "CAS", "And", "Or", "Xor")
    for suffix in ("", "_block", "_system")
}
WARP_CALLS = {
    "__shfl_sync",
    "__shfl_up_sync",
    "__shfl_down_sync",
    "__shfl_xor_sync",
    "__ballot_sync",
    "__all_sync",
    "__any_sync",
    "__uni_sync",
    "__activemask",
    "__match_any_sync",
    "__match_all_sync",
    "__reduce_add_sync",
    "__reduce_min_sync",
    "__reduce_max_sync",
    "__reduce_and_sync",
    "__reduce_or_sync",
    "__reduce_xor_sync",
    "__shfl",
    "__shfl_down",
    "__shfl_up",
    "__shfl_xor",
}
CG_WARP_METHODS = {
    "shfl",
    "shfl_down",
    "shfl_up",
    "shfl_xor",
    "ballot",
    "any",
    "all",
    "match_any",
    "match_all",
}
ASYNC_CALLS = {"__pipeline_memcpy_async", "memcpy_async", "cp_async", "__cp_async"}
MATH_CALLS = {
    *(
        f"{name}{suffix}"
        for name in (
            "exp",
            "exp2",
            "exp10",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "sqrt",
            "rsqrt",
            "cbrt",
            "pow",
            "sin",
            "cos",
            "tan",
            "sinh",
            "cosh",
            "tanh",
            "asin",
            "acos",
            "atan",
            "atan2",
            "erf",
            "erfc",
            "fabs",
            "fmax",
            "fmin",
            "fma",
            "floor",
            "ceil",
            "round",
            "trunc",
            "fmod",
            "hypot",
            "sincos",
        )
        for suffix in ("", "f")
    ),
    "__expf",
    "__exp10f",
    "__logf",
    "__log2f",
    "__log10f",
    "__powf",
    "__sinf",
    "__cosf",
    "__tanf",
    "__sincosf",
    "__fdividef",
    "__frcp_rn",
    "__fsqrt_rn",
    "__frsqrt_rn",
    "__fmaf_rn",
    "__saturatef",
    "__fdiv_rn",
    "__fmul_rn",
    "__fadd_rn",
    "__hadd",
    "__hsub",
    "__hmul",
    "__hdiv",
    "__hfma",
    "__hadd2",
    "__hsub2",
    "__hmul2",
    "__hfma2",
    "__h2div",
    "hexp",
    "hlog",
    "hsqrt",
    "hrsqrt",
    "h2exp",
    "h2log",
    "h2sqrt",
    "h2rsqrt",
    "__half2float",
    "__float2half",
    "__float2half_rn",
    "__bfloat162float",
    "__float2bfloat16",
    "__floats2half2_rn",
    "__half22float2",
    "__float22half2_rn",
    "__low2float",
    "__high2float",
    "__bfloat1622float2",
    "__float22bfloat162_rn",
}
KNOWN_GAP_TOKENS = ("__device__", "__host__", "__cluster_dims__", "__align__", "__grid_constant__")
_NUMERIC_TEXT = re.compile(r"^[\s()0-9xXa-fA-FuUlL+\-*/%<>&|^~]*$")


def _start(node: Node) -> int:
    return node.start_byte


def _text(src: bytes, node: Node) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _named(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def _declarator_name(node: Node | None, src: bytes) -> str | None:
    """Return the identifier declared by a (possibly nested) declarator."""
    while node is not None:
        t = node.type
        if t in ("identifier", "field_identifier", "type_identifier", "operator_name", "destructor_name"):
            return _text(src, node)
        if t == "qualified_identifier":
            name = node.child_by_field_name("name")
            node = name
            continue
        if t == "template_function":
            node = node.child_by_field_name("name")
            continue
        nxt = node.child_by_field_name("declarator")
        if nxt is None:
            named = _named(node)
            nxt = named[0] if named else None
        node = nxt
    return None


def _has_token(node: Node, tokens: tuple[str, ...]) -> bool:
    """Return whether a direct child (or a qualifier below one) is one of `tokens`."""
    for c in node.children:
        if c.type in tokens:
            return True
        if c.type in ("type_qualifier", "storage_class_specifier", "attribute_specifier"):
            for g in c.children:
                if g.type in tokens:
                    return True
    return False


def eval_numeric_text(text: str, consts: dict[str, int]) -> int | None:
    """Evaluate a macro body made of integer literals, known constants and arithmetic, or return None."""
    stripped = text.strip()
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
        tree = ast.parse(expr.replace("/", "//"), mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)
    if not all(isinstance(n, allowed) for n in ast.walk(tree)):
        return None
    try:
        val = eval(compile(tree, "<macro>", "eval"), {"__builtins__": {}}, {})
    except (ArithmeticError, ValueError, OverflowError):
        return None
    return val if isinstance(val, int) and abs(val) < 1 << 62 else None


@dataclasses.dataclass(frozen=True, slots=True)
class FileContext:
    """File-level facts that a function's analysis reads; part of each function's cache key."""

    consts: tuple[tuple[str, int], ...]
    constant_arrays: frozenset[str]
    device_arrays: frozenset[str]


@dataclasses.dataclass(slots=True)
class _Def:
    op: str
    node: Node | None
    pos: int


class _FunctionBuilder:
    """Analyse one function definition into a `Function` with spans relative to its first byte."""

    def __init__(self, fn: Node, template: Node | None, src: bytes, ctx: FileContext) -> None:
        self.fn = fn
        self.template = template
        self.src = src
        self.ctx = ctx
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
        self.has_launch = True
        self.is_kernel = False
        self.binding: tuple[str, ...] = ()
        self.type_binding: dict[str, str] = {}
        self._tparams: tuple[TemplateParam, ...] = ()
        self.ev = Evaluator(src, self._lookup, self.consts, self.scalars)

    # -- helpers -------------------------------------------------------------------------------------------
    def rel(self, node: Node) -> Span:
        return (node.start_byte - self.base, node.end_byte - self.base)

    def text(self, node: Node | None) -> str:
        return "" if node is None else _text(self.src, node)

    def _lookup(self, name: str) -> Value | None:
        hit = self.vals.get(name)
        if hit is not None:
            return hit
        defs = self.defs.get(name)
        if defs is None:
            return None
        if name in self.visiting:
            return Value(Kind.UNKNOWN)
        self.visiting.add(name)
        try:
            plain: list[Value] = []
            compound: list[tuple[str, Value]] = []
            for d in defs:
                if d.op == "=":
                    plain.append(self.ev.eval(d.node))
                elif d.op in ("++", "--"):
                    continue
                else:
                    compound.append((d.op, self.ev.eval(d.node) if d.node is not None else Value(Kind.UNKNOWN)))
            base = join(plain) if plain else Value(Kind.UNKNOWN)
            for op, v in compound:
                deps = base.deps | v.deps
                if v.kind is Kind.UNKNOWN:
                    base = Value(Kind.UNKNOWN, deps=deps)
                elif v.kind <= Kind.UNIFORM and op in ("+=", "-="):
                    base = base._replace(
                        deps=deps,
                        ty=base.ty or v.ty,
                        const=None,
                        kind=Kind.UNIFORM if base.kind is Kind.CONST else base.kind,
                    )
                elif v.kind <= Kind.UNIFORM and base.kind <= Kind.UNIFORM:
                    base = Value(Kind.UNIFORM, text=base.text, ty=base.ty or v.ty, deps=deps)
                elif v.kind is Kind.AFFINE and base.kind <= Kind.UNIFORM and op in ("+=", "-="):
                    base = Value(Kind.AFFINE, v.coef, text=base.text, ty=base.ty or v.ty, deps=deps)
                else:
                    base = Value(Kind.INDIRECT, ty=base.ty or v.ty, deps=deps)
            self.vals[name] = base
            return base
        finally:
            self.visiting.discard(name)

    def _define(self, name: str, op: str, node: Node | None, pos: int) -> None:
        self.defs.setdefault(name, []).append(_Def(op, node, pos))

    # -- header --------------------------------------------------------------------------------------------
    def kind(self) -> FunctionKind:
        fn = self.fn
        if _has_token(fn, ("__global__",)):
            return FunctionKind.KERNEL
        dev = _has_token(fn, ("__device__",))
        host = _has_token(fn, ("__host__",))
        if dev and host:
            return FunctionKind.HOST_DEVICE
        if dev:
            return FunctionKind.DEVICE
        return FunctionKind.HOST

    def template_params(self) -> tuple[TemplateParam, ...]:
        if self.template is None:
            return ()
        plist = self.template.child_by_field_name("parameters")
        out: list[TemplateParam] = []
        for p in _named(plist) if plist is not None else []:
            t = p.type
            if t in (
                "type_parameter_declaration",
                "optional_type_parameter_declaration",
                "variadic_type_parameter_declaration",
            ):
                names = [c for c in p.named_children if c.type == "type_identifier"]
                name = self.text(p.child_by_field_name("name") or (names[0] if names else None))
                default = p.child_by_field_name("default_type")
                out.append(TemplateParam(name, "type", self.text(default) if default is not None else None, None))
            elif t in ("parameter_declaration", "optional_parameter_declaration"):
                name = _declarator_name(p.child_by_field_name("declarator"), self.src) or ""
                default = p.child_by_field_name("default_value")
                value = self.ev.const_int(default) if default is not None else None
                out.append(TemplateParam(name, "value", self.text(default) if default is not None else None, value))
        for i, tp in enumerate(out):
            bound = self.binding[i] if i < len(self.binding) else None
            if tp.kind == "type":
                if bound:
                    self.type_binding[tp.name] = bound
                continue
            value = eval_numeric_text(bound, self.consts) if bound else None
            if value is None:
                value = tp.value
            if value is not None:
                self.consts[tp.name] = value
            else:
                self.scalars.add(tp.name)
        return tuple(out)

    def binding_items(self) -> tuple[tuple[str, str], ...]:
        """Return the template arguments this analysis assumed (from the file's launch sites)."""
        names = [tp.name for tp in self._tparams]
        return tuple((names[i], arg) for i, arg in enumerate(self.binding) if i < len(names))

    def params(self, declarator: Node | None) -> tuple[Param, ...]:
        plist = declarator.child_by_field_name("parameters") if declarator is not None else None
        if plist is None:
            return ()
        out: list[Param] = []
        for p in _named(plist):
            if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                continue
            type_node = p.child_by_field_name("type")
            base_type = self.text(type_node)
            base_type = self.type_binding.get(base_type, base_type)
            pointee_const = any(c.type == "type_qualifier" and self.text(c) == "const" for c in p.children)
            depth = 0
            restrict = False
            reference = False
            node = p.child_by_field_name("declarator")
            name = ""
            while node is not None:
                t = node.type
                if t == "pointer_declarator":
                    depth += 1
                    for c in node.children:
                        if c.type == "type_qualifier" and self.text(c) in (
                            "__restrict__",
                            "__restrict",
                            "restrict",
                        ):
                            restrict = True
                elif t == "reference_declarator":
                    reference = True
                elif t in ("array_declarator", "abstract_array_declarator"):
                    depth += 1
                elif t == "identifier":
                    name = self.text(node)
                    break
                nxt = node.child_by_field_name("declarator")
                if nxt is None:
                    named = [c for c in node.named_children if c.type != "type_qualifier"]
                    nxt = named[-1] if named else None
                node = nxt
            type_text = " ".join(self.text(p).split())
            if name:
                type_text = type_text.rsplit(name, 1)[0].strip() or type_text
            out.append(
                Param(
                    len(out),
                    name,
                    type_text,
                    base_type,
                    depth,
                    pointee_const,
                    restrict,
                    reference,
                    self.rel(p),
                )
            )
            if name:
                self.scalars.add(name)
        return tuple(out)

    def launch_bounds(self) -> tuple[str, ...] | None:
        for c in self.fn.children:
            if c.type == "launch_bounds":
                return tuple(self.text(a) for a in _named(c))
        return None

    # -- body ----------------------------------------------------------------------------------------------
    def build(self) -> Function:
        fn = self.fn
        kind = self.kind()
        self.is_kernel = kind is FunctionKind.KERNEL
        declarator = fn.child_by_field_name("declarator")
        while declarator is not None and declarator.type not in ("function_declarator",):
            nxt = declarator.child_by_field_name("declarator")
            declarator = nxt
        name_node = declarator.child_by_field_name("declarator") if declarator is not None else None
        name = _declarator_name(name_node, self.src) or "<anonymous>"
        if name_node is not None and name_node.type == "qualified_identifier":
            inner = name_node
            while inner is not None and inner.type == "qualified_identifier":
                inner = inner.child_by_field_name("name")
            name_span = self.rel(inner) if inner is not None else self.rel(name_node)
        else:
            name_span = self.rel(name_node) if name_node is not None else (0, 0)
        tparams = self.template_params()
        self._tparams = tparams
        params = self.params(declarator)
        self._params = params
        body = fn.child_by_field_name("body")
        sig_end = body.start_byte if body is not None else fn.end_byte
        signature = " ".join(self.src[fn.start_byte : sig_end].decode("utf-8", "replace").split())
        if body is None:
            return Function(
                name,
                kind,
                self.base,
                fn.end_byte - fn.start_byte,
                name_span,
                None,
                signature,
                tparams,
                self.binding_items(),
                self.launch_bounds(),
                params,
                (),
                (),
                (),
                (),
                (),
                (),
            )
        if kind is FunctionKind.HOST:
            return self._host(name, name_span, body, signature, params)
        caps = {k: sorted(v, key=_start) for k, v in captures(query(_BODY_QUERY), body).items()}
        if fn.has_error:
            nested = [
                (n.start_byte, n.end_byte) for n in captures(query("(function_definition) @fn"), body).get("fn", [])
            ]
            if nested:
                caps = {k: [n for n in v if not any(a <= n.start_byte < b for a, b in nested)] for k, v in caps.items()}
        decls = caps.get("decl", [])
        loops_nodes = caps.get("loop", [])
        for d in decls:
            self._declaration(d)
        for a in caps.get("assign", []):
            left = a.child_by_field_name("left")
            op = a.child_by_field_name("operator")
            if left is not None and left.type == "identifier":
                self._define(
                    self.text(left),
                    op.type if op is not None else "=",
                    a.child_by_field_name("right"),
                    a.start_byte,
                )
                if left is not None and op is not None and op.type == "=":
                    self._maybe_alias(self.text(left), a.child_by_field_name("right"), None)
        for u in caps.get("update", []):
            arg = u.child_by_field_name("argument")
            op = u.child_by_field_name("operator")
            if arg is not None and arg.type == "identifier":
                self._define(self.text(arg), op.type if op is not None else "++", None, u.start_byte)
        for sname, stype, dims, is_extern, decl_node, name_node in self._pending_shared:
            stype = self.type_binding.get(stype, stype)
            self.shared[sname] = SharedArray(
                sname,
                stype,
                type_size(stype),
                tuple(self.text(x) if x is not None else "" for x in dims),
                tuple(self.ev.const_int(x) if x is not None else None for x in dims),
                is_extern or any(x is None for x in dims),
                self.rel(decl_node),
                self.rel(name_node),
            )
        loops = self._loops(loops_nodes)
        branches = self._branches(caps.get("if", []), caps.get("return", []))
        thread_guards = [(b.span, b.condition) for b in branches if b.thread_dependent] + [
            (lp.span, lp.condition or lp.var or "loop condition") for lp in loops if lp.thread_dependent
        ]
        accesses = self._accesses(caps.get("sub", []), caps.get("ptr", []), loops, branches)
        calls, launches = self._calls(caps.get("call", []), loops, thread_guards, name)
        return Function(
            name=name,
            kind=kind,
            base=self.base,
            length=fn.end_byte - fn.start_byte,
            name_span=name_span,
            body_span=self.rel(body),
            signature=signature,
            template_params=tparams,
            template_binding=self.binding_items(),
            launch_bounds=self.launch_bounds(),
            params=params,
            shared=tuple(self.shared.values()),
            loops=tuple(loops),
            accesses=tuple(accesses),
            calls=tuple(calls),
            branches=tuple(branches),
            launches=tuple(launches),
            locals=dict(self.locals),
            pointer_aliases={k: v[0] for k, v in self.aliases.items()},
        )

    def _host(self, name: str, name_span: Span, body: Node, signature: str, params: tuple[Param, ...]) -> Function:
        """Analyse host code for its launch sites only (and the local constants their geometry reads)."""
        launch_nodes = (
            sorted(captures(query(_LAUNCH_QUERY), body).get("launch", []), key=_start) if self.has_launch else []
        )
        launches: list[Launch] = []
        if launch_nodes:
            caps = {k: sorted(v, key=_start) for k, v in captures(query(_HOST_QUERY), body).items()}
            for d in caps.get("decl", []):
                self._declaration(d)
            for a in caps.get("assign", []):
                left = a.child_by_field_name("left")
                op = a.child_by_field_name("operator")
                if left is not None and left.type == "identifier":
                    self._define(
                        self.text(left),
                        op.type if op is not None else "=",
                        a.child_by_field_name("right"),
                        a.start_byte,
                    )
            for node in launch_nodes:
                fn = node.child_by_field_name("function")
                config = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
                if fn is not None and config is not None:
                    launch = self._launch(node, fn, config, name)
                    if launch is not None:
                        launches.append(launch)
        return Function(
            name,
            FunctionKind.HOST,
            self.base,
            self.fn.end_byte - self.fn.start_byte,
            name_span,
            self.rel(body),
            signature,
            (),
            (),
            None,
            params,
            (),
            (),
            (),
            (),
            (),
            tuple(launches),
            locals=dict(self.locals),
        )

    def _declaration(self, d: Node) -> None:
        is_shared = _has_token(d, ("__shared__",))
        is_extern = any(c.type == "storage_class_specifier" and self.text(c) == "extern" for c in d.children)
        type_node = d.child_by_field_name("type")
        type_text = self.text(type_node)
        for decl in d.children_by_field_name("declarator"):
            node = decl
            value: Node | None = None
            if node.type == "init_declarator":
                value = node.child_by_field_name("value")
                node = node.child_by_field_name("declarator")
            dims: list[Node | None] = []
            depth = 0
            while node is not None and node.type in (
                "array_declarator",
                "pointer_declarator",
                "reference_declarator",
                "parenthesized_declarator",
            ):
                if node.type == "array_declarator":
                    dims.append(node.child_by_field_name("size"))
                elif node.type == "pointer_declarator":
                    depth += 1
                node = node.child_by_field_name("declarator") or (_named(node)[-1] if _named(node) else None)
            if node is not None and node.type == "function_declarator" and type_text in ("dim3", "uint3"):
                # `dim3 block(TILE, ROWS);` parses as a function declaration; read it as the constructor call.
                inner = node.child_by_field_name("declarator")
                plist = node.child_by_field_name("parameters")
                if inner is not None and plist is not None:
                    self.dim3[self.text(inner)] = _named(plist)
                    self.locals[self.text(inner)] = type_text
                continue
            if node is None or node.type != "identifier":
                continue
            name = self.text(node)
            dims.reverse()
            if is_shared:
                self._pending_shared.append((name, type_text, dims, is_extern, d, node))
                continue
            self.locals[name] = type_text + "*" * depth + "".join(f"[{self.text(x)}]" for x in dims if x is not None)
            if dims:
                self.local_arrays[name] = type_text
                continue
            if value is not None and value.type == "argument_list" and type_text in ("dim3", "uint3"):
                self.dim3[name] = _named(value)
                continue
            if value is not None and value.type == "initializer_list" and type_text in ("dim3", "uint3"):
                self.dim3[name] = _named(value)
                continue
            if value is not None:
                if value.type == "argument_list":
                    args = _named(value)
                    value = args[0] if len(args) == 1 else None
                if value is not None and value.type == "initializer_list":
                    args = _named(value)
                    value = args[0] if len(args) == 1 else None
                self._define(name, "=", value, d.start_byte)
                if depth:
                    self._maybe_alias(name, value, type_text)
            else:
                self._define(name, "decl", None, d.start_byte)

    def _maybe_alias(self, name: str, value: Node | None, elem_type: str | None) -> None:
        """Record `name` as a pointer into another array when its value is `base`, `base + off` or `&base[off]`."""
        node = value
        offset: Node | None = None
        cast_type: str | None = None
        for _ in range(6):
            if node is None:
                return
            t = node.type
            if t == "parenthesized_expression":
                inner = _named(node)
                node = inner[0] if inner else None
            elif t == "cast_expression":
                cast_type = self.text(node.child_by_field_name("type")).replace("*", "").replace("const", "").strip()
                node = node.child_by_field_name("value")
            elif t == "call_expression":
                fn = node.child_by_field_name("function")
                if (
                    fn is not None
                    and fn.type == "template_function"
                    and self.text(fn.child_by_field_name("name")) in ("reinterpret_cast", "static_cast", "const_cast")
                ):
                    targs = fn.child_by_field_name("arguments")
                    cast_type = self.text(targs).strip("<>").replace("*", "").replace("const", "").strip()
                    args = _named(node.child_by_field_name("arguments"))
                    node = args[0] if args else None
                else:
                    return
            elif (
                t == "binary_expression"
                and node.child_by_field_name("operator") is not None
                and node.child_by_field_name("operator").type in ("+", "-")
            ):
                offset = node.child_by_field_name("right")
                node = node.child_by_field_name("left")
            elif t == "pointer_expression" and node.child_by_field_name("operator").type == "&":
                arg = node.child_by_field_name("argument")
                if arg is not None and arg.type == "subscript_expression":
                    idx = _named(arg.child_by_field_name("indices"))
                    offset = idx[0] if len(idx) == 1 else None
                    node = arg.child_by_field_name("argument")
                else:
                    return
            elif t == "identifier":
                base = self.text(node)
                if base == name:
                    return
                ptype = elem_type or cast_type
                if cast_type is not None:
                    ptype = cast_type
                self.aliases[name] = (
                    base,
                    offset,
                    " ".join(ptype.replace("const", " ").split()) if ptype else None,
                )
                return
            else:
                return

    def _loops(self, nodes: list[Node]) -> list[Loop]:
        nodes = sorted(nodes, key=lambda n: n.start_byte)
        out: list[Loop] = []
        stack: list[int] = []
        sites = [(name, d.pos) for name, ds in self.defs.items() for d in ds]
        for node in nodes:
            while stack and not (out[stack[-1]].span[1] + self.base >= node.end_byte):
                stack.pop()
            parent = stack[-1] if stack else None
            lid = len(out)
            loop = self._loop(node, lid, parent, len(stack), sites)
            out.append(loop)
            stack.append(lid)
        return out

    def _loop(self, node: Node, lid: int, parent: int | None, depth: int, sites: list[tuple[str, int]]) -> Loop:
        t = node.type
        kind = {"for_statement": "for", "while_statement": "while", "do_statement": "do"}.get(t, "range_for")
        var = init_text = bound_text = compare = step_text = None
        init_v = bound_v = step_v = None
        body = node.child_by_field_name("body")
        cond = node.child_by_field_name("condition")
        header_end = body.start_byte if body is not None else node.end_byte
        step_op = None
        if t == "for_statement":
            init = node.child_by_field_name("initializer")
            if init is not None:
                if init.type == "declaration":
                    for decl in init.children_by_field_name("declarator"):
                        if decl.type == "init_declarator":
                            var = self.text(decl.child_by_field_name("declarator"))
                            val = decl.child_by_field_name("value")
                            init_text = self.text(val)
                            init_v = self.ev.const_int(val)
                            break
                elif init.type == "assignment_expression":
                    var = self.text(init.child_by_field_name("left"))
                    val = init.child_by_field_name("right")
                    init_text = self.text(val)
                    init_v = self.ev.const_int(val)
            if cond is not None and cond.type == "binary_expression":
                left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
                op = cond.child_by_field_name("operator")
                if left is not None and right is not None and op is not None:
                    if var is not None and self.text(left) == var:
                        compare, bound_node = op.type, right
                    elif var is not None and self.text(right) == var:
                        flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
                        compare, bound_node = flip.get(op.type, op.type), left
                    else:
                        compare, bound_node = op.type, right
                    bound_text = self.text(bound_node)
                    bound_v = self.ev.const_int(bound_node)
            upd = node.child_by_field_name("update")
            if upd is not None:
                if upd.type == "update_expression":
                    op = upd.child_by_field_name("operator")
                    step_op = "+=" if op is not None and op.type == "++" else "-="
                    step_text, step_v = "1", 1
                    var = var or self.text(upd.child_by_field_name("argument"))
                elif upd.type == "assignment_expression":
                    op = upd.child_by_field_name("operator")
                    step_op = op.type if op is not None else None
                    right = upd.child_by_field_name("right")
                    step_text = self.text(right)
                    step_v = self.ev.const_int(right)
                    var = var or self.text(upd.child_by_field_name("left"))
        elif cond is not None:
            bound_text = self.text(cond).strip("()")
        trip = _trip_count(init_v, bound_v, compare, step_op, step_v)
        if var is not None:
            self.loop_var_of[lid] = var
        cond_val = self.ev.eval(cond) if cond is not None else Value(Kind.CONST, const=1)
        unroll = None
        prev = node.prev_named_sibling
        while prev is not None and prev.type == "comment":
            prev = prev.prev_named_sibling
        if prev is not None and prev.type == "preproc_call":
            directive = prev.child_by_field_name("directive")
            arg = prev.child_by_field_name("argument")
            if directive is not None and self.text(directive) == "#pragma" and arg is not None:
                arg_text = self.text(arg).strip()
                if arg_text.startswith(("unroll", "nounroll")):
                    unroll = arg_text
        start, end = node.start_byte, node.end_byte
        assigned = frozenset(name for name, pos in sites if start <= pos < end)
        if var:
            assigned |= {var}
        return Loop(
            id=lid,
            kind=kind,
            var=var,
            init=init_text,
            init_value=init_v,
            bound=bound_text,
            bound_value=bound_v,
            compare=compare,
            condition=" ".join(self.text(cond).strip().removeprefix("(").removesuffix(")").split()) if cond else None,
            step=step_text if step_op in (None, "+=", "-=") else f"{step_op} {step_text}",
            step_value=step_v if step_op in ("+=", None) else (-step_v if step_op == "-=" and step_v else None),
            trip_count=trip,
            unroll=unroll,
            span=self.rel(node),
            header_span=(node.start_byte - self.base, header_end - self.base),
            body_span=self.rel(body) if body is not None else self.rel(node),
            parent=parent,
            depth=depth,
            assigned=assigned,
            bound_uniform=not cond_val.thread_dependent and cond_val.kind is not Kind.UNKNOWN,
            thread_dependent=cond_val.thread_dependent,
        )

    def _branches(self, ifs: list[Node], returns: list[Node]) -> list[Branch]:
        out: list[Branch] = []
        for node in ifs:
            cond = node.child_by_field_name("condition")
            val = self.ev.eval(cond)
            has_return = any(node.start_byte <= r.start_byte < node.end_byte for r in returns)
            out.append(
                Branch(
                    condition=" ".join(self.text(cond).strip().removeprefix("(").removesuffix(")").split()),
                    thread_dependent=val.thread_dependent,
                    lane_pattern=self._lane_pattern(cond) if val.lane_dependent else None,
                    span=self.rel(node),
                    condition_span=self.rel(cond) if cond is not None else self.rel(node),
                    has_return=has_return,
                )
            )
        return out

    def _lane_pattern(self, cond: Node | None) -> str | None:
        """Describe a condition that splits the lanes of every warp (e.g. `threadIdx.x % 2 == 0`)."""
        if cond is None:
            return None
        stack = [cond]
        while stack:
            n = stack.pop()
            if n.type == "binary_expression":
                op = n.child_by_field_name("operator")
                if op is not None and op.type in ("%", "&"):
                    left = self.ev.eval(n.child_by_field_name("left"))
                    right = self.ev.const_int(n.child_by_field_name("right"))
                    period = (right if op.type == "%" else right + 1) if right is not None else 0
                    if left.kind is Kind.AFFINE and 1 < period < 32:
                        return f"lanes alternate with period {period}"
            stack.extend(n.named_children)
        return None

    def _resolve(self, node: Node) -> tuple[str, str, MemorySpace, str | None, bool, Node | None]:
        """Return (array text, base name, space, element type, vector cast, alias offset) of an array expression."""
        cast_type: str | None = None
        offset: Node | None = None
        array_text = self.text(node)
        for _ in range(8):
            t = node.type
            if t == "parenthesized_expression":
                inner = _named(node)
                if not inner:
                    break
                node = inner[0]
            elif t == "cast_expression":
                cast_type = self.text(node.child_by_field_name("type")).replace("*", "").replace("const", "").strip()
                node = node.child_by_field_name("value")
            elif t == "call_expression":
                fn = node.child_by_field_name("function")
                if (
                    fn is not None
                    and fn.type == "template_function"
                    and self.text(fn.child_by_field_name("name")) in ("reinterpret_cast", "static_cast", "const_cast")
                ):
                    targs = self.text(fn.child_by_field_name("arguments"))
                    cast_type = targs.strip("<>").replace("*", "").replace("const", "").strip()
                    args = _named(node.child_by_field_name("arguments"))
                    if not args:
                        break
                    node = args[0]
                else:
                    break
            elif t == "binary_expression" and node.child_by_field_name("operator").type in ("+", "-"):
                offset = node.child_by_field_name("right")
                node = node.child_by_field_name("left")
            else:
                break
            if node is None:
                return array_text, array_text, MemorySpace.UNKNOWN, cast_type, cast_type is not None, offset
        if node is None or node.type != "identifier":
            return array_text, array_text, MemorySpace.UNKNOWN, cast_type, cast_type is not None, offset
        name = self.text(node)
        vector = cast_type is not None
        seen: set[str] = set()
        while name in self.aliases and name not in seen:
            seen.add(name)
            base, alias_off, alias_type = self.aliases[name]
            if alias_off is not None:
                offset = alias_off if offset is None else offset
            if alias_type and cast_type is None:
                cast_type = alias_type
            name = base
        if name in self.shared:
            elem = cast_type or self.shared[name].element_type
            return (
                array_text,
                name,
                MemorySpace.SHARED,
                elem,
                vector or (cast_type is not None and cast_type != self.shared[name].element_type),
                offset,
            )
        if name in self.local_arrays:
            return array_text, name, MemorySpace.LOCAL, self.local_arrays[name], False, offset
        if name in self.ctx.constant_arrays:
            return array_text, name, MemorySpace.CONSTANT, cast_type, vector, offset
        if name in self.ctx.device_arrays:
            return array_text, name, MemorySpace.GLOBAL, cast_type, vector, offset
        param = next((p for p in self._params if p.name == name), None)
        if param is not None and param.pointer_depth > 0:
            elem = cast_type or param.base_type
            is_vec = cast_type is not None and type_size(cast_type) != type_size(param.base_type)
            # Pointer parameters of kernels point to global memory; a device helper may be handed shared memory.
            space = MemorySpace.GLOBAL if self.is_kernel else MemorySpace.UNKNOWN
            return array_text, name, space, elem, is_vec, offset
        return array_text, name, MemorySpace.UNKNOWN, cast_type, vector, offset

    def _accesses(self, subs: list[Node], ptrs: list[Node], loops: list[Loop], branches: list[Branch]) -> list[Access]:
        out: list[Access] = []
        thread_branches = [b.span for b in branches if b.thread_dependent]
        for node in subs:
            parent = node.parent
            if (
                parent is not None
                and parent.type == "subscript_expression"
                and parent.child_by_field_name("argument") == node
            ):
                continue
            chain: list[Node] = []
            root = node
            while root is not None and root.type == "subscript_expression":
                idx = root.child_by_field_name("indices")
                named = _named(idx) if idx is not None else []
                chain.append(named[0] if named else idx)
                root = root.child_by_field_name("argument")
            if root is None:
                continue
            chain.reverse()
            acc = self._access(node, root, chain, loops, thread_branches)
            if acc is not None:
                out.append(acc)
        for node in ptrs:
            op = node.child_by_field_name("operator")
            if op is None or op.type != "*":
                continue
            arg = node.child_by_field_name("argument")
            if arg is None:
                continue
            inner = arg
            while inner.type == "parenthesized_expression" and _named(inner):
                inner = _named(inner)[0]
            if inner.type == "binary_expression" and inner.child_by_field_name("operator").type == "+":
                root, index = inner.child_by_field_name("left"), inner.child_by_field_name("right")
            elif inner.type == "identifier":
                root, index = inner, None
            else:
                continue
            if root is None:
                continue
            acc = self._access(node, root, [index], loops, thread_branches)
            if acc is not None:
                out.append(acc)
        out.sort(key=lambda a: a.span)
        return out

    def _access(
        self, node: Node, root: Node, chain: list[Node | None], loops: list[Loop], thread_branches: list[Span]
    ) -> Access | None:
        array_text, base, space, elem, vector, offset = self._resolve(root)
        if (
            space is MemorySpace.UNKNOWN
            and base not in self.locals
            and base not in self.scalars
            and root.type != "identifier"
        ):
            return None
        kind = self._access_kind(node)
        via_ldg = False
        p = node.parent
        hops = 0
        while p is not None and hops < 3:
            if p.type == "call_expression":
                fn = p.child_by_field_name("function")
                if fn is not None and self.text(fn) in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu"):
                    via_ldg = True
                    kind = AccessKind.READ
                break
            p = p.parent
            hops += 1
        values = [self.ev.eval(c) if c is not None else Value(Kind.CONST, const=0) for c in chain]
        if offset is not None and values:
            off = self.ev.eval(offset)
            values[-1] = _add_values(values[-1], off)
        dims: tuple[int | None, ...] = ()
        dim_texts: tuple[str, ...] = ()
        if space is MemorySpace.SHARED and base in self.shared:
            dims = self.shared[base].dim_values
            dim_texts = self.shared[base].dims
        combined = _linearize(values, dims, dim_texts)
        pattern, stride, stride_text = _classify(combined)
        width = type_size(elem) if elem else None
        start = node.start_byte
        loop_ids = tuple(lp.id for lp in loops if lp.span[0] + self.base <= start < lp.span[1] + self.base)
        idx_first = chain[0] if chain and chain[0] is not None else node
        idx_last = chain[-1] if chain and chain[-1] is not None else node
        in_branch = any(s[0] + self.base <= start < s[1] + self.base for s in thread_branches)
        deps = frozenset().union(*(v.deps for v in values)) if values else frozenset()
        return Access(
            array=array_text,
            base=base,
            space=space,
            kind=kind,
            index=", ".join(self.text(c) if c is not None else "0" for c in chain),
            indices=tuple(self.text(c) if c is not None else "0" for c in chain),
            pattern=pattern,
            stride=stride,
            stride_text=stride_text,
            width=width,
            element_type=elem,
            vector_cast=vector,
            loops=loop_ids,
            index_names=deps,
            span=self.rel(node),
            index_span=(idx_first.start_byte - self.base, idx_last.end_byte - self.base),
            in_thread_branch=in_branch,
            via_ldg=via_ldg,
        )

    def _access_kind(self, node: Node) -> AccessKind:
        child = node
        parent = node.parent
        while parent is not None and parent.type in ("field_expression", "parenthesized_expression"):
            child, parent = parent, parent.parent
        if parent is None:
            return AccessKind.READ
        t = parent.type
        if t == "assignment_expression" and parent.child_by_field_name("left") == child:
            op = parent.child_by_field_name("operator")
            return AccessKind.WRITE if op is not None and op.type == "=" else AccessKind.READ_WRITE
        if t == "update_expression":
            return AccessKind.READ_WRITE
        if t == "pointer_expression" and parent.child_by_field_name("operator").type == "&":
            gp = parent.parent
            if gp is not None and gp.type == "argument_list":
                call = gp.parent
                fn = call.child_by_field_name("function") if call is not None else None
                fname = self.text(fn).rsplit("::", 1)[-1] if fn is not None else ""
                args = _named(gp)
                if fname in ATOMIC_CALLS and args and args[0] == parent:
                    return AccessKind.ATOMIC
                if fname in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu"):
                    return AccessKind.READ
            return AccessKind.ADDRESS
        return AccessKind.READ

    def _calls(
        self, nodes: list[Node], loops: list[Loop], guards: list[tuple[Span, str]], caller: str
    ) -> tuple[list[Call], list[Launch]]:
        calls: list[Call] = []
        launches: list[Launch] = []
        for node in nodes:
            fn = node.child_by_field_name("function")
            if fn is None:
                continue
            config = next((c for c in node.children if c.type == "kernel_call_syntax"), None)
            if config is not None:
                launch = self._launch(node, fn, config, caller)
                if launch is not None:
                    launches.append(launch)
                continue
            if fn.type == "field_expression":
                name = self.text(fn.child_by_field_name("field"))
                method = True
            elif fn.type == "template_function":
                name = self.text(fn.child_by_field_name("name")).rsplit("::", 1)[-1]
                method = False
            else:
                name = self.text(fn).rsplit("::", 1)[-1]
                method = False
            if (
                name in SYNC_CALLS
                or (method and name in CG_SYNC_METHODS)
                or (name in ("sync", "barrier_sync") and not method)
            ):
                category = "sync"
            elif name in ATOMIC_CALLS:
                category = "atomic"
            elif name in WARP_CALLS or (method and name in CG_WARP_METHODS):
                category = "warp"
            elif name in ASYNC_CALLS:
                category = "async"
            elif name in MATH_CALLS:
                category = "math"
            else:
                category = "call"
            args_node = node.child_by_field_name("arguments")
            args = tuple(self.text(a) for a in _named(args_node)) if args_node is not None else ()
            start = node.start_byte
            loop_ids = tuple(lp.id for lp in loops if lp.span[0] + self.base <= start < lp.span[1] + self.base)
            guard = None
            for span, cond in guards:
                if span[0] + self.base <= start < span[1] + self.base:
                    guard = cond
            if category == "sync" and method:
                name = f"{self.text(fn.child_by_field_name('argument'))}.{name}"
            calls.append(Call(name, category, args, self.rel(node), loop_ids, guard))
        return calls, launches

    def _launch(self, node: Node, fn: Node, config: Node, caller: str) -> Launch | None:
        targs: tuple[str, ...] = ()
        tvals: tuple[str, ...] = ()
        if fn.type == "template_function":
            name_node = fn.child_by_field_name("name")
            ta = fn.child_by_field_name("arguments")
            arg_nodes = _named(ta) if ta is not None else []
            targs = tuple(self.text(a) for a in arg_nodes)
            vals = []
            for a in arg_nodes:
                v = self.ev.const_int(a)
                vals.append(str(v) if v is not None else self.text(a))
            tvals = tuple(vals)
        else:
            name_node = fn
        if name_node is None:
            return None
        kernel = self.text(name_node).rsplit("::", 1)[-1]
        parts = _named(config)
        if len(parts) < 2:
            return None
        args_node = node.child_by_field_name("arguments")
        args = tuple(self.text(a) for a in _named(args_node)) if args_node is not None else ()
        smem = parts[2] if len(parts) > 2 else None
        return Launch(
            kernel=kernel,
            template_args=targs,
            template_values=tvals,
            grid=self.text(parts[0]),
            block=self.text(parts[1]),
            smem=self.text(smem) if smem is not None else None,
            stream=self.text(parts[3]) if len(parts) > 3 else None,
            grid_value=self._dims(parts[0]),
            block_value=self._dims(parts[1]),
            smem_value=self.ev.const_int(smem) if smem is not None else 0,
            args=args,
            span=self.rel(node),
            name_span=self.rel(name_node),
            caller=caller,
        )

    def _dims(self, node: Node) -> tuple[int, ...] | None:
        """Return the constant value of a launch dimension (an integer or a `dim3`), or None."""
        if node.type == "identifier" and self.text(node) in self.dim3:
            vals = [self.ev.const_int(a) for a in self.dim3[self.text(node)]]
        elif node.type == "call_expression" and self.text(node.child_by_field_name("function")) == "dim3":
            vals = [self.ev.const_int(a) for a in _named(node.child_by_field_name("arguments"))]
        elif node.type in ("initializer_list", "compound_literal_expression"):
            vals = [self.ev.const_int(a) for a in _named(node)]
        else:
            vals = [self.ev.const_int(node)]
        if not vals or any(v is None for v in vals):
            return None
        out = tuple(v for v in vals if v is not None)
        return out + (1,) * (3 - len(out)) if len(out) < 3 else out


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
    if v.kind <= Kind.UNIFORM:
        return AccessPattern.UNIFORM, Fraction(0), None
    if v.kind is Kind.AFFINE:
        if isinstance(v.coef, Fraction):
            if abs(v.coef) <= 1:
                return AccessPattern.CONTIGUOUS, v.coef, None
            return AccessPattern.STRIDED, v.coef, None
        return AccessPattern.STRIDED, None, str(v.coef)
    if v.kind is Kind.INDIRECT:
        return AccessPattern.INDIRECT, None, None
    return AccessPattern.UNKNOWN, None, None


def _trip_count(init: int | None, bound: int | None, cmp: str | None, op: str | None, step: int | None) -> int | None:
    """Return the constant trip count of a counted loop, or None."""
    if init is None or bound is None or cmp is None or op is None or step is None or step == 0:
        return None
    if op in ("+=", "-="):
        s = step if op == "+=" else -step
        if cmp == "<" and s > 0:
            return max(0, -(-(bound - init) // s))
        if cmp == "<=" and s > 0:
            return max(0, (bound - init) // s + 1)
        if cmp == ">" and s < 0:
            return max(0, -(-(init - bound) // -s))
        if cmp == ">=" and s < 0:
            return max(0, (init - bound) // -s + 1)
        if cmp == "!=" and s != 0 and (bound - init) % s == 0 and (bound - init) // s >= 0:
            return (bound - init) // s
        return None
    if op in ("*=", "<<=", "/=", ">>="):
        x, count = init, 0
        while count <= 64:
            ok = {"<": x < bound, "<=": x <= bound, ">": x > bound, ">=": x >= bound, "!=": x != bound}.get(cmp)
            if ok is None:
                return None
            if not ok:
                return count
            count += 1
            if op == "*=":
                x *= step
            elif op == "<<=":
                x <<= step
            elif op == "/=":
                x = int(x / step)
            else:
                x >>= step
        return None
    return None


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
    for d in sorted(decls, key=lambda n: n.start_byte):
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
    ctx = FileContext(tuple(sorted(consts.items())), frozenset(constant_arrays), frozenset(device_arrays))
    return ctx, frozenset(macros), functions


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
    if _has_token(fn, ("__global__",)):
        return FunctionKind.KERNEL
    dev, host = _has_token(fn, ("__device__",)), _has_token(fn, ("__host__",))
    if dev:
        return FunctionKind.HOST_DEVICE if host else FunctionKind.DEVICE
    return FunctionKind.HOST


def analyze_document(doc: CudaDocument) -> FileModel:
    """Build the model of a document, reusing the analysis of functions whose text did not change.

    Host functions are analysed first: their launch sites tell which template arguments each kernel is
    instantiated with, and when every launch in the file agrees, the kernel is analysed with those values
    (so `tile[TILE][TILE + 1]` has known dimensions).
    """
    src = doc.data
    root = doc.tree.root_node
    ctx, macros, functions = _file_context(root, src)
    ctx_key = repr(ctx).encode()
    old = doc.cache
    new_cache: dict[bytes, Any] = {}
    kinds = [_kind_of(fn) for fn, _ in functions]
    results: list[Function | None] = [None] * len(functions)

    def build(i: int, binding: tuple[str, ...]) -> None:
        fn_node, template = functions[i]
        outer_start = template.start_byte if template is not None else fn_node.start_byte
        key = b"%d\0%s\0%s\0%s" % (
            fn_node.start_byte - outer_start,
            ctx_key,
            "\1".join(binding).encode(),
            src[outer_start : fn_node.end_byte],
        )
        cached = old.get(key) or new_cache.get(key)
        if cached is None:
            try:
                builder = _FunctionBuilder(fn_node, template, src, ctx)
                builder.has_launch = src.find(b"<<<", fn_node.start_byte, fn_node.end_byte) >= 0
                builder.binding = binding
                cached = builder.build()
            except Exception:  # Analysis never raises on source text; one bad function is skipped and logged.
                log.exception("could not analyse the function at byte %d of %s", fn_node.start_byte, doc.path)
                return
        new_cache[key] = cached
        results[i] = (
            cached if cached.base == fn_node.start_byte else dataclasses.replace(cached, base=fn_node.start_byte)
        )

    for i, kind in enumerate(kinds):
        if kind is FunctionKind.HOST:
            build(i, ())
    instantiations: dict[str, set[tuple[str, ...]]] = {}
    for res in results:
        if res is not None:
            for launch in res.launches:
                instantiations.setdefault(launch.kernel, set()).add(launch.template_values)
    for i, kind in enumerate(kinds):
        if kind is FunctionKind.HOST:
            continue
        binding: tuple[str, ...] = ()
        if functions[i][1] is not None:
            name = _declarator_name(functions[i][0].child_by_field_name("declarator"), src)
            seen = instantiations.get(name or "", set())
            if len(seen) == 1:
                binding = next(iter(seen))
        build(i, binding)
    doc.cache = new_cache
    return FileModel(
        path=doc.path,
        functions=tuple(f for f in results if f is not None),
        syntax_problems=tuple(_syntax_problems(root, src)),
        constants=dict(ctx.consts),
        macros=macros,
        lines=doc.lines,
        text=src,
    )


def analyze_text(text: str | bytes, path: str = "<memory>") -> FileModel:
    """Parse and analyse one text from scratch."""
    return analyze_document(CudaDocument(path, text))


def line_index(text: bytes) -> LineIndex:
    """Return a line index for a text (re-exported for callers that hold only bytes)."""
    return LineIndex(text)
