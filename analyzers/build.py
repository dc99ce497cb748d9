"""Build the kernel model (`FileModel`) from a tree-sitter tree.

The file is cut into function definitions; each is analysed on its own by `_FunctionBuilder` with one query over
its subtree, and the result is kept in the document's cache under the function's text (plus the file-level
constants it may read). After an edit only the functions whose text changed are analysed again; the others are
reused with their base offset moved. Nothing here raises on any input: a construct that cannot be read is left
out of the model or classified `unknown`.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from bisect import bisect_left
from collections.abc import Callable
from fractions import Fraction
from operator import attrgetter, itemgetter
from typing import Any

from warpwise.analyzers.checkpoint import checkpoint
from warpwise.analyzers.cuda_api import (
    ASYNC_CALLS,
    ATOMIC_CALLS,
    CG_SYNC_METHODS,
    CG_WARP_METHODS,
    MATH_CALLS,
    SYNC_CALLS,
    WARP_CALLS,
)
from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.expr.values import (
    TYPE_SIZES,
    UNKNOWN,
    Evaluator,
    Kind,
    Value,
    join,
    parse_int_literal,
    type_size,
)
from warpwise.analyzers.macros import MacroView, view_macros
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
from warpwise.analyzers.parse import CudaDocument, captures, language, query

log = logging.getLogger(__name__)
FUNCTION_NODE_BUDGET = 16_000
"""Functions with more syntax nodes are modelled without their bodies (the analysis of one expression of a few
thousand terms grows faster than linearly); the model says so on the function's name."""
Node = Any

_LAUNCH_QUERY = """
(call_expression (kernel_call_syntax)) @launch
"""

# Assignments and updates matter only where they define a local name, and pointer expressions only where they
# dereference; the patterns say so, which keeps the other nodes out of Python altogether.
_HOST_QUERY = """
(declaration) @decl
(assignment_expression left: (identifier)) @assign
"""

_BODY_QUERY = """
(declaration) @decl
(subscript_expression) @sub
(pointer_expression operator: "*") @ptr
(call_expression) @call
(for_statement) @loop
(while_statement) @loop
(do_statement) @loop
(for_range_loop) @loop
(if_statement) @if
(assignment_expression left: (identifier)) @assign
(update_expression argument: (identifier)) @update
(return_statement) @return
"""

KNOWN_GAP_TOKENS = ("__device__", "__host__", "__cluster_dims__", "__align__", "__grid_constant__")
_NUMERIC_TEXT = re.compile(r"^[\s()0-9xXa-fA-FuUlL+\-*/%<>&|^~]*$")


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


_Def = tuple[str, Node | None, int]
"""One definition of a local name: the operator (`=`, `+=`, `decl`, ...), its value node and its byte offset."""


def _field_id(name: str) -> int:
    """Return the grammar's id of a field name (reading a child by id skips a name look-up per call)."""
    fid = language().field_id_for_name(name)
    if fid is None:
        raise LookupError(f"tree-sitter-cuda has no field `{name}`")
    return fid


_F_ALTERNATIVE = _field_id("alternative")
_F_ARGUMENT = _field_id("argument")
_F_ARGUMENTS = _field_id("arguments")
_F_BODY = _field_id("body")
_F_CONDITION = _field_id("condition")
_F_DECLARATOR = _field_id("declarator")
_F_DEFAULT_TYPE = _field_id("default_type")
_F_DEFAULT_VALUE = _field_id("default_value")
_F_DIRECTIVE = _field_id("directive")
_F_FIELD = _field_id("field")
_F_FUNCTION = _field_id("function")
_F_INDICES = _field_id("indices")
_F_INITIALIZER = _field_id("initializer")
_F_LEFT = _field_id("left")
_F_NAME = _field_id("name")
_F_OPERATOR = _field_id("operator")
_F_PARAMETERS = _field_id("parameters")
_F_RIGHT = _field_id("right")
_F_SIZE = _field_id("size")
_F_TYPE = _field_id("type")
_F_UPDATE = _field_id("update")
_F_VALUE = _field_id("value")

