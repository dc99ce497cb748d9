"""Rules of the `streaming-cache-hints` card: global data that each thread reads or writes exactly once.

An elementwise kernel touches every element of its inputs and outputs once: thread `i` loads `x[i]`, stores
`y[i]`, and no other thread and no later iteration comes back to them. Such lines gain nothing from staying in L1
or L2, and by staying they push out data that is reused. `__ldcs` and `__stcs` (`ld.global.cs` / `st.global.cs`,
cache-streaming, evict-first) say so to the hardware. Cache operators are performance hints only: they do not
change the values a program reads or the memory consistency model, so the fix is safe wherever it compiles.

The matcher yields one region per pointer parameter that a kernel subscripts with its global thread index (the
local initialized with `blockIdx.x * blockDim.x + threadIdx.x` in any operand order, or the counter of a
grid-stride loop) and only reads or plainly assigns. Three checks decide whether the data really streams: the
element type has an intrinsic overload (typedefs in the file resolved), each thread touches the element once and
no loop repeats it, and the index is the thread's own element (no neighbour offsets, no shared elements).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from warpwise.analyzers.checkpoint import checkpoint
from warpwise.analyzers.facts import tree_of
from warpwise.analyzers.facts_memory import KernelSyntax, kernel_syntax, launches_of, squash
from warpwise.analyzers.model import Access, AccessKind, AccessPattern, FileModel, Function, FunctionKind, MemorySpace
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

# Element types with both an `__ldcs` and an `__stcs` overload (sm_32_intrinsics.h; cuda_fp16.h and cuda_bf16.h
# for the half and bfloat16 types).
STREAMING_TYPES = frozenset(
    {
        "char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "long",
        "unsigned long", "long long", "unsigned long long", "float", "double",
        "char2", "char4", "uchar2", "uchar4", "short2", "short4", "ushort2", "ushort4", "int2", "int4", "uint2",
        "uint4", "longlong2", "ulonglong2", "float2", "float4", "double2",
        "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162",
    }
)  # fmt: skip
# Spellings of those types that come from the standard and CUDA headers rather than from the file.
_LIBRARY_ALIASES = {
    "unsigned": "unsigned int",
    "signed": "int",
    "signed int": "int",
    "uint": "unsigned int",
    "ushort": "unsigned short",
    "ulong": "unsigned long",
    "int8_t": "signed char",
    "uint8_t": "unsigned char",
    "int16_t": "short",
    "uint16_t": "unsigned short",
    "int32_t": "int",
    "uint32_t": "unsigned int",
    "int64_t": "long",
    "uint64_t": "unsigned long",
    "size_t": "unsigned long",
    "half": "__half",
    "half2": "__half2",
    "nv_bfloat16": "__nv_bfloat16",
    "nv_bfloat162": "__nv_bfloat162",
}
# Types the intrinsics are known not to take: three-component and one-component vectors, bool, long double.
_NO_OVERLOAD = frozenset(
    {"bool", "long double"}
    | {f"{t}{n}" for t in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                             "ulonglong", "float", "double") for n in (1, 3)}
)  # fmt: skip
_TYPEDEFS = "(type_definition type: (_) @type declarator: (type_identifier) @name)"
_ALIASES = "(alias_declaration name: (type_identifier) @name type: (type_descriptor) @type)"
_RECORDS = """
(struct_specifier name: (type_identifier) @name body: (_))
(class_specifier name: (type_identifier) @name body: (_))
(union_specifier name: (type_identifier) @name body: (_))
"""
_QUALIFIERS = ("const ", "volatile ", "struct ", "class ", "union ")


def _line(model: FileModel, fn: Function, access: Access) -> int:
    return model.lines.position(fn.base + access.span[0]).line + 1


def _bare_type(text: str) -> str:
    """Return a type's text without qualifiers, `__restrict__` and extra white space."""
    words = [w for w in text.replace("*", " ").split() if w not in ("__restrict__", "__restrict", "restrict")]
    out = " ".join(words)
    changed = True
    while changed:
        changed = False
        for q in _QUALIFIERS:
            if out.startswith(q):
                out, changed = out[len(q) :], True
    return out


