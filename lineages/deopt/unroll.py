"""Remove unrolling: independent loads in flight, and `#pragma unroll` on loops that load.

Two kinds of candidates, each exact (unrolling never changes what a loop computes):
- `factor`: a `#define NAME_UNROLL k` (k > 1) that sets how many independent loads a thread issues before it
  uses them becomes 1 (the code around it must already handle any factor, which the gate checks). No card
  explains "loads in flight": the step proposes one.
- `pragma-constant` / `pragma-variable`: `#pragma unroll` (or `#pragma unroll k`, k > 1) on a loop that reads
  global or shared memory becomes `#pragma unroll 1`, except where the loop's counter indexes a per-thread array
  (a rolled loop would move the array to local memory: that is another optimization, `dynamic-local-array-index`).
  Loops with a constant trip count map to the card `constant-trip-loop-without-unroll`; others propose a card.
"""

from __future__ import annotations

import re

from warpwise.analyzers.model import Function, MemorySpace
from warpwise.lineages.deopt.base import Deopt, KernelSource, Node, ProposedCard
from warpwise.skills.rewrite import Edit

LOADS_IN_FLIGHT_CARD = ProposedCard(
    "single-load-in-flight",
    "Issue several independent loads before using them",
    "Let each thread issue several independent loads (separate registers, separate accumulators) before it "
    "uses the first, so that more bytes are in flight per thread and memory latency is hidden.",
)
UNROLLED_LOOP_CARD = ProposedCard(
    "variable-trip-loop-without-unroll",
    "Unroll a streaming loop by a small factor",
    "Unroll a loop whose trip count is only known at run time by a small factor (`#pragma unroll 4`), so that "
    "the loads of several iterations are issued before the first is used.",
)

_FACTOR_NAME = re.compile(r"^\w*UNROLL\w*$")
_MEMORY_USE = re.compile(r"\*\s*reinterpret_cast|__ldg\s*\(|__ldcs\s*\(|__ldcg\s*\(|\bww_ld")


def _factor_candidates(src: KernelSource) -> list[Deopt]:
    """Return the candidate that sets every `*_UNROLL` factor above 1 to 1."""
    edits = []
    names = []
    for name, node in src.macro_definitions().items():
        value = node.child_by_field_name("value")
        if not _FACTOR_NAME.match(name) or value is None:
            continue
        v = src.macro_value(name)
        if v is None or v <= 1 or src.text_of(value).strip() != str(v):
            continue
        if not src.code_matches(rf"\b{re.escape(name)}\b(?!\s*\()")[1:]:
            continue
        edits.append(Edit(value.start_byte, value.end_byte, "1"))
        names.append(f"`{name}` {v} -> 1")
    if not edits:
        return []
    return [
        Deopt(
            "unroll",
            "factor",
            f"one load in flight per thread ({', '.join(names)})",
            tuple(edits),
            None,
            LOADS_IN_FLIGHT_CARD,
        )
    ]


def _local_arrays(src: KernelSource, fn: Function) -> set[str]:
    """Return the names of the per-thread (not `__shared__`) arrays a function declares."""
    node = src.function_node(fn)
    out: set[str] = set()
    for decl in src.nodes(node, ("declaration",)):
        if "__shared__" in src.text_of(decl).split("=")[0]:
            continue
        for arr in src.nodes(decl, ("array_declarator",)):
            name = arr.child_by_field_name("declarator")
            while name is not None and name.type == "array_declarator":
                name = name.child_by_field_name("declarator")
            if name is not None and name.type == "identifier":
                out.add(src.text_of(name))
    return out


def _loop_after(src: KernelSource, pragma: Node) -> Node | None:
    """Return the `for` statement a pragma applies to."""
    nxt = pragma.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    return nxt if nxt is not None and nxt.type == "for_statement" else None


def _loop_var(src: KernelSource, loop: Node) -> str | None:
    """Return the counter of a `for` loop declared in its initializer."""
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    decl = next((c for c in src.nodes(init, ("init_declarator",))), None)
    target = decl.child_by_field_name("declarator") if decl is not None else None
    return src.text_of(target) if target is not None and target.type == "identifier" else None


def _reads_memory(src: KernelSource, fn: Function, loop: Node) -> bool:
    """Return whether a loop's body reads global or shared memory."""
    body = loop.child_by_field_name("body")
    if body is None:
        return False
    start, end = body.start_byte - fn.base, body.end_byte - fn.base
    for a in fn.accesses:
        if a.space in (MemorySpace.GLOBAL, MemorySpace.SHARED) and start <= a.span[0] < end:
            return True
    return _MEMORY_USE.search(src.text_of(body)) is not None


def _indexes_local_array(src: KernelSource, fn: Function, loop: Node, var: str) -> bool:
    """Return whether the loop's counter indexes a per-thread array anywhere in the loop."""
    text = src.text_of(loop)
    return any(
        re.search(rf"\b{re.escape(arr)}\s*(?:\[[^\]]*\]\s*)*\[[^\]]*\b{re.escape(var)}\b", text)
        for arr in _local_arrays(src, fn)
    )


def _pragma_candidates(src: KernelSource) -> list[Deopt]:
    """Return the candidates that roll the unrolled loops that read memory (constant trip counts apart)."""
    groups: dict[str, list[tuple[Edit, str]]] = {"constant": [], "variable": []}
    for fn in src.device_functions():
        node = src.function_node(fn)
        if node is None:
            continue
        loops_by_start = {fn.base + lp.span[0]: lp for lp in fn.loops}
        for pragma in src.nodes(node, ("preproc_call",)):
            directive = pragma.child_by_field_name("directive")
            arg = pragma.child_by_field_name("argument")
            if directive is None or src.text_of(directive) != "#pragma" or arg is None:
                continue
            words = src.text_of(arg).split()
            if not words or words[0] != "unroll" or len(words) > 2:
                continue
            if len(words) == 2 and (not words[1].isdigit() or int(words[1]) <= 1):
                continue
            loop = _loop_after(src, pragma)
            var = _loop_var(src, loop) if loop is not None else None
            if loop is None or var is None:
                continue
            if not _reads_memory(src, fn, loop) or _indexes_local_array(src, fn, loop, var):
                continue
            model_loop = loops_by_start.get(loop.start_byte)
            constant = model_loop is not None and model_loop.trip_count is not None
            edit = Edit(arg.start_byte, arg.end_byte, "unroll 1")
            groups["constant" if constant else "variable"].append((edit, f"`{var}` in `{fn.name}`"))
    out = []
    for kind, items in groups.items():
        if not items:
            continue
        where = ", ".join(label for _, label in items)
        out.append(
            Deopt(
                "unroll",
                f"pragma-{kind}",
                f"roll the unrolled loops over {where} (`#pragma unroll 1`)",
                tuple(e for e, _ in items),
                "constant-trip-loop-without-unroll" if kind == "constant" else None,
                None if kind == "constant" else UNROLLED_LOOP_CARD,
            )
        )
    return out


def remove_unrolling(src: KernelSource) -> list[Deopt]:
    """Return the candidates that remove unrolling."""
    return _factor_candidates(src) + _pragma_candidates(src)
