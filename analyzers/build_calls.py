"""The model builder's reading of calls and launches: each call's category (barrier, atomic, warp, async,
math), its loops and guard, and each `kernel<<<grid, block, smem, stream>>>(...)` with its constant geometry."""

from __future__ import annotations

from warpwise.analyzers.build_state import _BuilderState
from warpwise.analyzers.build_syntax import _F_ARGUMENT, _F_ARGUMENTS, _F_FIELD, _F_FUNCTION, _F_NAME, Node, _named
from warpwise.analyzers.cuda_api import (
    ASYNC_CALLS,
    ATOMIC_CALLS,
    CG_SYNC_METHODS,
    CG_WARP_METHODS,
    MATH_CALLS,
    SYNC_CALLS,
    WARP_CALLS,
)
from warpwise.analyzers.model import Call, Launch, Loop, Span


class _CallAnalysis(_BuilderState):
    """Model the function's calls and kernel launches."""

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
