"""Findings: statements about the code that the model proves, each with an id, a severity and a range.

These are the model-level observations `warpwise check` reports (skill cards add their own findings on top,
through the same `Finding` type). Each rule is a small function over one kernel and the file model; a rule that
fails is logged and skipped so that it never hides the others. Messages name the user's identifiers and say
why the statement holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from warpwise.analyzers.banks import warp_conflict
from warpwise.analyzers.barriers import barrier_guard, unguarded_tile_loop
from warpwise.analyzers.checkpoint import checkpoint
from warpwise.analyzers.facts_memory import lane_sectors, lanes_walk_gap
from warpwise.analyzers.macros import view_width
from warpwise.analyzers.model import (
    Access,
    AccessKind,
    AccessPattern,
    FileModel,
    Function,
    FunctionKind,
    MemorySpace,
    Span,
)

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z_]\w*")


class Severity(StrEnum):
    """How much a finding matters, in LSP's four levels."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


@dataclass(frozen=True, slots=True)
class Related:
    """Another place that supports a finding (a launch site, the loop header, the declaration)."""

    message: str
    span: Span


@dataclass(frozen=True, slots=True)
class Finding:
    """One statement about the code, at an absolute byte span of the file."""

    rule: str
    severity: Severity
    message: str
    span: Span
    function: str | None
    related: tuple[Related, ...] = ()
    data: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Rule:
    """A model-level rule: its id, default severity, a one-line summary and its check."""

    id: str
    severity: Severity
    summary: str
    check: Callable[[FileModel, Function], Iterator[Finding]]
    concern: str = "performance"
    """`correctness` for rules that report code that can compute wrong results or hang; else `performance`."""


RULES: dict[str, Rule] = {}


def rule(rule_id: str, severity: Severity, summary: str, concern: str = "performance"):
    """Register a rule function under an id."""

    def wrap(fn: Callable[[FileModel, Function], Iterator[Finding]]):
        RULES[rule_id] = Rule(rule_id, severity, summary, fn, concern)
        return fn

    return wrap


def _line(model: FileModel, fn: Function, rel: Span) -> int:
    return model.lines.position(fn.base + rel[0]).line + 1


def _stride_words(acc: Access) -> str:
    if acc.stride is not None:
        return str(acc.stride.numerator) if acc.stride.denominator == 1 else str(acc.stride)
    return f"`{acc.stride_text}`"


def _cast_target_width(model: FileModel, fn: Function, acc: Access) -> int | None:
    """Return the width of the type an element's address is cast to (`reinterpret_cast<float4*>(&a[4 * i])`).

    An address taken and reinterpreted as a pointer to a wider (vector) type is a vector access of that width:
    `&a[4 * i]` read as a `float4` is contiguous across threads, not a stride of 4 floats.
    """
    if acc.kind is not AccessKind.ADDRESS:
        return None
    start, end = fn.span(acc.span)
    node = model.tree.root_node.descendant_for_byte_range(start, end)
    text = model.text
    for _ in range(6):
        if node is None:
            return None
        parent = node.parent
        if parent is None:
            return None
        if parent.type == "cast_expression":
            ty = parent.child_by_field_name("type")
            return _pointee_width(text[ty.start_byte : ty.end_byte]) if ty is not None else None
        if parent.type == "argument_list":
            call = parent.parent
            fn_node = call.child_by_field_name("function") if call is not None else None
            if fn_node is None or fn_node.type != "template_function":
                return None
            args = fn_node.child_by_field_name("arguments")
            return _pointee_width(text[args.start_byte + 1 : args.end_byte - 1]) if args is not None else None
        if parent.type not in ("pointer_expression", "parenthesized_expression", "subscript_expression"):
            return None
        node = parent
    return None


def _pointee_width(type_text: bytes) -> int | None:
    """Return the size of the pointee of a pointer type's text (`const float4*` gives 16), or None."""
    from warpwise.analyzers.expr.values import type_size

    t = type_text.decode("utf-8", "replace").strip()
    if not t.endswith("*"):
        return None
    return type_size(t[:-1].strip())


