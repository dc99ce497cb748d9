"""The model builder's reading of control flow: loops (bounds, steps, trip counts, unroll pragmas, nesting)
and branches (whether a condition depends on the thread, and whether it splits the lanes of a warp)."""

from __future__ import annotations

from bisect import bisect_left

from warpwise.analyzers.build_state import _BuilderState
from warpwise.analyzers.build_syntax import (
    _AFFINE,
    _F_ARGUMENT,
    _F_BODY,
    _F_CONDITION,
    _F_DECLARATOR,
    _F_DIRECTIVE,
    _F_INITIALIZER,
    _F_LEFT,
    _F_OPERATOR,
    _F_RIGHT,
    _F_UPDATE,
    _F_VALUE,
    _FIRST,
    _FLIP,
    _LOOP_KINDS,
    _ONE_VALUE,
    _START,
    _UNKNOWN,
    Node,
)
from warpwise.analyzers.model import Branch, Loop


class _ControlFlowAnalysis(_BuilderState):
    """Model the function's loops and branches."""

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