def type_aliases(model: FileModel) -> tuple[dict[str, str], frozenset[str]]:
    """Return the file's `typedef` / `using` aliases (name -> aliased type text) and its struct, class and union
    names (read from the whole file's tree once per model, kept on the model: every candidate pointer asks)."""
    key = f"{__name__}.type_aliases"
    found = model.memo.get(key)
    if found is None:
        found = model.memo.setdefault(key, _read_type_aliases(model))
    return found


def _read_type_aliases(model: FileModel) -> tuple[dict[str, str], frozenset[str]]:
    root = tree_of(model).root_node
    aliases: dict[str, str] = {}
    for source in (_TYPEDEFS, _ALIASES):
        checkpoint()  # Each query reads the whole file.
        found = captures(query(source), root)
        for name, typ in zip(found.get("name", []), found.get("type", []), strict=False):
            aliases[name.text.decode()] = _bare_type(typ.text.decode())
    checkpoint()
    records = frozenset(n.text.decode() for n in captures(query(_RECORDS), root).get("name", []))
    return aliases, records


def resolve_type(model: FileModel, type_text: str) -> tuple[str, frozenset[str]]:
    """Return a type with the file's aliases and the headers' spellings resolved, and the file's record names."""
    aliases, records = type_aliases(model)
    name = _bare_type(type_text)
    for _ in range(8):
        if name in aliases:
            name = aliases[name]
        elif name in _LIBRARY_ALIASES:
            name = _LIBRARY_ALIASES[name]
        else:
            break
    return name, records


_KEYWORD_TYPES = frozenset({"char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool", "void"})


def _library_spelling(name: str) -> str:
    """Return a type spelled in keywords as `resolve_type` resolves it (no alias of a file can have such a name)."""
    for _ in range(8):
        if name not in _LIBRARY_ALIASES:
            break
        name = _LIBRARY_ALIASES[name]
    return name


def _index_vars(ks: KernelSyntax) -> set[str]:
    """Return the locals that hold the thread's global element index (declared or grid-stride loop counters)."""
    return set(ks.index_vars) | {shape.var for shape in ks.elementwise}


def _grid_stride_loops(fn: Function, ks: KernelSyntax) -> dict[int, str]:
    """Return the ids of the kernel's grid-stride loops, with their counters."""
    starts = {shape.stmt.start_byte: shape.var for shape in ks.elementwise if shape.form == "loop"}
    return {loop.id: starts[fn.base + loop.span[0]] for loop in fn.loops if fn.base + loop.span[0] in starts}


def _global_accesses(fn: Function, name: str) -> list[Access]:
    return [a for a in fn.accesses if a.base == name and a.space is MemorySpace.GLOBAL]


