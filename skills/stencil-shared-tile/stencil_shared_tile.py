"""Rules of the `stencil-shared-tile` card (Stage a stencil's neighbourhood in a shared-memory tile with halos): what
only this card uses.

Registered here: matcher `stencil_neighbourhood`, check `stencil_no_overlap`, the rewrite `rewrite` and the
search's parameter choices `search_variants`. The library imports this file by path as
`warpwise.skills.cards.stencil_shared_tile`.

What the recogniser reads (the kernel model, not the spelling): a kernel whose threads each read one read-only
global array (never written in the kernel) at several elements, through several accesses or one access inside a
loop of constant trip count (`for (dy = -R; dy <= R; ++dy)`), with thread-dependent indices; the rest of the kernel
stores into other arrays. The row pitch of the tile is the coefficient of `threadIdx.y` in the linear form
(`analyzers.facts_memory.linear`: locals expanded, casts looked through) of an index of the array or of a store
whose `threadIdx.x` coefficient is 1, when it reads only parameters and macros; otherwise the tile is 1-D (a run of
consecutive elements around the block's). It refuses, with a reason: barriers, shared memory, atomics, warp
operations, calls of user functions, inline assembly, an array both read and written, an assigned parameter,
pointer aliases, reads nested in another read's index, a read in a loop whose trip count is not a constant.

The rewrite, and why it is exact (bit-identical outputs):
1. a marking pass runs a copy of the kernel's body (in a lambda, so that its `return`s end only the pass) in which
   each read `in[e]` also marks the tile slot of element `e` when `e` falls in the block's tile, and each store
   `out[i] = v` goes to a local sink instead (so the pass writes no global memory; the compiler drops the
   arithmetic, and the loads whose values only fed it);
2. after a barrier the block loads every marked slot, `tile[s] = in[e(s)]`, with one cooperative loop;
3. after a second barrier the original body runs with each read `in[e]` replaced by `tile[s]` when `e` maps to a
   marked slot `s`, else by `in[e]` itself.
Slot and element are in one-to-one correspondence (`e = (r0 + i) * ld + c0 + j` for slot (i, j), `0 <= c0 + j <
ld`), and the tile holds the value of `in[e]` before the kernel ran, which is what every read returns when no store
of the kernel changes `in` (the array is never written here; `no-overlap` decides that no other pointer aliases
it). So every read returns the same value and the arithmetic, unchanged and in the same order, gives the same
results; the boundary handling (clamps, guards, early returns) is the user's own code, run as written. Only the
elements the original reads are loaded (a slot is loaded only when marked), so no new address is touched. The
tile's origin, shape and the halo only decide how many reads the tile serves, never a value: they come from the
launch (block shape) and the search (halo).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from warpwise.analyzers.expr.canon import Canonicalizer
from warpwise.analyzers.expr.values import parse_int_literal
from warpwise.analyzers.facts import distinct_launch_args, launches_of
from warpwise.analyzers.facts_memory import kernel_syntax, linear
from warpwise.analyzers.macros import file_function_macro_defs
from warpwise.analyzers.model import AccessKind, FileModel, Function, FunctionKind, MemorySpace
from warpwise.analyzers.parse import captures, query
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import (
    CheckContext,
    MatchContext,
    Region,
    Verdict,
    check,
    holds,
    matcher,
    unknown,
    violated,
)
from warpwise.skills.rewrite import Edit, RewriteContext

Node = Any

HALO_CHOICES = (1, 2)
"""The halos (radius of the tile's border) the search tries; the halo changes how many reads hit the tile only."""

BLOCK_CHOICES_2D = ((16, 16), (32, 8))
BLOCK_CHOICES_1D = ((256, 1),)
"""The block shapes the tile is sized for when the launch's block is not known before the run (a problem file's
`launch(inputs)`): the search tries each; any block stays correct, a tile sized for another block serves fewer reads."""

MAX_TRIP = 16
"""A read inside a loop of more iterations than this is not a fixed neighbourhood (a row loop, a channel loop)."""

_MAX_TILE_ELEMENTS = 64 * 64
_ALLOWED_CALL_CATEGORIES = ("math",)
_PURE_CALLS = frozenset({"min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax", "abs", "llabs", "labs"})
"""Integer built-ins without side effects that the model files as plain calls."""


class _Reject(Exception):
    """Why a kernel is not a stencil this transformation handles (one line, naming identifiers)."""


@dataclass(frozen=True)
class StencilShape:
    """A kernel whose threads read neighbouring elements of one read-only global array `array`."""

    kernel: str
    array: str
    elem: str
    reads: tuple[tuple[int, int, int, int], ...]
    """Each read's absolute span (the subscript `array[e]`) and its index's absolute span."""
    writes: tuple[tuple[int, int, str], ...]
    """Each store's target span (`out[i]`) and the stored array's element type."""
    body: tuple[int, int]
    """The kernel body's absolute span, braces included."""
    pitch: str | None
    """The tile's row pitch as C text (parameters and macros only), or None for a 1-D tile."""
    block: tuple[int, int] | None
    """The launch's block shape, when known before the run."""
    loads: int
    """How many reads of the array one thread makes at most (accesses times constant trip counts)."""


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _text(model: FileModel, node: Node) -> str:
    return model.text[node.start_byte : node.end_byte].decode("utf-8", "replace")


_BODY_QUERY = """
(identifier) @identifier
[(gnu_asm_expression) (goto_statement) (labeled_statement)] @unrepeatable
[(assignment_expression) (update_expression)] @assignment
"""
"""What `_analyse` reads of a kernel body: its names, the statements a second pass cannot repeat (inline assembly,
jumps, labels; the grammar has no other asm node), and its assignments. One query run in C, in place of three
walks of the body in Python."""


def _preorder(n: Node) -> tuple[int, int]:
    return (n.start_byte, -n.end_byte)


def _body_nodes(body: Node) -> dict[str, list[Node]]:
    """Return the body's nodes of `_BODY_QUERY`, by capture, each list in the order of a pre-order walk."""
    found = captures(query(_BODY_QUERY), body)
    return {k: sorted(found.get(k, ()), key=_preorder) for k in ("identifier", "unrepeatable", "assignment")}


def _subscript_at(root: Node, span: tuple[int, int]) -> Node | None:
    n = root.descendant_for_byte_range(*span)
    while n is not None and n.type != "subscript_expression":
        if n.start_byte < span[0] or n.end_byte > span[1]:
            return None
        n = n.parent
    return n if n is not None and (n.start_byte, n.end_byte) == span else None


def _elem_type(param: Any) -> str:
    words = [w for w in param.base_type.replace("*", " ").split() if w not in ("const", "volatile", "__restrict__")]
    return " ".join(words)


def _pitch(model: FileModel, fn: Function, ks: Any, nodes: list[Node]) -> str | None:
    """Return the coefficient of `threadIdx.y` in the first index whose `threadIdx.x` coefficient is 1."""
    params = {p.name for p in fn.params if not p.is_pointer}
    for node in nodes:
        form = linear(ks, node)
        if not form or form.get("tid.x") != Fraction(1) or "tid.y" not in form:
            continue
        c = form["tid.y"]
        if isinstance(c, Fraction):
            if c.denominator == 1 and c > 1:
                return str(c.numerator)
            continue
        names = {w for w in c.replace("(", " ").replace(")", " ").replace("*", " ").split() if w.isidentifier()}
        if all(w in params or w in model.constants or w in model.macros for w in names):
            return c
    return None


def _block(model: FileModel, kernel: str) -> tuple[int, int] | None:
    """Return the block shape of the kernel's launches when they agree and it is known before the run."""
    blocks = {tuple(launch.block_value) for _, launch in launches_of(model, kernel) if launch.block_value}
    if len(blocks) == 1:
        b = blocks.pop()
        bx, by = int(b[0]), int(b[1]) if len(b) > 1 else 1
        if 0 < bx <= 1024 and 0 < by <= 1024:
            return bx, by
    return None


def _int_text(model: FileModel, text: str | None) -> int | None:
    """Return the value of a literal or macro, with an optional sign (`-1`, `-R`), or None."""
    if text is None:
        return None
    t = "".join(text.split()).strip("()")
    sign = 1
    while t[:1] in ("-", "+"):
        sign = -sign if t[0] == "-" else sign
        t = t[1:].strip("()")
    v = parse_int_literal(t)
    if v is None:
        v = model.constants.get(t)
    return None if v is None else sign * v


def _trips(model: FileModel, loop: Any) -> int | None:
    """Return a loop's trip count when its start, bound and step are constants (`for (d = -R; d <= R; ++d)`)."""
    if loop.trip_count is not None:
        return int(loop.trip_count)
    a = loop.init_value if loop.init_value is not None else _int_text(model, loop.init)
    b = loop.bound_value if loop.bound_value is not None else _int_text(model, loop.bound)
    step = loop.step_value
    if a is None or b is None or not step:
        return None
    if loop.compare in ("<", "<="):
        end = b + (1 if loop.compare == "<=" else 0)
        return max(0, -(-(end - a) // step)) if step > 0 else None
    if loop.compare in (">", ">="):
        end = b - (1 if loop.compare == ">=" else 0)
        return max(0, -(-(a - end) // -step)) if step < 0 else None
    return None


def _pure_macros(model: FileModel) -> frozenset[str]:
    """Return the file's function-like macros whose bodies assign nothing (index helpers such as `AT(z, y, x)`).

    One answer per file, kept on the model: the definitions are found from the file's `#` characters (every
    `#define` token starts with one), not by a walk or a query over the whole tree, which would cost milliseconds
    on every keystroke."""
    key = f"{__name__}.pure_macros"
    cached = model.memo.get(key)
    if cached is not None:
        return cached
    out = set()
    for n in file_function_macro_defs(model):
        name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
        if name is None:
            continue
        body = _text(model, value) if value is not None else ""
        for op in ("==", "!=", "<=", ">="):
            body = body.replace(op, " ")
        if not any(t in body for t in ("=", "++", "--", "__syncthreads", "atomic", "asm", "__shared__")):
            out.add(_text(model, name))
    result = frozenset(out)
    model.memo[key] = result
    return result


_OWN_NAMES = frozenset(
    {
        "ww_tile_s", "ww_need_s", "ww_tile", "ww_need", "ww_ld", "ww_r0", "ww_c0", "ww_span", "ww_small", "ww_t",
        "ww_nt", "ww_slot", "ww_mark", "ww_read", "ww_s", "ww_e", "ww_d", "ww_i", "ww_j", "ww_q", "WW_TX", "WW_TY",
    }
)  # fmt: skip
"""The names the tiled kernel declares (and `ww_sink<k>`): a body that uses one is refused."""
_ELEMENT_LOOP = -1
_STEP_SCALE = 2  # `_while_trips` returns trips * 2 + (1 when the counter steps by one)
_NEAR = 8
"""Two reads of one thread whose elements are at most this far apart are neighbours (a stencil's halo)."""
_CONDITION = re.compile(r"^\(?\s*([A-Za-z_]\w*)\s*(<=|<|>=|>|!=)\s*(.+?)\s*\)?$")


def _while_trips(model: FileModel, ks: Any, loop: Any) -> int | None:
    """Return the trip count of a `while`/`do` loop over a counter declared before it with a constant start and
    stepped once in its body (`int d = -1; while (d <= 1) { ...; ++d; }`), `_ELEMENT_LOOP` for a loop over the
    thread's own elements (a counter that starts at a thread index), else None."""
    m = _CONDITION.match(" ".join((loop.condition or "").split()))
    if m is None or m.group(1) not in loop.assigned:
        return None
    var, op, bound = m.groups()
    defs = ks.definitions.get(var) or []
    start = next((d for d in defs if d is not None), None)
    if start is None:
        return None
    if "threadIdx" in _text(model, start):
        return _ELEMENT_LOOP
    a, b = _int_text(model, _text(model, start)), _int_text(model, bound)
    lo, hi = ks.function.span(loop.body_span)
    body = model.text[lo:hi].decode("utf-8", "replace")
    steps = re.findall(rf"(\+\+|--)\s*{var}\b|\b{var}\s*(\+\+|--)|\b{var}\s*([+-])=\s*(\w+)", body)
    if a is None or b is None or len(steps) != 1:
        return None
    pre, post, sign, amount = steps[0]
    incr = pre or post
    step = (1 if incr == "++" else -1) if incr else _int_text(model, amount)
    if step is None or step == 0:
        return None
    if sign == "-":
        step = -step
    probe = type("_L", (), {"trip_count": None, "init_value": a, "init": None, "bound_value": b, "bound": None})()
    probe.step_value, probe.compare = step, op
    n = _trips(model, probe)
    return None if n is None else n * _STEP_SCALE + (1 if abs(step) == 1 else 0)


def _counter(loop: Any) -> str | None:
    m = _CONDITION.match(" ".join((loop.condition or "").split()))
    return m.group(1) if m is not None else None


def _near_reads(model: FileModel, ks: Any, body: Node, fn: Function, reads: list[Any]) -> bool:
    """Return whether two reads of the array name elements a small constant apart (`u[i - 1]`, `u[i + 1]`), their
    indices read as canonical polynomials (locals defined once expanded, macros and casts folded)."""

    def resolve(name: str) -> Node | None:
        defs = ks.definitions.get(name)
        return defs[0] if defs and len(defs) == 1 else None

    canon = Canonicalizer(model.text, model.constants, resolve)
    forms = []
    for a in reads:
        node = _subscript_at(body, fn.span(a.span))
        idx = node.child_by_field_name("indices") if node is not None else None
        kids = [k for k in idx.named_children if k.type != "comment"] if idx is not None else []
        if len(kids) == 1:
            forms.append(canon.of(kids[0]))
    for i, f in enumerate(forms):
        for g in forms[i + 1 :]:
            d = (f + g.scale(Fraction(-1))).constant
            if d is not None and 0 < abs(d) <= _NEAR:
                return True
    return False


def _loaded_source(model: FileModel, ks: Any, pointers: frozenset[str], node: Node) -> str | None:
    """Return the text of a global load that an index's value comes from (`idx[b]` in `w[idx[b] * E + t]`, or in a
    local defined from it), or None: a gather or embedding lookup reads where the data points, not a fixed
    neighbourhood of the thread's own element. Locals are followed through every definition; a read of a pointer
    parameter (a subscript, a dereference or `__ldg`) is a load."""
    seen: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        t = n.type
        if t == "subscript_expression" or (t == "pointer_expression" and _text(model, n).lstrip().startswith("*")):
            arg = n.child_by_field_name("argument")
            words = set(re.findall(r"[A-Za-z_]\w*", _text(model, arg))) if arg is not None else set()
            if words & pointers:
                return _text(model, n)
        elif t == "call_expression":
            f = n.child_by_field_name("function")
            if f is not None and _text(model, f) in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"):
                return _text(model, n)
        elif t == "identifier":
            name = _text(model, n)
            if name not in seen:
                seen.add(name)
                stack.extend(d for d in ks.definitions.get(name) or [] if d is not None)
        stack.extend(n.children)
    return None


def _gathered(
    model: FileModel, ks: Any, body: Node, fn: Function, pointers: frozenset[str], reads: list[Any]
) -> str | None:
    """Return the load that some read of the array takes its index from, or None when every index is computed from
    thread and block indices, parameters and constants."""
    for a in reads:
        node = _subscript_at(body, fn.span(a.span))
        idx = node.child_by_field_name("indices") if node is not None else None
        if idx is None:
            continue
        loaded = _loaded_source(model, ks, pointers, idx)
        if loaded is not None:
            return loaded
    return None


def _own_elements(model: FileModel, ks: Any, body: Node, fn: Function, reads: list[Any]) -> tuple[int, int, int] | None:
    """Return `(c, lo, hi)` when each thread reads only elements `lo .. hi` around one base index whose `threadIdx.x`
    coefficient `c` exceeds `hi - lo` (`x[4 t] .. x[4 t + 3]`, or `x[8 t + i]` for `i = 0 .. 7`), so that no element
    is read by two threads of a row and a shared tile would load nothing less. The indices are read as canonical
    polynomials (locals defined once expanded, constants folded): every read's must be one base plus constants and
    counters of constant-trip loops; another thread index's coefficient must be an integer exceeding `hi - lo` too,
    or a symbolic row pitch (a read a constant away cannot reach another row). None when that is not proven."""

    def resolve(name: str) -> Node | None:
        defs = ks.definitions.get(name)
        return defs[0] if defs and len(defs) == 1 else None

    canon = Canonicalizer(model.text, model.constants, resolve)
    forms = []
    counters: list[dict[str, tuple[int, int]]] = []
    coefs: set[tuple[tuple[tuple[str, ...], Fraction], ...]] = set()
    for a in reads:
        ranges: dict[str, tuple[int, int]] = {}
        for lid in a.loops:
            loop = fn.loop(lid)
            var, n, first, step = loop.var, _trips(model, loop), loop.init_value, loop.step_value
            if var is None and loop.kind in ("while", "do"):
                # `int k = 0; while (k < 8) { ...; ++k; }`: the counter's start and unit step, as `_while_trips` reads.
                var, w = _counter(loop), _while_trips(model, ks, loop)
                defs = [d for d in ks.definitions.get(var or "", []) if d is not None]
                if w is None or w == _ELEMENT_LOOP or not w % _STEP_SCALE or not defs:
                    return None
                n, first, step = w // _STEP_SCALE, _int_text(model, _text(model, defs[0])), 1
                m = _CONDITION.match(" ".join((loop.condition or "").split()))
                step = -1 if m is not None and m.group(2) in (">", ">=") else 1
            if var is None or n is None or n < 1 or first is None or not step:
                return None
            last = first + (n - 1) * step
            ranges[var] = (min(first, last), max(first, last))
        node = _subscript_at(body, fn.span(a.span))
        idx = node.child_by_field_name("indices") if node is not None else None
        kids = [k for k in idx.named_children if k.type != "comment"] if idx is not None else []
        if len(kids) != 1:
            return None
        form = canon.of(kids[0])
        coefs.add(tuple(sorted((m, c) for m, c in form.terms.items() if any(w.startswith("threadIdx.") for w in m))))
        forms.append(form)
        counters.append(ranges)
    if len(coefs) != 1:
        return None
    (coef,) = coefs
    x = dict(coef).get(("threadIdx.x",))
    if x is None or x.denominator != 1 or sum(1 for m, _ in coef if "threadIdx.x" in m) != 1:
        return None
    looped = {(v,) for r in counters for v in r}
    base = type(forms[0])({m: c for m, c in forms[0].terms.items() if m not in looped})
    lo = hi = None
    for form, ranges in zip(forms, counters, strict=True):
        d = form + base.scale(Fraction(-1))
        a_lo = a_hi = Fraction(0)
        for mono, c in d.terms.items():
            if mono == ():
                a_lo, a_hi = a_lo + c, a_hi + c
            elif len(mono) == 1 and mono[0] in ranges:
                r0, r1 = ranges[mono[0]]
                a_lo, a_hi = a_lo + min(c * r0, c * r1), a_hi + max(c * r0, c * r1)
            elif c != 0:
                return None
        lo = a_lo if lo is None else min(lo, a_lo)
        hi = a_hi if hi is None else max(hi, a_hi)
    if lo is None or hi is None or lo.denominator != 1 or hi.denominator != 1:
        return None
    spread = hi - lo
    # A thread index alone (`3 * threadIdx.y`) must step past the reads' span; one times a symbol is a row pitch.
    if any(len(m) == 1 and (c.denominator != 1 or abs(c) <= spread) for m, c in coef):
        return None
    return int(abs(x)), int(lo), int(hi)


def _analyse(model: FileModel, fn: Function) -> StencilShape:
    ks = kernel_syntax(model, fn)
    if ks is None or ks.body is None:
        raise _Reject(f"`{fn.name}` has no body to read")
    body = ks.body
    body_text = _text(model, body)
    nodes = _body_nodes(body)
    names = {_text(model, n) for n in nodes["identifier"]}
    clash = sorted(names & _OWN_NAMES)
    if clash or any(w.startswith("ww_sink") for w in names):
        raise _Reject(f"`{fn.name}` already uses `{(clash or ['ww_sink'])[0]}`, a name of the tiled kernel")
    if fn.shared or "__shared__" in body_text:
        raise _Reject(f"`{fn.name}` already uses shared memory")
    for c in fn.calls:
        if (
            c.category not in _ALLOWED_CALL_CATEGORIES
            and c.name not in _PURE_CALLS
            and c.name not in _pure_macros(model)
        ):
            raise _Reject(f"`{fn.name}` calls `{c.name}` ({c.category}), which a second pass of its body cannot repeat")
    if nodes["unrepeatable"]:
        first = _text(model, nodes["unrepeatable"][0])[:30]
        raise _Reject(f"`{fn.name}` holds `{first}`, which the rewrite does not repeat")
    if fn.pointer_aliases:
        raise _Reject(f"`{fn.name}` reads arrays through local pointers ({', '.join(sorted(fn.pointer_aliases))})")
    params = {p.name: p for p in fn.params}
    for n in nodes["assignment"]:
        t = n.child_by_field_name("left") or n.child_by_field_name("argument")
        while t is not None and t.type == "parenthesized_expression":
            t = t.named_children[0] if t.named_children else None
        if t is not None and t.type == "identifier" and _text(model, t) in params:
            raise _Reject(f"`{fn.name}` assigns its parameter `{_text(model, t)}`")
        if t is not None and t.type == "pointer_expression":
            raise _Reject(f"`{fn.name}` stores through `{_text(model, t)}`, not an array element")
    glob = [a for a in fn.accesses if a.space is MemorySpace.GLOBAL]
    written = {a.base for a in glob if a.kind is not AccessKind.READ}
    candidates: list[tuple[int, str]] = []
    pointers = frozenset(p.name for p in fn.params if p.is_pointer)
    gathers: list[tuple[str, str]] = []
    owned: list[tuple[str, int, int, int]] = []
    for name in sorted({a.base for a in glob if a.kind is AccessKind.READ} - written):
        p = params.get(name)
        reads = [a for a in glob if a.base == name]
        if p is None or not p.is_pointer or p.pointer_depth != 1 or any(len(a.indices) != 1 for a in reads):
            continue
        loaded = _gathered(model, ks, body, fn, pointers, reads)
        if loaded is not None:
            gathers.append((name, loaded))
            continue
        count = 0
        looped = False
        for a in reads:
            trips = 1
            for lid in a.loops:
                loop = fn.loop(lid)
                if loop.init is not None and "threadIdx" in loop.init:
                    continue  # the loop over the thread's own elements (a grid- or block-stride loop)
                n = _trips(model, loop)
                unit = loop.step_value in (1, -1)
                if n is None and loop.kind in ("while", "do") and loop.var is None:
                    w = _while_trips(model, ks, loop)
                    if w == _ELEMENT_LOOP:
                        continue
                    n, unit = (None, False) if w is None else (w // _STEP_SCALE, bool(w % _STEP_SCALE))
                if n is None or n > MAX_TRIP:
                    trips = 0
                    break
                trips *= n
                # A unit-step loop whose counter the index reads walks neighbouring elements (`dx = -1 .. 1`);
                # a loop over rows ROWS apart (a transpose's `j += 8`) does not.
                counter = loop.var or _counter(loop)
                looped = looped or (n > 1 and unit and counter is not None and counter in a.index_names)
            count += trips if trips else 0
            if not trips:
                count = -1
                break
        if count < 0:
            continue
        if count >= 3 and any(a.index_names for a in reads) and (looped or _near_reads(model, ks, body, fn, reads)):
            own = _own_elements(model, ks, body, fn, reads)
            if own is not None:
                owned.append((name, *own))
            else:
                candidates.append((count, name))
    if not candidates:
        if gathers:
            name, loaded = gathers[0]
            raise _Reject(
                f"`{name}` is read where `{loaded}` points (a gather or embedding lookup): loaded data, not a fixed "
                "neighbourhood of the thread's element, decides which elements a thread reads"
            )
        if owned:
            name, step, lo, hi = owned[0]
            raise _Reject(
                f"each thread reads only its own elements of `{name}` (offsets {lo} to {hi} from a base {step} "
                "apart from its neighbour's): no element is read by two threads, so a tile would load nothing less"
            )
        if written & {a.base for a in glob if a.kind is AccessKind.READ}:
            both = sorted(written & {a.base for a in glob if a.kind is AccessKind.READ})
            raise _Reject(f"`{fn.name}` reads and writes `{both[0]}`: no read-only neighbourhood to stage")
        raise _Reject(
            f"`{fn.name}` reads no read-only array at three or more neighbouring elements per thread (reads at most "
            f"{_NEAR} elements apart, or a unit-step loop) outside loops of more than {MAX_TRIP} iterations"
        )
    count, name = max(candidates)
    reads_acc = [a for a in glob if a.base == name]
    read_nodes = []
    for a in reads_acc:
        node = _subscript_at(body, fn.span(a.span))
        if node is None:
            raise _Reject(f"`{name}[{a.index}]` is not a plain subscript")
        read_nodes.append(node)
    for n in read_nodes:
        up = n.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is not None and up.type == "pointer_expression":
            raise _Reject(f"`{_text(model, up)}` takes the address of an element of `{name}`")
    for i, n in enumerate(read_nodes):
        for j, m in enumerate(read_nodes):
            if i != j and n.start_byte <= m.start_byte and m.end_byte <= n.end_byte:
                raise _Reject(f"`{_text(model, n)}` reads `{name}` inside its own index")
    writes = []
    for a in glob:
        if a.kind is AccessKind.READ:
            continue
        node = _subscript_at(body, fn.span(a.span))
        p = params.get(a.base)
        if node is None or p is None or p.pointer_depth != 1:
            raise _Reject(f"the store to `{a.base}` is not an element of a pointer parameter")
        parent = node.parent
        while parent is not None and parent.type == "parenthesized_expression":
            parent = parent.parent
        if parent is None or parent.type != "assignment_expression":
            raise _Reject(f"`{_text(model, node)}` is written other than by an assignment")
        left = parent.child_by_field_name("left")
        op = parent.child_by_field_name("operator")
        if left is None or (left.start_byte, left.end_byte) != (node.start_byte, node.end_byte):
            raise _Reject(f"`{_text(model, node)}` is written other than by an assignment")
        if op is not None and _text(model, op) != "=":
            raise _Reject(f"`{_text(model, parent)[:40]}` reads the array it writes")
        idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
        if idx is not None and any(x.type in ("assignment_expression", "update_expression") for x in _walk(idx)):
            raise _Reject(f"the index of `{_text(model, node)}` has side effects")
        writes.append((node.start_byte, node.end_byte, _elem_type(p)))
    if not writes:
        raise _Reject(f"`{fn.name}` stores nothing to global memory")
    for n in read_nodes:
        for s, e, _ in writes:
            if s <= n.start_byte and n.end_byte <= e:
                raise _Reject(f"`{_text(model, n)}` is read inside the index of a store")
    index_nodes = []
    for n in read_nodes:
        idx = n.child_by_field_name("indices") or n.child_by_field_name("index")
        if idx is None:
            raise _Reject(f"`{_text(model, n)}` has no index")
        kids = (
            [k for k in idx.named_children if k.type != "comment"] if idx.type == "subscript_argument_list" else [idx]
        )
        if len(kids) != 1:
            raise _Reject(f"`{_text(model, n)}` is not a one-dimensional subscript")
        index_nodes.append(kids[0])
    store_index_nodes = []
    for s, e, _ in writes:
        node = _subscript_at(body, (s, e))
        idx = node.child_by_field_name("indices") if node is not None else None
        kids = [k for k in idx.named_children if k.type != "comment"] if idx is not None else []
        if len(kids) == 1:
            store_index_nodes.append(kids[0])
    pitch = _pitch(model, fn, ks, index_nodes + store_index_nodes)
    return StencilShape(
        kernel=fn.name,
        array=name,
        elem=_elem_type(params[name]),
        reads=tuple(
            (n.start_byte, n.end_byte, i.start_byte, i.end_byte) for n, i in zip(read_nodes, index_nodes, strict=True)
        ),
        writes=tuple(writes),
        body=(body.start_byte, body.end_byte),
        pitch=pitch,
        block=_block(model, fn.name),
        loads=count,
    )


def recognise(model: FileModel, fn: Function) -> tuple[StencilShape | None, str]:
    """Return the stencil a kernel computes, or None and why not (one line)."""
    memo: dict[tuple[int, int], tuple[StencilShape | None, str]] = model.memo.setdefault(__name__, {})
    key = (fn.base, fn.length)
    if key not in memo:
        try:
            memo[key] = (_analyse(model, fn), "")
        except _Reject as e:
            memo[key] = (None, str(e))
    return memo[key]


# ---------------------------------------------------------------------------------------------------------------
# The rewrite.


def _substitute(model: FileModel, span: tuple[int, int], repl: list[tuple[int, int, str]]) -> str:
    out = []
    pos = span[0]
    for s, e, t in sorted(repl):
        out.append(model.text[pos:s].decode("utf-8", "replace"))
        out.append(t)
        pos = e
    out.append(model.text[pos : span[1]].decode("utf-8", "replace"))
    return "".join(out)


def _reads(model: FileModel, shape: StencilShape, fn_name: str) -> list[tuple[int, int, str]]:
    return [
        (s, e, f"{fn_name}((long long)({model.text[i0:i1].decode('utf-8', 'replace')}))")
        for s, e, i0, i1 in shape.reads
    ]


def tile_block(shape: StencilShape, block: tuple[int, int] | None = None) -> tuple[int, int]:
    """Return the block shape the tile is sized for: the one asked for, the launch's, else the first choice."""
    if block is not None:
        return block
    if shape.block is not None:
        return shape.block
    return BLOCK_CHOICES_2D[0] if shape.pitch is not None else BLOCK_CHOICES_1D[0]


def tiled_body(model: FileModel, shape: StencilShape, halo: int = 1, block: tuple[int, int] | None = None) -> str:
    """Return the new body of the kernel (braces included)."""
    inner = (shape.body[0] + 1, shape.body[1] - 1)
    sinks = {t for _, _, t in shape.writes}
    sink_names = {t: f"ww_sink{k}" for k, t in enumerate(sorted(sinks))}
    mark_body = _substitute(
        model, inner, _reads(model, shape, "ww_mark") + [(s, e, sink_names[t]) for s, e, t in shape.writes]
    )
    run_body = _substitute(model, inner, _reads(model, shape, "ww_read"))
    bx, by = tile_block(shape, block)
    two_d = shape.pitch is not None
    tx = bx + 2 * halo if two_d else bx * by + 2 * halo
    ty = by + 2 * halo if two_d else 1
    while tx * ty > _MAX_TILE_ELEMENTS and ty > 1:
        ty = max(1, ty // 2)
    tx = min(tx, _MAX_TILE_ELEMENTS)
    a, el = shape.array, shape.elem
    if two_d:
        geometry = (
            f"  const long long ww_ld = (long long)({shape.pitch});\n"
            f"  const long long ww_r0 = (long long)blockIdx.y * blockDim.y - {halo};\n"
            f"  const long long ww_c0 = (long long)blockIdx.x * blockDim.x - {halo};\n"
            "  const long long ww_span = ww_ld > 0 ? WW_TY * ww_ld : 0;\n"
            "  const bool ww_small = ww_span <= 0xffffffffLL;\n"
        )
        slot = (
            "  auto ww_slot = [&](long long ww_e) -> int {\n"
            "    const long long ww_d = ww_e - ww_r0 * ww_ld;  // from the start of the tile's first row\n"
            "    if (ww_d < 0 || ww_d >= ww_span) return -1;\n"
            "    long long ww_i, ww_j;\n"
            "    if (ww_small) {\n"
            "      const unsigned ww_q = (unsigned)ww_d / (unsigned)ww_ld;\n"
            "      ww_i = ww_q;\n"
            "      ww_j = (long long)((unsigned)ww_d - ww_q * (unsigned)ww_ld) - ww_c0;\n"
            "    } else {\n"
            "      ww_i = ww_d / ww_ld;\n"
            "      ww_j = ww_d - ww_i * ww_ld - ww_c0;\n"
            "    }\n"
            "    return ww_j >= 0 && ww_j < WW_TX ? (int)(ww_i * WW_TX + ww_j) : -1;\n"
            "  };\n"
        )
        element = "(ww_r0 + ww_s / WW_TX) * ww_ld + ww_c0 + ww_s % WW_TX"
        form = f"a {tx} x {ty} tile (rows of `{shape.pitch}` elements)"
    else:
        geometry = f"  const long long ww_c0 = (long long)blockIdx.x * blockDim.x - {halo};\n"
        slot = (
            "  auto ww_slot = [&](long long ww_e) -> int {\n"
            "    const long long ww_j = ww_e - ww_c0;\n"
            "    return ww_j >= 0 && ww_j < WW_TX ? (int)ww_j : -1;\n"
            "  };\n"
        )
        element = "ww_c0 + ww_s"
        form = f"a run of {tx} consecutive elements"
    sink_decls = "".join(f"    {t} {n};\n    (void)&{n};\n" for t, n in sorted(sink_names.items(), key=lambda x: x[1]))
    return (
        "{\n"
        f"  // warpwise stencil-shared-tile: each block stages the elements of `{a}` its threads read in {form}\n"
        f"  // around its own, halo {halo}: a first pass of the body marks them, the block loads each once, then the\n"
        f"  // body runs as written with every read of `{a}` served from the tile (the same values: `{a}` is not\n"
        "  // written by this kernel) or, outside the tile, from global memory.\n"
        f"  constexpr int WW_TX = {tx}, WW_TY = {ty};\n"
        f"  __shared__ {el} ww_tile_s[WW_TY * WW_TX];\n"
        "  __shared__ unsigned char ww_need_s[WW_TY * WW_TX];\n"
        f"  {el}* const ww_tile = ww_tile_s;\n"
        "  unsigned char* const ww_need = ww_need_s;\n"
        f"{geometry}"
        "  const int ww_t = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));\n"
        "  const int ww_nt = (int)(blockDim.x * blockDim.y * blockDim.z);\n"
        f"{slot}"
        f"  auto ww_mark = [&](long long ww_e) -> {el} {{\n"
        "    const int ww_s = ww_slot(ww_e);\n"
        "    if (ww_s >= 0) ww_need[ww_s] = 1;\n"
        f"    return {a}[ww_e];\n"
        "  };\n"
        f"  auto ww_read = [&](long long ww_e) -> {el} {{\n"
        "    const int ww_s = ww_slot(ww_e);\n"
        f"    return ww_s >= 0 && ww_need[ww_s] ? ww_tile[ww_s] : {a}[ww_e];\n"
        "  };\n"
        "  for (int ww_s = ww_t; ww_s < WW_TX * WW_TY; ww_s += ww_nt) ww_need[ww_s] = 0;\n"
        "  __syncthreads();\n"
        "  [&]() {  // the marking pass: the body, its stores sent to locals\n"
        f"{sink_decls}"
        f"    {{{mark_body}}}\n"
        "  }();\n"
        "  __syncthreads();\n"
        "  for (int ww_s = ww_t; ww_s < WW_TX * WW_TY; ww_s += ww_nt)\n"
        f"    if (ww_need[ww_s]) ww_tile[ww_s] = {a}[{element}];\n"
        "  __syncthreads();\n"
        f"  {{{run_body}}}\n"
        "}"
    )


def generate_edits(
    model: FileModel, shape: StencilShape, halo: int = 1, block: tuple[int, int] | None = None
) -> list[Edit]:
    """Return the edit that replaces the kernel's body by the tiled one."""
    return [Edit(shape.body[0], shape.body[1], tiled_body(model, shape, halo, block))]


# ---------------------------------------------------------------------------------------------------------------
# Registered matcher, check and rewrite.


@matcher("stencil_neighbourhood")
def stencil_neighbourhood(ctx: MatchContext, **_args: Any) -> Iterator[Region]:
    """Find kernels whose threads read a fixed neighbourhood of one read-only array from global memory."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    shape, _ = recognise(ctx.model, fn)
    if shape is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"stencil-shared-tile:{fn.name}",
        {
            "kernel": fn.name,
            "stencil_shape": shape,
            "array": shape.array,
            "loads": str(shape.loads),
            "tile": "2-D" if shape.pitch is not None else "1-D",
        },
    )


@check("stencil_no_overlap")
def stencil_no_overlap(ctx: CheckContext) -> Verdict:
    """Hold when no array the kernel stores into can alias the staged input."""
    shape: StencilShape | None = ctx.fact("stencil_shape")
    if shape is None:
        return unknown("no stencil was recognised here")
    fn = ctx.function
    inp = fn.param(shape.array)
    outs = [p for p in fn.params if p.is_pointer and p.name != shape.array and not p.is_const]
    ps = [p for p in [inp, *outs] if p is not None]
    if ps and all(p.is_restrict for p in ps):
        return holds(f"`{shape.array}` and the arrays stored into are `__restrict__`")
    if inp is not None:
        for _, launch in launches_of(ctx.model, fn.name):
            if len(launch.args) != len(fn.params):
                continue
            arg = "".join(launch.args[inp.index].split())
            same = [p.name for p in outs if "".join(launch.args[p.index].split()) == arg]
            if same:
                return violated(
                    f"a launch passes `{arg}` as both `{shape.array}` and `{same[0]}` (an in-place stencil)"
                )
    ok, reason = distinct_launch_args(ctx.model, fn, ps)
    if ok:
        return holds(reason)
    return unknown(f"a store could change `{shape.array}` if the pointers overlap, and {reason}")


@check("stencil_repeatable_body")
def stencil_repeatable_body(ctx: CheckContext) -> Verdict:
    """Hold when the recogniser read the body as one that can run twice, the first time without global stores."""
    shape: StencilShape | None = ctx.fact("stencil_shape")
    if shape is None:
        return unknown("no stencil was recognised here")
    return holds(
        f"`{shape.kernel}` has no barrier, shared memory, atomic, warp operation, user call or store through a "
        f"pointer, and stores only to arrays other than `{shape.array}` by plain assignments"
    )


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Stage the block's neighbourhood of the input in a shared tile; the body runs unchanged on it."""
    shape: StencilShape | None = ctx.fact("stencil_shape")
    if shape is None:
        shape, _ = recognise(ctx.model, ctx.function)
        if shape is None:
            return None
    halo = int(ctx.args.get("halo", 1) or 1)
    raw = ctx.args.get("block")
    block = (int(raw[0]), int(raw[1])) if isinstance(raw, (list, tuple)) and len(raw) == 2 else None
    if block is not None and not (0 < block[0] <= 1024 and 0 < block[1] <= 1024):
        block = None
    return generate_edits(ctx.model, shape, max(0, min(halo, 8)), block)


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: the tile's halo, and the block shape it is sized for when the launch's
    is not known before the run (the launch is unchanged)."""
    shape = matches[0].region.facts.get("stencil_shape") if matches else None
    if shape is None:
        return []
    if shape.block is not None:
        return [(f"shared tile, halo {h}", {"halo": h}, []) for h in HALO_CHOICES]
    blocks = BLOCK_CHOICES_2D if shape.pitch is not None else BLOCK_CHOICES_1D
    return [
        (f"shared tile for {b[0]} x {b[1]} blocks, halo {h}", {"halo": h, "block": list(b)}, [])
        for b in blocks
        for h in HALO_CHOICES
    ]


def rewrite_source(model: FileModel, kernel: str, halo: int = 1, block: tuple[int, int] | None = None) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not recognised)."""
    from warpwise.skills.rewrite import apply_edits

    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    shape, _ = recognise(model, fn)
    if shape is None:
        return None
    return apply_edits(model.text, generate_edits(model, shape, halo, block))


__all__ = [
    "BLOCK_CHOICES_1D",
    "BLOCK_CHOICES_2D",
    "HALO_CHOICES",
    "StencilShape",
    "generate_edits",
    "recognise",
    "rewrite",
    "rewrite_source",
    "search_variants",
    "stencil_neighbourhood",
    "stencil_no_overlap",
    "stencil_repeatable_body",
    "tile_block",
    "tiled_body",
]
