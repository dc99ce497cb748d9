"""Analyse one function definition into a `Function`: the walk over its body that the builder's parts read.

One query over the function's subtree captures its declarations, accesses, calls, loops, branches and
assignments; the parts (`build_signature`, `build_declarations`, `build_control`, `build_accesses`,
`build_calls`) turn them into the model's values. Host functions are read for their launch sites only.
"""

from __future__ import annotations

from warpwise.analyzers.build_accesses import _AccessAnalysis
from warpwise.analyzers.build_calls import _CallAnalysis
from warpwise.analyzers.build_control import _ControlFlowAnalysis
from warpwise.analyzers.build_declarations import _DeclarationAnalysis
from warpwise.analyzers.build_signature import _SignatureAnalysis
from warpwise.analyzers.build_syntax import (
    _F_ARGUMENT,
    _F_BODY,
    _F_DECLARATOR,
    _F_FUNCTION,
    _F_LEFT,
    _F_NAME,
    _F_OPERATOR,
    _F_RIGHT,
    _HOST,
    _KERNEL,
    _START,
    Node,
    _declarator_name,
)
from warpwise.analyzers.expr.values import type_size
from warpwise.analyzers.model import Function, FunctionKind, Launch, Param, SharedArray, Span
from warpwise.analyzers.parse import captures, query

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


class _FunctionBuilder(_SignatureAnalysis, _DeclarationAnalysis, _ControlFlowAnalysis, _AccessAnalysis, _CallAnalysis):
    """Analyse one function definition into a `Function` with spans relative to its first byte.

    This runs for every function of a file on the first analysis, so it is written for CPython's speed: tree
    fields are read by id, node texts are sliced from a text decoded once per file, and the order in which
    expressions are evaluated is fixed (values of names are merged flow-insensitively and memoised, so the
    order is part of the result for self-referencing definitions).
    """

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