@matcher("streamed_global_elements")
def streamed_global_elements(ctx: MatchContext) -> Iterator[Region]:
    """Find pointer parameters that a kernel subscripts with its global thread index and only loads or assigns."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or not fn.accesses:
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    index_vars = _index_vars(ks)
    if not index_vars:
        return
    for p in fn.params:
        if p.pointer_depth != 1:
            continue
        accs = _global_accesses(fn, p.name)
        if not accs or any(a.kind not in (AccessKind.READ, AccessKind.WRITE) for a in accs):
            continue
        if any(a.via_ldg or a.vector_cast for a in accs):
            continue  # Already loaded through an intrinsic or reinterpreted: not a plain element access.
        if not any(a.index_names & index_vars for a in accs):
            continue
        kinds = {a.kind for a in accs}
        role = " and ".join(r for k, r in ((AccessKind.READ, "read"), (AccessKind.WRITE, "written")) if k in kinds)
        verbs = " and ".join(r for k, r in ((AccessKind.READ, "reads"), (AccessKind.WRITE, "writes")) if k in kinds)
        intrinsics = " and ".join(
            f"`{n}`" for k, n in ((AccessKind.READ, "__ldcs"), (AccessKind.WRITE, "__stcs")) if k in kinds
        )
        yield Region(
            AnchorKind.ACCESS,
            fn,
            accs[0].span,
            f"stream:{fn.name}:{p.name}",
            {
                "name": p.name,
                "kernel": fn.name,
                "role": role,
                "verbs": verbs,
                "intrinsics": intrinsics,
                "marks": "marks" if len(kinds) == 1 else "mark",
                "element_type": p.base_type,
                "accesses": tuple(accs),
            },
        )


@check("streaming_element_type")
def streaming_element_type(ctx: CheckContext) -> Verdict:
    """Hold when the pointer's element type, aliases resolved, has `__ldcs` and `__stcs` overloads."""
    name, written = ctx.fact("name"), ctx.fact("element_type", "")
    params = [t.name for t in ctx.function.template_params]
    if written in params:
        return _template_element_type(ctx, name, written, params.index(written))
    bare = _bare_type(written)
    if bare and all(w in _KEYWORD_TYPES for w in bare.split()):
        # Typedef, alias and record names are identifiers, never keywords: the file's own names cannot change a
        # type spelled in keywords, so the whole file's tree need not be read for them.
        resolved, records = _library_spelling(bare), frozenset[str]()
    else:
        resolved, records = resolve_type(ctx.model, written)
    shown = f"`{written}`" + (f" (`{resolved}`)" if resolved != written else "")
    if resolved in STREAMING_TYPES:
        return holds(f"`{name}` points to {shown}, which `__ldcs` and `__stcs` take")
    if resolved in _NO_OVERLOAD or resolved in records:
        return violated(f"`{name}` points to {shown}; `__ldcs` and `__stcs` have no overload for it")
    # A rewrite that may not compile is never offered, not even as unsafe (`--fix --unsafe` must keep files building).
    return violated(f"`{name}` points to {shown}, a type not declared in this file: the intrinsics may not take it")


def _template_element_type(ctx: CheckContext, name: str, written: str, index: int) -> Verdict:
    """Violated: the intrinsics take only some types, and a template's instantiations are never all known here.

    The instantiations a file shows are a lower bound (dispatch macros in other files, a value of another template
    type stored into it): apex's layer norm instantiates `V` with `float` and `double` in this file and with
    `at::Half` through its dispatch, and `__stcs(V*, U)` then has no overload. A rewrite that breaks one
    instantiation breaks the build, so the card does not fire on template element types.
    """
    return violated(
        f"`{name}` points to the template parameter `{written}`: some instantiation may be a type the intrinsics do "
        "not take (or the stored value another type), and the rewrite would not compile there"
    )


@check("streaming_access_once")
def streaming_access_once(ctx: CheckContext) -> Verdict:
    """Hold when each thread loads the element at most once and stores it at most once, outside repeating loops."""
    fn, name = ctx.function, ctx.fact("name")
    accs: tuple[Access, ...] = ctx.fact("accesses", ())
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return unknown(f"no syntax tree for `{fn.name}`")
    grid = _grid_stride_loops(fn, ks)
    for a in accs:
        for loop_id in a.loops:
            if grid.get(loop_id) in a.index_names:
                continue
            loop = fn.loop(loop_id)
            line = ctx.model.lines.position(fn.base + loop.span[0]).line + 1
            return violated(
                f"`{name}[{a.index}]` is {'read' if a.kind is AccessKind.READ else 'written'} in every iteration of "
                f"the loop at line {line}: the element is reused, so it does not stream"
            )
    for kind, verb in ((AccessKind.READ, "read"), (AccessKind.WRITE, "written")):
        same = [a for a in accs if a.kind is kind]
        if len(same) > 1:
            lines = ", ".join(str(_line(ctx.model, fn, a)) for a in same)
            return violated(f"`{name}` is {verb} {len(same)} times by each thread (lines {lines})")
    # A call that takes the pointer itself (not a loaded element, `p[i]`) may read the data again.
    passed = re.compile(rf"\b{re.escape(name)}\b(?!\s*\[)")
    calls = [c for c in fn.calls if any(passed.search(arg) for arg in c.args)]
    escapes = [c.name for c in calls] + [k for k, v in fn.pointer_aliases.items() if v == name]
    if escapes:
        return unknown(f"`{name}` is also passed to or copied into `{escapes[0]}`, which may read it again")
    return holds(f"each thread of `{fn.name}` {ctx.fact('verbs')} its element of `{name}` once, in no repeating loop")