# Enum members looked up on their class cost a descriptor call each time in CPython 3.11; the hot paths below
# use these aliases, which are the very same members.
_CONST = Kind.CONST
_UNIFORM = Kind.UNIFORM
_AFFINE = Kind.AFFINE
_INDIRECT = Kind.INDIRECT
_UNKNOWN = Kind.UNKNOWN
_KERNEL = FunctionKind.KERNEL
_HOST = FunctionKind.HOST
_GLOBAL = MemorySpace.GLOBAL
_SHARED = MemorySpace.SHARED
_LOCAL = MemorySpace.LOCAL
_CONSTANT = MemorySpace.CONSTANT
_SPACE_UNKNOWN = MemorySpace.UNKNOWN
_READ = AccessKind.READ
_WRITE = AccessKind.WRITE
_READ_WRITE = AccessKind.READ_WRITE
_ATOMIC = AccessKind.ATOMIC
_ADDRESS = AccessKind.ADDRESS
_PATTERN_CONTIGUOUS = AccessPattern.CONTIGUOUS
_PATTERN_STRIDED = AccessPattern.STRIDED
_PATTERN_UNIFORM = AccessPattern.UNIFORM
_PATTERN_INDIRECT = AccessPattern.INDIRECT
_PATTERN_UNKNOWN = AccessPattern.UNKNOWN
_new = tuple.__new__
_ZERO_VALUE = Value(Kind.CONST, const=0)
_ONE_VALUE = Value(Kind.CONST, const=1)
_FRACTION_ZERO = Fraction(0)
_START = attrgetter("start_byte")
_SPAN = attrgetter("span")
_FIRST = itemgetter(0)
_LDG_NAMES = frozenset({"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu"})
_CAST_NAMES = frozenset({"reinterpret_cast", "static_cast", "const_cast"})
_RESTRICT_WORDS = frozenset({"__restrict__", "__restrict", "restrict"})
_QUALIFIER_TYPES = frozenset({"type_qualifier", "storage_class_specifier", "attribute_specifier"})
_DECLARATOR_WRAPPERS = frozenset(
    {"array_declarator", "pointer_declarator", "reference_declarator", "parenthesized_declarator"}
)
_EXEC_SPACE_TOKENS = frozenset({"__global__", "__device__", "__host__"})
_LOOP_KINDS = {"for_statement": "for", "while_statement": "while", "do_statement": "do"}
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


_RELEASED = Evaluator(b"", lambda name: None, {}, set())
"""The evaluator a builder holds once released (it resolves no name)."""


def _texter(src: bytes, ascii_text: str | None) -> Callable[[Node], str]:
    """Return a function giving the source text of a node.

    When the whole file is ASCII, byte offsets are character offsets, so slicing the text decoded once gives
    exactly what decoding each node's bytes would.
    """
    if ascii_text is not None:

        def text(node: Node) -> str:
            return ascii_text[node.start_byte : node.end_byte]

    else:

        def text(node: Node) -> str:
            return src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    return text