@rule("uncoalesced-global-access", Severity.WARNING, "Adjacent threads access global memory far apart.")
def _uncoalesced(model: FileModel, fn: Function) -> Iterator[Finding]:
    for acc in fn.accesses:
        if acc.space is not MemorySpace.GLOBAL or acc.pattern is not AccessPattern.STRIDED:
            continue
        vector = view_width(acc.view_type) if acc.view_macro else _cast_target_width(model, fn, acc)
        if acc.kind is AccessKind.ADDRESS and vector is None:
            # `&A[i]` handed to `cp.async` or a helper moves as many bytes as the copy says, not one element.
            continue
        if vector is not None and acc.stride is not None and acc.width:
            # The address is read as a vector: what matters is the stride in vectors, not in elements.
            stride_bytes = abs(acc.stride) * acc.width
            if stride_bytes <= vector:
                continue
        counted = None
        if acc.stride is None or acc.stride.denominator != 1:
            # No one stride between lanes (`A[(tid / 4) * K + (tid % 4) * 4]`): count the warp's sectors lane by lane;
            # when they are as few as a contiguous access's, every fetched byte is used and nothing is uncoalesced.
            counted = lane_sectors(model, fn, acc, vector or acc.width or 0)
            if counted is not None and counted[0] <= counted[1]:
                continue
        verb = {AccessKind.READ: "read", AccessKind.WRITE: "written", AccessKind.ATOMIC: "updated"}.get(
            acc.kind, "accessed"
        )
        width = acc.width or 4
        if acc.stride is not None and acc.stride.denominator == 1:
            stride_bytes = abs(acc.stride.numerator) * width
            # 128-byte lines one warp-wide access spans, against a contiguous access of the same width.
            spanned = -(-(31 * stride_bytes + width) // 128)
            cost = max(1, spanned // max(1, -(-(32 * width) // 128))) if stride_bytes < 128 else 32
            tail = (
                f"each warp-wide access spans {cost}x the 128-byte lines a contiguous one would"
                if cost < 32
                else "each thread of a warp touches its own 32-byte sector"
            )
            amount = f"{abs(acc.stride.numerator)} elements ({stride_bytes} bytes)"
            walked = lanes_walk_gap(model, fn, acc)
            if walked is not None:
                tail += (
                    f"; over the loop on `{walked}` each lane walks the elements up to the next lane's, so the warp "
                    "moves the DRAM sectors of a contiguous access and what this costs is load/store instructions "
                    "and L1 wavefronts, not memory traffic"
                )
        elif counted is not None and (acc.stride is not None or "/" in (acc.stride_text or "")):
            # A fractional stride is the evaluator's reading of `tid / D`: the lanes come in groups, not at one stride.
            yield Finding(
                "uncoalesced-global-access",
                Severity.WARNING,
                f"`{acc.base}` is {verb} by groups of lanes spread over {counted[0]} 32-byte sectors per warp where a "
                f"contiguous access touches {counted[1]} (index `{acc.index}`, counted lane by lane with the sizes "
                "the code leaves open taken as large).",
                fn.span(acc.span),
                fn.name,
                data={"array": acc.base, "index": acc.index, "stride": str(acc.stride)},
            )
            continue
        else:
            amount = f"{_stride_words(acc)} elements"
            tail = f"unless `{acc.stride_text}` is 1, each thread of a warp touches its own 32-byte sector"
        yield Finding(
            "uncoalesced-global-access",
            Severity.WARNING,
            f"`{acc.base}` is {verb} with a stride of {amount} between adjacent threads (index `{acc.index}`); {tail}.",
            fn.span(acc.span),
            fn.name,
            data={"array": acc.base, "index": acc.index, "stride": str(acc.stride or acc.stride_text)},
        )


@rule("global-reread-in-loop", Severity.INFO, "A global value is loaded on every iteration of a loop.")
def _reread(model: FileModel, fn: Function) -> Iterator[Finding]:
    seen: set[tuple[str, str, int]] = set()
    for acc in fn.accesses:
        if acc.space is not MemorySpace.GLOBAL or acc.kind is not AccessKind.READ or not acc.loops:
            continue
        if acc.pattern in (AccessPattern.UNKNOWN, AccessPattern.INDIRECT) or acc.via_ldg:
            continue
        moved = set(_NAME.findall(acc.array)) | {acc.base}
        for loop_id in reversed(acc.loops):
            loop = fn.loops[loop_id]
            if acc.index_names & loop.assigned or moved & loop.assigned:
                # The index, or the pointer itself (`p += stride`), changes in this loop: the address is not invariant.
                break
            key = (acc.base, acc.index, loop_id)
            if key in seen:
                break
            lo, hi = loop.span
            stores = [
                a
                for a in fn.accesses
                if lo <= a.span[0] < hi
                and a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)
                and a.space in (MemorySpace.GLOBAL, MemorySpace.UNKNOWN)
            ]
            barriers = [c for c in fn.calls if lo <= c.span[0] < hi and c.category in ("sync", "atomic")]
            param = fn.param(acc.base)
            restrict_const = param is not None and param.is_restrict and param.is_const
            if barriers:
                reason = f"the `{barriers[0].name}` in the loop makes the compiler reload it"
            elif stores and not restrict_const:
                target = stores[0].base
                reason = (
                    f"`{acc.base}` is not `const __restrict__` and the loop stores to `{target}`, "
                    "so the compiler must assume the value can change"
                )
            else:
                break
            seen.add(key)
            what = f"the loop over `{loop.var}`" if loop.var else "the loop"
            yield Finding(
                "global-reread-in-loop",
                Severity.INFO,
                f"`{acc.base}[{acc.index}]` is loaded from global memory on every iteration of {what}, but its "
                f"index does not change in the loop; {reason}. Load it into a register before the loop.",
                fn.span(acc.span),
                fn.name,
                related=(Related(f"{what} starts here", fn.span(loop.header_span)),),
                data={"array": acc.base, "index": acc.index, "loop": loop_id},
            )
            break


def bank_ways(words: int, width: int) -> int:
    """Return how many lanes of a warp share a bank for a stride of `words` 4-byte words and `width`-byte accesses."""
    ways = math.gcd(words, 32)
    if width == 8:
        ways = max(1, ways // 2)
    elif width >= 16:
        ways = max(1, ways // 4)
    return ways


def padded_ways(acc: Access, row: int | None) -> int | None:
    """Return how many lanes of a warp share a bank once one element is added to each row of `row` elements, or
    None when padding does not change the access's stride.

    Padding changes the stride only when the stride is a multiple of the row (the threads walk a column); a
    conflict within a row (`tile[k][4 * threadIdx.x]`) stays however many elements are added.
    """
    if acc.stride is None or acc.stride.denominator != 1 or not acc.width or not row or len(acc.indices) < 2:
        return None
    stride = abs(acc.stride.numerator)
    if stride % row:
        return None
    return bank_ways(stride // row * (row + 1) * acc.width // 4, acc.width)


def padding_removes_conflict(acc: Access, row: int | None) -> bool:
    """Return whether adding one element to the last dimension (`row` elements) removes the access's conflict."""
    after = padded_ways(acc, row)
    return after is not None and after < 2


def opaque_wrapper(model: FileModel, fn: Function, acc: Access) -> str | None:
    """Return what hides an access's real width: a function-like macro of the file it is passed to, or a cast of
    its address to another pointer type (`reinterpret_cast<float4*>(&s[r][c])`); None when the access is plain.

    Such an access may be a vector load (`FETCH_FLOAT4(s[r][c])`): its bank pattern is not the element's, and a
    padding that breaks the rows' 16-byte alignment breaks the vector load.
    """
    start, end = fn.span(acc.span)
    node = model.tree.root_node.descendant_for_byte_range(start, end)
    text = model.text
    for _ in range(6):
        parent = node.parent if node is not None else None
        if parent is None:
            return None
        if parent.type == "argument_list":
            call = parent.parent
            callee = call.child_by_field_name("function") if call is not None else None
            name = text[callee.start_byte : callee.end_byte].decode("utf-8", "replace") if callee is not None else ""
            if name in model.macros:
                return f"the macro `{name}`"
            if callee is not None and callee.type == "template_function" and "cast" in name:
                return f"`{name.split('<', 1)[0]}`"
            return None
        if parent.type == "cast_expression":
            ty = parent.child_by_field_name("type")
            shown = text[ty.start_byte : ty.end_byte].decode("utf-8", "replace") if ty is not None else "?"
            return f"a cast to `{shown}`" if "*" in shown else None
        if parent.type not in ("pointer_expression", "parenthesized_expression", "subscript_expression"):
            return None
        node = parent
    return None


@rule("shared-bank-conflict", Severity.WARNING, "Threads of a warp hit the same shared-memory bank.")
def _bank_conflict(model: FileModel, fn: Function) -> Iterator[Finding]:
    for acc in fn.accesses:
        if acc.space is not MemorySpace.SHARED or acc.pattern is not AccessPattern.STRIDED:
            continue
        if acc.kind is AccessKind.ADDRESS:
            # `&tile[r][c]` handed to `cp.async`, `ldmatrix` or `__cvta_generic_to_shared` is not a 4-byte access:
            # the banks it touches depend on the width of what uses the address (16-byte copies go by phases).
            continue
        if acc.stride is None or acc.stride.denominator != 1 or not acc.width or acc.width < 4:
            continue
        words = abs(acc.stride.numerator) * acc.width // 4
        ways = bank_ways(words, acc.width)
        if ways < 2 or opaque_wrapper(model, fn, acc) is not None:
            # A macro or a cast may read the element as a wider vector: its banks are not the element's.
            continue
        arr = next((s for s in fn.shared if s.name == acc.base), None)
        # Fewer than 32 lanes along x (`analyzers.banks`): the lanes of one row of the warp give a lower bound.
        conflict = warp_conflict(model, fn, acc, arr, words, ways)
        if conflict is None:
            continue
        ways, banks, where = conflict
        degree = f"{ways}-way"
        hint = ""
        if arr is not None and len(arr.dims) >= 2 and arr.dim_values and arr.dim_values[-1]:
            hint = (
                f"; padding the last dimension of `{arr.name}` to {arr.dim_values[-1] + 1} removes it"
                if padding_removes_conflict(acc, arr.dim_values[-1])
                else ""
            )
        yield Finding(
            "shared-bank-conflict",
            Severity.WARNING,
            f"`{acc.base}[{']['.join(acc.indices)}]`: adjacent threads are {words} words apart, so {where} "
            f"fall into {banks} bank{'s' if banks > 1 else ''} ({degree} bank conflict){hint}.",
            fn.span(acc.span),
            fn.name,
            related=(Related(f"`{arr.name}` is declared here", fn.span(arr.span)),) if arr is not None else (),
            data={"array": acc.base, "ways": ways, "stride_words": words},
        )


@rule(
    "missing-restrict",
    Severity.INFO,
    "Pointer parameters are never aliased at launch sites but lack `__restrict__`.",
)
def _missing_restrict(model: FileModel, fn: Function) -> Iterator[Finding]:
    pointers = [p for p in fn.params if p.is_pointer and not p.is_reference]
    lacking = [p for p in pointers if not p.is_restrict]
    if len(pointers) < 2 or not lacking:
        return
    if not any(
        a.kind in (AccessKind.WRITE, AccessKind.READ_WRITE) and a.space is MemorySpace.GLOBAL for a in fn.accesses
    ):
        return
    launches = model.launches_of(fn.name)
    if not launches:
        return
    for _, launch in launches:
        if len(launch.args) != len(fn.params):
            return
        texts = [launch.args[p.index].strip() for p in pointers]
        if any(not _is_plain_name(t) for t in texts) or len(set(texts)) != len(texts):
            return
    names = ", ".join(f"`{p.name}`" for p in lacking)
    count = len(launches)
    yield Finding(
        "missing-restrict",
        Severity.INFO,
        f"{names} {'is a pointer parameter' if len(lacking) == 1 else 'are pointer parameters'} without "
        f"`__restrict__`; {'the launch' if count == 1 else f'all {count} launches'} in this file "
        f"{'passes' if count == 1 else 'pass'} distinct "
        f"buffers, so `__restrict__` is sound there and lets the compiler keep loads in registers.",
        fn.span(fn.name_span),
        fn.name,
        related=tuple(
            Related(f"launched here with `{', '.join(launch.args)}`", host.span(launch.span))
            for host, launch in launches[:5]
        ),
        data={"params": [p.name for p in lacking]},
    )


def _is_plain_name(text: str) -> bool:
    parts = text.replace("->", ".").split(".")
    return all(p.isidentifier() for p in parts)


_BLOCK_SYNCS = ("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")


@rule(
    "divergent-syncthreads",
    Severity.ERROR,
    "A block-wide barrier is not reached by every thread of the block.",
    concern="correctness",
)
def _divergent_sync(model: FileModel, fn: Function) -> Iterator[Finding]:
    syncs = [c for c in fn.calls if c.category == "sync" and (c.name in _BLOCK_SYNCS or c.name.endswith(".sync"))]
    if not syncs:
        return
    guards = {id(c): barrier_guard(model, fn, c) for c in syncs}
    for call in syncs:
        if call.name.endswith(".sync") and "block" not in call.name and "cta" not in call.name:
            continue
        guard = guards[id(call)]
        if guard is not None:
            yield Finding(
                "divergent-syncthreads",
                Severity.ERROR,
                f"`{call.name}()` runs under `{guard}`, which depends on the thread index; "
                "threads that do not reach it leave the block's barrier waiting (undefined behaviour: hangs or "
                "wrong shared-memory results).",
                fn.span(call.span),
                fn.name,
                data={"guard": guard},
            )
    first_sync = min(syncs, key=lambda c: c.span[0])
    for branch in fn.branches:
        if not (branch.thread_dependent and branch.has_return):
            continue
        later = [c for c in syncs if c.span[0] > branch.span[1] and guards[id(c)] is None]
        if not later or branch.span[0] > max(c.span[0] for c in syncs):
            continue
        target = later[0] if later else first_sync
        if unguarded_tile_loop(fn, branch.span[1]) is not None:
            continue  # A tile-edge return in a kernel that requires whole tiles (`analyzers.barriers`).
        yield Finding(
            "divergent-syncthreads",
            Severity.WARNING,
            f"threads that return under `if ({branch.condition})` skip the `{target.name}()` at line "
            f"{_line(model, fn, target.span)}; a barrier must be reached by all threads of the block (keep them "
            "alive and guard the work instead of returning).",
            fn.span(branch.span),
            fn.name,
            related=(Related("the barrier they skip", fn.span(target.span)),),
            data={"guard": branch.condition},
        )


def budget_findings(model: FileModel) -> list[Finding]:
    """Return one finding per function the analysis left partly unread because it is over a budget."""
    return [Finding("analysis-budget", Severity.INFO, prob.message, prob.span, None) for prob in model.budget_problems]


def syntax_findings(model: FileModel) -> list[Finding]:
    """Return one info-level finding for the whole file when the parser could not read some of it.

    tree-sitter-cuda does not read every construct nvcc accepts (macros that expand to declarations, attributes,
    some templates), so a place it cannot read says more about the parser than about the code: warpwise reports
    it once per file, at the first such place, with the others listed as related places, and never as a warning.
    Compiling the code is the compiler's job; warpwise only says where its own analysis is partial.
    """
    problems = model.syntax_problems
    if not problems:
        return []
    first = problems[0]
    fn = model.function_at(first.span[0])
    more = len(problems) - 1
    others = f" and {more} other place{'s' if more != 1 else ''}" if more else ""
    return [
        Finding(
            "syntax-error",
            Severity.INFO,
            f"warpwise's parser could not read this code ({first.message}){others}; its analysis of "
            f"{'these regions' if more else 'this region'} is partial (a parser limitation: nvcc may accept the code).",
            first.span,
            fn.name if fn is not None else None,
            related=tuple(Related(p.message, p.span) for p in problems[1:20]),
        )
    ]


def check_function(model: FileModel, fn: Function, select: set[str] | None = None) -> list[Finding]:
    """Run every (selected) rule over one function; a failing rule is logged and skipped."""
    out: list[Finding] = []
    if fn.kind is FunctionKind.HOST:
        return out
    for r in RULES.values():
        if select is not None and r.id not in select:
            continue
        if fn.kind is not FunctionKind.KERNEL and r.id in ("missing-restrict", "uncoalesced-global-access"):
            continue
        try:
            out.extend(r.check(model, fn))
        except Exception:  # One failing rule never hides the others.
            log.exception("rule %s failed on %s", r.id, fn.name)
    return out


def check_model(model: FileModel, select: set[str] | None = None) -> list[Finding]:
    """Return every finding of a file, sorted by position."""
    out = [] if select is not None and "syntax-error" not in select else syntax_findings(model)
    if select is None or "analysis-budget" in select:
        out.extend(budget_findings(model))
    for fn in model.functions:
        checkpoint()
        out.extend(check_function(model, fn, select))
    out.sort(key=lambda f: (f.span[0], f.rule))
    return out


class RuleCache:
    """Reuse the rule findings of functions whose text and surroundings did not change (one per open document).

    A rule reads its own function (the model's facts and the syntax inside it), the file's constants and macros,
    which come from the text outside every function, and the function's launches (their arguments). The key is the
    function's text, kind and template binding, that outside text, the launches' callers and arguments, and the
    selected rules, and the function's first line (messages name lines); a function with a finding that points
    outside it (a launch site) is checked again every time. Reused findings move with their function, so a
    keystroke in one kernel checks that kernel only (an edit that adds or removes lines checks those below it too).
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[Any, ...], tuple[int, tuple[Finding, ...]]] = {}
        self.hits = 0
        self.misses = 0

    def check_model(self, model: FileModel, select: set[str] | None = None) -> list[Finding]:
        """Return what `check_model` returns, checking only the functions whose key changed."""
        out = [] if select is not None and "syntax-error" not in select else syntax_findings(model)
        if select is None or "analysis-budget" in select:
            out.extend(budget_findings(model))
        outside = _outside_digest(model)
        selected = frozenset(select) if select is not None else None
        fresh: dict[tuple[Any, ...], tuple[int, tuple[Finding, ...]]] = {}
        for fn in model.functions:
            checkpoint()
            if fn.kind is FunctionKind.HOST:
                continue  # No rule checks host code (`check_function`).
            launches = tuple((host.name, launch.args) for host, launch in model.launches_of(fn.name))
            # Messages name lines ("the `__syncthreads()` at line 399"): the function's first line is part of the key.
            line = model.lines.position(fn.base).line
            key: tuple[Any, ...] = (outside, selected, line, model.text[fn.base : fn.base + fn.length], fn.kind)
            key += (fn.template_binding, launches)
            hit = self._entries.get(key) or fresh.get(key)
            if hit is not None:
                self.hits += 1
                base, found = hit
                fresh[key] = hit
                out.extend(_moved(f, fn.base - base) for f in found)
                continue
            self.misses += 1
            checked = check_function(model, fn, select)
            lo, hi = fn.base, fn.base + fn.length
            if all(_inside(f.span, lo, hi) and all(_inside(r.span, lo, hi) for r in f.related) for f in checked):
                fresh[key] = (fn.base, tuple(checked))
            out.extend(checked)
        self._entries = fresh
        out.sort(key=lambda f: (f.span[0], f.rule))
        return out


def _inside(span: Span, lo: int, hi: int) -> bool:
    return lo <= span[0] and span[1] <= hi


def _moved(f: Finding, delta: int) -> Finding:
    """Return a finding moved by `delta` bytes (with its related places), or the same finding when it did not move."""
    if delta == 0:
        return f
    related = tuple(dataclasses.replace(r, span=(r.span[0] + delta, r.span[1] + delta)) for r in f.related)
    return dataclasses.replace(f, span=(f.span[0] + delta, f.span[1] + delta), related=related)


def _outside_digest(model: FileModel) -> bytes:
    """Return a digest of the file's text outside its functions (declarations, `#define`s, templates' headers)."""
    text = model.text
    parts = []
    at = 0
    for fn in sorted(model.functions, key=lambda f: f.base):
        if fn.base > at:
            parts.append(text[at : fn.base])
        at = max(at, fn.base + fn.length)
    parts.append(text[at:])
    return hashlib.sha256(b"\0".join(parts)).digest()