def _stride(a: Access) -> Fraction | None:
    return a.stride if isinstance(a.stride, Fraction) else (Fraction(a.stride) if a.stride is not None else None)


@check("streaming_element_private")
def streaming_element_private(ctx: CheckContext) -> Verdict:
    """Hold when every access is `p[i]` with `i` the thread's own global element index, under a 1-D grid."""
    fn, name = ctx.function, ctx.fact("name")
    accs: tuple[Access, ...] = ctx.fact("accesses", ())
    written = {squash(a.index): a.index for a in accs}
    indices = sorted(written)
    if len(indices) > 1:
        shown = ", ".join(f"`{name}[{written[i]}]`" for i in indices)
        return violated(f"`{fn.name}` touches {shown}: neighbouring threads use the same elements of `{name}`")
    gathered = [a for a in accs if a.pattern is AccessPattern.INDIRECT]
    if gathered:
        # A gather's elements are chosen by data, and a looked-up table is usually reused: not a private stream.
        # (Offering it also nested its fix around the index's own, so one pass of fixes was not idempotent.)
        return violated(f"`{name}[{gathered[0].index}]` is gathered through a loaded index, not the thread's element")
    uniform = [a for a in accs if a.pattern is AccessPattern.UNIFORM]
    if uniform:
        return violated(f"every thread of a warp reads the same `{name}[{uniform[0].index}]`")
    shared = [a for a in accs if (s := _stride(a)) is not None and 0 < abs(s) < 1]
    if shared:
        return violated(f"`{name}[{shared[0].index}]`: several threads of a warp use each element")
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return unknown(f"no syntax tree for `{fn.name}`")
    var = indices[0]
    if var not in _index_vars(ks):
        return unknown(f"`{name}[{accs[0].index}]`: which thread touches which element is not decided here")
    if var in ks.index_vars and ks.is_assigned(var):
        return unknown(f"`{var}` is assigned again in `{fn.name}`; its elements are not followed")
    for _host, launch in launches_of(ctx.model, fn.name):
        if launch.grid_value is not None and any(v > 1 for v in launch.grid_value[1:]):
            return violated(
                f"`{fn.name}` is launched with the grid `{launch.grid}`: blocks that differ in y or z compute the "
                f"same `{var}` and touch the same elements of `{name}`"
            )
    return holds(f"every access of `{name}` is `{name}[{var}]`, the thread's own element")


def _subscript(ctx: RewriteContext, access: Access) -> Any:
    span = ctx.abs(access.span)
    node = ctx.node(span, "subscript_expression")
    if node is None or (node.start_byte, node.end_byte) != span:
        return None
    return node


def stream_global_elements(ctx: RewriteContext) -> list[Edit] | None:
    """Load the pointer's element with `__ldcs(&p[i])` and store it with `__stcs(&p[i], value)`."""
    edits: list[Edit] = []
    for a in ctx.fact("accesses", ()):
        node = _subscript(ctx, a)
        if node is None:
            return None
        text = ctx.text((node.start_byte, node.end_byte))
        if a.kind is AccessKind.READ:
            edits.append(Edit(node.start_byte, node.end_byte, f"__ldcs(&{text})"))
            continue
        assign = node.parent
        if (
            assign is None
            or assign.type != "assignment_expression"
            or assign.child_by_field_name("left") != node
            or assign.child_by_field_name("operator").type != "="
            or assign.parent is None
            or assign.parent.type != "expression_statement"
        ):
            return None  # Only a plain `p[i] = value;` statement becomes a streaming store.
        right = assign.child_by_field_name("right")
        semi = assign.parent.children[-1]
        if right is None or semi.type != ";":
            return None
        edits.append(Edit(node.start_byte, right.start_byte, f"__stcs(&{text}, "))
        edits.append(Edit(semi.start_byte, semi.end_byte, ");"))
    return sorted(edits) or None