class _FunctionBuilder:
    """Analyse one function definition into a `Function` with spans relative to its first byte.

    This runs for every function of a file on the first analysis, so it is written for CPython's speed: tree
    fields are read by id, node texts are sliced from a text decoded once per file, and the order in which
    expressions are evaluated is fixed (values of names are merged flow-insensitively and memoised, so the
    order is part of the result for self-referencing definitions).
    """

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

    # -- helpers -------------------------------------------------------------------------------------------
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

    # -- header --------------------------------------------------------------------------------------------
    def kind(self) -> FunctionKind:
        return self.fkind

    def template_params(self) -> tuple[TemplateParam, ...]:
        if self.template is None:
            return ()
        plist = self.template.child_by_field_id(_F_PARAMETERS)
        out: list[TemplateParam] = []
        for p in _named(plist) if plist is not None else []:
            t = p.type
            if t in (
                "type_parameter_declaration",
                "optional_type_parameter_declaration",
                "variadic_type_parameter_declaration",
            ):
                names = [c for c in p.named_children if c.type == "type_identifier"]
                name = self.text(p.child_by_field_id(_F_NAME) or (names[0] if names else None))
                default = p.child_by_field_id(_F_DEFAULT_TYPE)
                out.append(TemplateParam(name, "type", self.text(default) if default is not None else None, None))
            elif t in ("parameter_declaration", "optional_parameter_declaration"):
                name = _declarator_name(p.child_by_field_id(_F_DECLARATOR), self.src) or ""
                default = p.child_by_field_id(_F_DEFAULT_VALUE)
                value = self.ev.const_int(default) if default is not None else None
                out.append(TemplateParam(name, "value", self.text(default) if default is not None else None, value))
        for i, tp in enumerate(out):
            bound = self.binding[i] if i < len(self.binding) else None
            if tp.kind == "type":
                # A template parameter shadows a file-level alias of the same name.
                self.type_binding.pop(tp.name, None)
                self.file_types.pop(tp.name, None)
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
        if not self.binding:
            return ()
        names = [tp.name for tp in self._tparams]
        return tuple((names[i], arg) for i, arg in enumerate(self.binding) if i < len(names))

    def params(self, declarator: Node | None) -> tuple[Param, ...]:
        plist = declarator.child_by_field_id(_F_PARAMETERS) if declarator is not None else None
        if plist is None:
            return ()
        t = self.t
        base = self.base
        type_binding = self.type_binding
        scalars = self.scalars
        by_name = self._param_by_name
        out: list[Param] = []
        for p in plist.named_children:
            pt = p.type
            if pt != "parameter_declaration" and pt != "optional_parameter_declaration":
                continue
            type_node = p.child_by_field_id(_F_TYPE)
            base_type = t(type_node) if type_node is not None else ""
            if type_binding:
                base_type = type_binding.get(base_type, base_type)
            pointee_const = False
            for c in p.children:
                if c.type == "type_qualifier" and t(c) == "const":
                    pointee_const = True
                    break
            depth = 0
            restrict = False
            reference = False
            node = p.child_by_field_id(_F_DECLARATOR)
            name = ""
            while node is not None:
                nt = node.type
                if nt == "identifier":
                    name = t(node)
                    break
                if nt == "pointer_declarator":
                    depth += 1
                    for c in node.children:
                        if c.type == "type_qualifier" and t(c) in _RESTRICT_WORDS:
                            restrict = True
                elif nt == "reference_declarator":
                    reference = True
                elif nt == "array_declarator" or nt == "abstract_array_declarator":
                    depth += 1
                nxt = node.child_by_field_id(_F_DECLARATOR)
                if nxt is None:
                    named = [c for c in node.named_children if c.type != "type_qualifier"]
                    nxt = named[-1] if named else None
                node = nxt
            type_text = " ".join(t(p).split())
            if name:
                type_text = type_text.rsplit(name, 1)[0].strip() or type_text
            param = Param(
                len(out),
                name,
                type_text,
                base_type,
                depth,
                pointee_const,
                restrict,
                reference,
                (p.start_byte - base, p.end_byte - base),
            )
            out.append(param)
            by_name.setdefault(name, param)
            if name:
                scalars.add(name)
        return tuple(out)

    def launch_bounds(self) -> tuple[str, ...] | None:
        for c in self.fn.children:
            if c.type == "launch_bounds":
                return tuple(self.text(a) for a in _named(c))
        return None

    # -- body ----------------------------------------------------------------------------------------------
    def build(self, shallow: bool = False) -> Function:
        """Analyse the function; `shallow` keeps its signature and launches nothing of its body (over budget)."""
        fn = self.fn
        kind = self.fkind
        self.is_kernel = kind is _KERNEL
        declarator = fn.child_by_field_id(_F_DECLARATOR)
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_id(_F_DECLARATOR)
        name_node = declarator.child_by_field_id(_F_DECLARATOR) if declarator is not None else None
        name = _declarator_name(name_node, self.src) or "<anonymous>"
        if name_node is not None and name_node.type == "qualified_identifier":
            inner = name_node
            while inner is not None and inner.type == "qualified_identifier":
                inner = inner.child_by_field_id(_F_NAME)
            name_span = self.rel(inner) if inner is not None else self.rel(name_node)
        else:
            name_span = self.rel(name_node) if name_node is not None else (0, 0)
        tparams = self.template_params()
        self._tparams = tparams
        params = self.params(declarator)
        self._params = params
        body = fn.child_by_field_id(_F_BODY)
        sig_end = body.start_byte if body is not None else fn.end_byte
        signature = " ".join(self.src[fn.start_byte : sig_end].decode("utf-8", "replace").split())
        if body is None or shallow:
            return Function(
                name,
                kind,
                self.base,
                fn.end_byte - fn.start_byte,
                name_span,
                self.rel(body) if body is not None else None,
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
        if kind is _HOST:
            return self._host(name, name_span, body, signature, params)
        caps = {k: sorted(v, key=_START) for k, v in captures(query(_BODY_QUERY), body).items()}
        if fn.has_error:
            nested = [
                (n.start_byte, n.end_byte) for n in captures(query("(function_definition) @fn"), body).get("fn", [])
            ]
            if nested:
                caps = {k: [n for n in v if not any(a <= n.start_byte < b for a, b in nested)] for k, v in caps.items()}
        t = self.t
        define = self._define
        for d in caps.get("decl", ()):
            self._declaration(d)
        for a in caps.get("assign", ()):
            left = a.child_by_field_id(_F_LEFT)
            if left is not None and left.type == "identifier":
                op = a.child_by_field_id(_F_OPERATOR)
                op_t = op.type if op is not None else "="
                right = a.child_by_field_id(_F_RIGHT)
                lname = t(left)
                define(lname, op_t, right, a.start_byte)
                if op is not None and op_t == "=":
                    self._maybe_alias(lname, right, None)
        for u in caps.get("update", ()):
            arg = u.child_by_field_id(_F_ARGUMENT)
            if arg is not None and arg.type == "identifier":
                op = u.child_by_field_id(_F_OPERATOR)
                define(t(arg), op.type if op is not None else "++", None, u.start_byte)
        self.ev.seal(self.visiting)
        const_int = self.ev.const_int
        for sname, stype, dims, is_extern, decl_node, sname_node in self._pending_shared:
            stype = self.type_binding.get(stype, stype)
            self.shared[sname] = SharedArray(
                sname,
                stype,
                type_size(stype),
                tuple(t(x) if x is not None else "" for x in dims),
                tuple(const_int(x) if x is not None else None for x in dims),
                is_extern or any(x is None for x in dims),
                self.rel(decl_node),
                self.rel(sname_node),
            )
        loops = self._loops(caps.get("loop", []))
        branches = self._branches(caps.get("if", []), caps.get("return", []))
        thread_guards = [(b.span, b.condition) for b in branches if b.thread_dependent] + [
            (lp.span, lp.condition or lp.var or "loop condition") for lp in loops if lp.thread_dependent
        ]
        call_nodes = caps.get("call", [])
        self._ldg_marked = self._under_ldg(call_nodes)
        accesses = self._accesses(caps.get("sub", []), caps.get("ptr", []), loops, branches)
        calls, launches = self._calls(call_nodes, loops, thread_guards, name)
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

    def _launch_nodes(self, body: Node) -> list[Node]:
        """Return the launch expressions `k<<<...>>>(...)` in a host body, in document order.

        In a body without syntax errors every launch configuration starts with a real `<<<` token, so the
        launches are found from the occurrences of `<<<` in the text (a few tree look-ups) rather than by a
        query over the whole body; a body with errors is queried.
        """
        if self.fn.has_error:
            return sorted(captures(query(_LAUNCH_QUERY), body).get("launch", []), key=_START)
        src = self.src
        end = body.end_byte
        out: list[Node] = []
        seen: set[int] = set()
        pos = src.find(b"<<<", body.start_byte, end)
        while pos >= 0:
            tok = body.descendant_for_byte_range(pos, pos + 3)
            if tok is not None and tok.type == "<<<" and tok.start_byte == pos:
                config = tok.parent
                if config is not None and config.type == "kernel_call_syntax":
                    call = config.parent
                    if call is not None and call.type == "call_expression" and call.id not in seen:
                        seen.add(call.id)
                        out.append(call)
            pos = src.find(b"<<<", pos + 1, end)
        out.sort(key=_START)
        return out

    def _host(self, name: str, name_span: Span, body: Node, signature: str, params: tuple[Param, ...]) -> Function:
        """Analyse host code for its launch sites only (and the local constants their geometry reads)."""
        launch_nodes = self._launch_nodes(body) if self.has_launch else []
        launches: list[Launch] = []
        if launch_nodes:
            caps = {k: sorted(v, key=_START) for k, v in captures(query(_HOST_QUERY), body).items()}
            for d in caps.get("decl", ()):
                self._declaration(d)
            t = self.t
            for a in caps.get("assign", ()):
                left = a.child_by_field_id(_F_LEFT)
                if left is not None and left.type == "identifier":
                    op = a.child_by_field_id(_F_OPERATOR)
                    self._define(
                        t(left),
                        op.type if op is not None else "=",
                        a.child_by_field_id(_F_RIGHT),
                        a.start_byte,
                    )
            self.ev.seal(self.visiting)
            for node in launch_nodes:
                fn = node.child_by_field_id(_F_FUNCTION)
                config = None
                for c in node.children:
                    if c.type == "kernel_call_syntax":
                        config = c
                        break
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
        t = self.t
        is_shared = False
        is_extern = False
        for c in d.children:
            ct = c.type
            if ct == "__shared__":
                is_shared = True
            elif ct in _QUALIFIER_TYPES:
                for g in c.children:
                    if g.type == "__shared__":
                        is_shared = True
                        break
                if ct == "storage_class_specifier" and t(c) == "extern":
                    is_extern = True
        type_node = d.child_by_field_id(_F_TYPE)
        type_text = t(type_node) if type_node is not None else ""
        if type_text in self.file_types:
            # File-level aliases are resolved; template parameters keep their names (code is generated from them).
            type_text = self.file_types[type_text]
        for decl in d.children_by_field_id(_F_DECLARATOR):
            node = decl
            value: Node | None = None
            if node.type == "init_declarator":
                value = node.child_by_field_id(_F_VALUE)
                node = node.child_by_field_id(_F_DECLARATOR)
            dims: list[Node | None] = []
            depth = 0
            while node is not None:
                nt = node.type
                if nt not in _DECLARATOR_WRAPPERS:
                    break
                if nt == "array_declarator":
                    dims.append(node.child_by_field_id(_F_SIZE))
                elif nt == "pointer_declarator":
                    depth += 1
                nxt = node.child_by_field_id(_F_DECLARATOR)
                if nxt is None:
                    named = _named(node)
                    nxt = named[-1] if named else None
                node = nxt
            if node is None:
                continue
            nt = node.type
            if nt == "function_declarator" and (type_text == "dim3" or type_text == "uint3"):
                # `dim3 block(TILE, ROWS);` parses as a function declaration; read it as the constructor call.
                inner = node.child_by_field_id(_F_DECLARATOR)
                plist = node.child_by_field_id(_F_PARAMETERS)
                if inner is not None and plist is not None:
                    self.dim3[t(inner)] = _named(plist)
                    self.locals[t(inner)] = type_text
                continue
            if nt != "identifier":
                continue
            name = t(node)
            if dims:
                dims.reverse()
            if is_shared:
                self._pending_shared.append((name, type_text, dims, is_extern, d, node))
                continue
            if dims:
                self.locals[name] = type_text + "*" * depth + "".join(f"[{t(x)}]" for x in dims if x is not None)
                self.local_arrays[name] = type_text
                continue
            self.locals[name] = type_text + "*" * depth if depth else type_text
            if value is not None:
                vt = value.type
                if vt == "argument_list" or vt == "initializer_list":
                    if type_text == "dim3" or type_text == "uint3":
                        self.dim3[name] = _named(value)
                        continue
                    args = _named(value)
                    value = args[0] if len(args) == 1 else None
                    if vt == "argument_list" and value is not None and value.type == "initializer_list":
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
            if t == "identifier":
                base = self.t(node)
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
            if t == "parenthesized_expression":
                inner = _named(node)
                node = inner[0] if inner else None
            elif t == "cast_expression":
                cast_type = self.text(node.child_by_field_id(_F_TYPE)).replace("*", "").replace("const", "").strip()
                node = node.child_by_field_id(_F_VALUE)
            elif t == "call_expression":
                fn = node.child_by_field_id(_F_FUNCTION)
                if (
                    fn is not None
                    and fn.type == "template_function"
                    and self.text(fn.child_by_field_id(_F_NAME)) in _CAST_NAMES
                ):
                    targs = fn.child_by_field_id(_F_ARGUMENTS)
                    cast_type = self.text(targs).strip("<>").replace("*", "").replace("const", "").strip()
                    args = _named(node.child_by_field_id(_F_ARGUMENTS))
                    node = args[0] if args else None
                else:
                    return
            elif t == "binary_expression":
                op = node.child_by_field_id(_F_OPERATOR)
                if op is None or op.type not in ("+", "-"):
                    return
                offset = node.child_by_field_id(_F_RIGHT)
                node = node.child_by_field_id(_F_LEFT)
            elif t == "pointer_expression" and node.child_by_field_id(_F_OPERATOR).type == "&":
                arg = node.child_by_field_id(_F_ARGUMENT)
                if arg is not None and arg.type == "subscript_expression":
                    idx = _named(arg.child_by_field_id(_F_INDICES))
                    offset = idx[0] if len(idx) == 1 else None
                    node = arg.child_by_field_id(_F_ARGUMENT)
                else:
                    return
            else:
                return

    def _loops(self, nodes: list[Node]) -> list[Loop]:
        out: list[Loop] = []
        if not nodes:
            return out
        nodes = sorted(nodes, key=_START)
        stack: list[int] = []
        ends: list[int] = []
        # Definition sites by position, so that the names assigned inside a loop are one slice away.
        sites = sorted([(d[2], name) for name, ds in self.defs.items() for d in ds], key=_FIRST)
        site_pos = [pos for pos, _ in sites]
        site_names = [name for _, name in sites]
        for node in nodes:
            end = node.end_byte
            while stack and not (ends[stack[-1]] >= end):
                stack.pop()
            parent = stack[-1] if stack else None
            lid = len(out)
            out.append(self._loop(node, lid, parent, len(stack), site_pos, site_names))
            ends.append(end)
            stack.append(lid)
        return out

    def _loop(
        self, node: Node, lid: int, parent: int | None, depth: int, site_pos: list[int], site_names: list[str]
    ) -> Loop:
        t = node.type
        text = self.t
        const_int = self.ev.const_int
        kind = _LOOP_KINDS.get(t, "range_for")
        var = init_text = bound_text = compare = step_text = None
        init_v = bound_v = step_v = None
        body = node.child_by_field_id(_F_BODY)
        cond = node.child_by_field_id(_F_CONDITION)
        header_end = body.start_byte if body is not None else node.end_byte
        step_op = None
        if t == "for_statement":
            init = node.child_by_field_id(_F_INITIALIZER)
            if init is not None:
                it = init.type
                if it == "declaration":
                    for decl in init.children_by_field_id(_F_DECLARATOR):
                        if decl.type == "init_declarator":
                            var = self.text(decl.child_by_field_id(_F_DECLARATOR))
                            val = decl.child_by_field_id(_F_VALUE)
                            init_text = self.text(val)
                            init_v = const_int(val)
                            break
                elif it == "assignment_expression":
                    var = self.text(init.child_by_field_id(_F_LEFT))
                    val = init.child_by_field_id(_F_RIGHT)
                    init_text = self.text(val)
                    init_v = const_int(val)
            if cond is not None and cond.type == "binary_expression":
                left = cond.child_by_field_id(_F_LEFT)
                right = cond.child_by_field_id(_F_RIGHT)
                op = cond.child_by_field_id(_F_OPERATOR)
                if left is not None and right is not None and op is not None:
                    if var is not None and text(left) == var:
                        compare, bound_node = op.type, right
                    elif var is not None and text(right) == var:
                        compare, bound_node = _FLIP.get(op.type, op.type), left
                    else:
                        compare, bound_node = op.type, right
                    bound_text = text(bound_node)
                    bound_v = const_int(bound_node)
            upd = node.child_by_field_id(_F_UPDATE)
            if upd is not None:
                ut = upd.type
                if ut == "update_expression":
                    op = upd.child_by_field_id(_F_OPERATOR)
                    step_op = "+=" if op is not None and op.type == "++" else "-="
                    step_text, step_v = "1", 1
                    var = var or self.text(upd.child_by_field_id(_F_ARGUMENT))
                elif ut == "assignment_expression":
                    op = upd.child_by_field_id(_F_OPERATOR)
                    step_op = op.type if op is not None else None
                    right = upd.child_by_field_id(_F_RIGHT)
                    step_text = self.text(right)
                    step_v = const_int(right)
                    var = var or self.text(upd.child_by_field_id(_F_LEFT))
        elif cond is not None:
            bound_text = text(cond).strip("()")
        trip = _trip_count(init_v, bound_v, compare, step_op, step_v)
        if var is not None:
            self.loop_var_of[lid] = var
        cond_val = self.ev.eval(cond) if cond is not None else _ONE_VALUE
        unroll = None
        prev = node.prev_named_sibling
        while prev is not None and prev.type == "comment":
            prev = prev.prev_named_sibling
        if prev is not None and prev.type == "preproc_call":
            directive = prev.child_by_field_id(_F_DIRECTIVE)
            arg = prev.child_by_field_id(_F_ARGUMENT)
            if directive is not None and text(directive) == "#pragma" and arg is not None:
                arg_text = text(arg).strip()
                if arg_text.startswith(("unroll", "nounroll")):
                    unroll = arg_text
        start, end = node.start_byte, node.end_byte
        assigned = frozenset(site_names[bisect_left(site_pos, start) : bisect_left(site_pos, end)])
        if var:
            assigned |= {var}
        base = self.base
        thread_dependent = cond_val.thread_dependent
        return Loop(
            lid,
            kind,
            var,
            init_text,
            init_v,
            bound_text,
            bound_v,
            compare,
            " ".join(text(cond).strip().removeprefix("(").removesuffix(")").split()) if cond else None,
            step_text if step_op in (None, "+=", "-=") else f"{step_op} {step_text}",
            step_v if step_op in ("+=", None) else (-step_v if step_op == "-=" and step_v else None),
            trip,
            unroll,
            (start - base, end - base),
            (start - base, header_end - base),
            (body.start_byte - base, body.end_byte - base) if body is not None else (start - base, end - base),
            parent,
            depth,
            assigned,
            not thread_dependent and cond_val.kind is not _UNKNOWN,
            thread_dependent,
        )

    def _branches(self, ifs: list[Node], returns: list[Node]) -> list[Branch]:
        out: list[Branch] = []
        if not ifs:
            return out
        ev = self.ev
        base = self.base
        return_starts = [r.start_byte for r in returns]
        nret = len(return_starts)
        for node in ifs:
            cond = node.child_by_field_id(_F_CONDITION)
            val = ev.eval(cond)
            start, end = node.start_byte, node.end_byte
            i = bisect_left(return_starts, start)
            has_return = i < nret and return_starts[i] < end
            out.append(
                Branch(
                    " ".join(self.text(cond).strip().removeprefix("(").removesuffix(")").split()),
                    val.thread_dependent,
                    self._lane_pattern(cond) if val.lane_dependent else None,
                    (start - base, end - base),
                    (cond.start_byte - base, cond.end_byte - base) if cond is not None else (start - base, end - base),
                    has_return,
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
                op = n.child_by_field_id(_F_OPERATOR)
                if op is not None and op.type in ("%", "&"):
                    left = self.ev.eval(n.child_by_field_id(_F_LEFT))
                    right = self.ev.const_int(n.child_by_field_id(_F_RIGHT))
                    period = (right if op.type == "%" else right + 1) if right is not None else 0
                    if left.kind is _AFFINE and 1 < period < 32:
                        return f"lanes alternate with period {period}"
            stack.extend(n.named_children)
        return None

    def _resolve(self, node: Node) -> tuple[str, str, MemorySpace, str | None, bool, Node | None]:
        """Return (array text, base name, space, element type, vector cast, alias offset) of an array expression."""
        cast_type: str | None = None
        offset: Node | None = None
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
                elif t == "cast_expression":
                    cast_type = self.text(node.child_by_field_id(_F_TYPE)).replace("*", "").replace("const", "").strip()
                    node = node.child_by_field_id(_F_VALUE)
                elif t == "call_expression":
                    fn = node.child_by_field_id(_F_FUNCTION)
                    if (
                        fn is not None
                        and fn.type == "template_function"
                        and self.text(fn.child_by_field_id(_F_NAME)) in _CAST_NAMES
                    ):
                        targs = self.text(fn.child_by_field_id(_F_ARGUMENTS))
                        cast_type = targs.strip("<>").replace("*", "").replace("const", "").strip()
                        args = _named(node.child_by_field_id(_F_ARGUMENTS))
                        if not args:
                            break
                        node = args[0]
                    else:
                        break
                elif t == "binary_expression" and node.child_by_field_id(_F_OPERATOR).type in ("+", "-"):
                    offset = node.child_by_field_id(_F_RIGHT)
                    node = node.child_by_field_id(_F_LEFT)
                else:
                    break
                if node is None:
                    return array_text, array_text, _SPACE_UNKNOWN, cast_type, cast_type is not None, offset
            if node is None or node.type != "identifier":
                return array_text, array_text, _SPACE_UNKNOWN, cast_type, cast_type is not None, offset
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
            )
        if name in self.local_arrays:
            return array_text, name, _LOCAL, self.local_arrays[name], False, offset
        if name in self.ctx.constant_arrays:
            return array_text, name, _CONSTANT, cast_type, vector, offset
        if name in self.ctx.device_arrays:
            return array_text, name, _GLOBAL, cast_type, vector, offset
        param = self._param_by_name.get(name)
        if param is not None and param.pointer_depth > 0:
            elem = cast_type or param.base_type
            is_vec = cast_type is not None and type_size(cast_type) != type_size(param.base_type)
            # Pointer parameters of kernels point to global memory; a device helper may be handed shared memory.
            space = _GLOBAL if self.is_kernel else _SPACE_UNKNOWN
            return array_text, name, space, elem, is_vec, offset
        return array_text, name, _SPACE_UNKNOWN, cast_type, vector, offset

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
        array_text, base, space, elem, vector, offset = self._resolve(root)
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

    def _calls(
        self, nodes: list[Node], loops: list[Loop], guards: list[tuple[Span, str]], caller: str
    ) -> tuple[list[Call], list[Launch]]:
        calls: list[Call] = []
        launches: list[Launch] = []
        if not nodes:
            return calls, launches
        t = self.t
        base = self.base
        loop_ranges = [(lp.span[0] + base, lp.span[1] + base, lp.id) for lp in loops]
        abs_guards = [(span[0] + base, span[1] + base, cond) for span, cond in guards]
        for node in nodes:
            fn = node.child_by_field_id(_F_FUNCTION)
            if fn is None:
                continue
            config = None
            for c in node.children:
                if c.type == "kernel_call_syntax":
                    config = c
                    break
            if config is not None:
                launch = self._launch(node, fn, config, caller)
                if launch is not None:
                    launches.append(launch)
                continue
            ft = fn.type
            if ft == "field_expression":
                name = self.text(fn.child_by_field_id(_F_FIELD))
                method = True
            elif ft == "template_function":
                name = self.text(fn.child_by_field_id(_F_NAME)).rsplit("::", 1)[-1]
                method = False
            else:
                name = t(fn).rsplit("::", 1)[-1]
                method = False
            if (
                name in SYNC_CALLS
                or (method and name in CG_SYNC_METHODS)
                or (not method and (name == "sync" or name == "barrier_sync"))
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
            args_node = node.child_by_field_id(_F_ARGUMENTS)
            if args_node is not None:
                args = tuple([t(a) for a in args_node.named_children if a.type != "comment"])
            else:
                args = ()
            start = node.start_byte
            loop_ids = tuple([lid for lo, hi, lid in loop_ranges if lo <= start < hi])
            guard = None
            for lo, hi, cond in abs_guards:
                if lo <= start < hi:
                    guard = cond
            if category == "sync" and method:
                name = f"{self.text(fn.child_by_field_id(_F_ARGUMENT))}.{name}"
            calls.append(Call(name, category, args, (start - base, node.end_byte - base), loop_ids, guard))
        return calls, launches

    def _launch(self, node: Node, fn: Node, config: Node, caller: str) -> Launch | None:
        targs: tuple[str, ...] = ()
        tvals: tuple[str, ...] = ()
        if fn.type == "template_function":
            name_node = fn.child_by_field_id(_F_NAME)
            ta = fn.child_by_field_id(_F_ARGUMENTS)
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
        args_node = node.child_by_field_id(_F_ARGUMENTS)
        args = tuple(self.text(a) for a in _named(args_node)) if args_node is not None else ()
        smem = parts[2] if len(parts) > 2 else None
        grid_value = self._dims(parts[0])
        block_value = self._dims(parts[1])
        return Launch(
            kernel,
            targs,
            tvals,
            self.text(parts[0]),
            self.text(parts[1]),
            self.text(smem) if smem is not None else None,
            self.text(parts[3]) if len(parts) > 3 else None,
            grid_value,
            block_value,
            self.ev.const_int(smem) if smem is not None else 0,
            args,
            self.rel(node),
            self.rel(name_node),
            caller,
        )

    def _dims(self, node: Node) -> tuple[int, ...] | None:
        """Return the constant value of a launch dimension (an integer or a `dim3`), or None."""
        const_int = self.ev.const_int
        t = node.type
        if t == "identifier" and self.t(node) in self.dim3:
            vals = [const_int(a) for a in self.dim3[self.t(node)]]
        elif t == "call_expression" and self.text(node.child_by_field_id(_F_FUNCTION)) == "dim3":
            vals = [const_int(a) for a in _named(node.child_by_field_id(_F_ARGUMENTS))]
        elif t in ("initializer_list", "compound_literal_expression"):
            vals = [const_int(a) for a in _named(node)]
        else:
            vals = [const_int(node)]
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


def analyze_document(doc: CudaDocument) -> FileModel:
    """Build the model of a document, reusing the analysis of functions whose text did not change.

    Host functions are analysed first: their launch sites tell which template arguments each kernel is
    instantiated with, and when every launch in the file agrees, the kernel is analysed with those values
    (so `tile[TILE][TILE + 1]` has known dimensions).
    """
    source = doc.source
    src = source.text
    root = source.tree.root_node
    ctx, macros, functions = _file_context(root, src)
    ctx_key = repr(ctx).encode()
    old = doc.cache
    new_cache: dict[bytes, Any] = {}
    kinds = [_kind_of(fn) for fn, _ in functions]
    results: list[Function | None] = [None] * len(functions)
    texter: list[Callable[[Node], str]] = []

    def text_of() -> Callable[[Node], str]:
        if not texter:
            texter.append(_texter(src, src.decode("ascii") if src.isascii() else None))
        return texter[0]

    budget: list[SyntaxProblem] = []

    def build(i: int, binding: tuple[str, ...]) -> None:
        checkpoint()
        fn_node, template = functions[i]
        nodes = fn_node.descendant_count
        shallow = nodes > FUNCTION_NODE_BUDGET
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
                builder = _FunctionBuilder(fn_node, template, src, ctx, text_of(), kinds[i])
                builder.has_launch = src.find(b"<<<", fn_node.start_byte, fn_node.end_byte) >= 0
                builder.binding = binding
                try:
                    cached = builder.build(shallow)
                finally:
                    builder.release()
            except Exception:  # Analysis never raises on source text; one bad function is skipped and logged.
                log.exception("could not analyse the function at byte %d of %s", fn_node.start_byte, doc.path)
                return
        new_cache[key] = cached
        if shallow:
            at = fn_node.start_byte + cached.name_span[0]
            span = (at, at + cached.name_span[1] - cached.name_span[0])
            budget.append(
                SyntaxProblem(
                    f"`{cached.name}` has {nodes:,} syntax nodes, over the analysis budget of "
                    f"{FUNCTION_NODE_BUDGET:,}: its body is not analysed, so no findings are reported inside it",
                    span,
                )
            )
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
        source=source,
        budget_problems=tuple(budget),
    )


def analyze_text(text: str | bytes, path: str = "<memory>") -> FileModel:
    """Parse and analyse one text from scratch (one parse: the model holds the tree)."""
    return analyze_document(CudaDocument(path, text))


def line_index(text: bytes) -> LineIndex:
    """Return a line index for a text (re-exported for callers that hold only bytes)."""
    return LineIndex(text)
