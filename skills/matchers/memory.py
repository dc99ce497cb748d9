"""Matchers of the memory and parallelism cards: vector widths, thread-to-data mapping, transposes, read-only
inputs, tiling, grid shape, coarsening, occupancy, launch bounds, asynchronous copies and lane divergence."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import (
    Access,
    AccessKind,
    AccessPattern,
    FileModel,
    Function,
    FunctionKind,
    MemorySpace,
)
from warpwise.skills.facts import is_written, loop_label
from warpwise.skills.facts_memory import (
    KernelSyntax,
    kernel_syntax,
    lane_class,
    launches_of,
    linear,
    squash,
    unparen,
)
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher

VECTOR_TYPES = {
    "float": ("float4", 4),
    "int": ("int4", 4),
    "unsigned int": ("uint4", 4),
    "unsigned": ("uint4", 4),
    "uint32_t": ("uint4", 4),
    "int32_t": ("int4", 4),
    "double": ("double2", 2),
    "long long": ("longlong2", 2),
    "long long int": ("longlong2", 2),
    "unsigned long long": ("ulonglong2", 2),
    "int64_t": ("longlong2", 2),
    "uint64_t": ("ulonglong2", 2),
    # 2-byte types have no 16-byte vector type of their own: eight of them travel as one `uint4`, read back through
    # a pointer to the element type (the rewrite's packed form).
    "__half": ("uint4", 8),
    "half": ("uint4", 8),
    "__nv_bfloat16": ("uint4", 8),
    "nv_bfloat16": ("uint4", 8),
}


def _param_index(fn: Function, name: str) -> int:
    p = fn.param(name)
    return p.index if p is not None else len(fn.params)


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _index_node(ks: KernelSyntax, fn: Function, acc: Access) -> Any:
    start, end = fn.span(acc.index_span)
    return ks.node.descendant_for_byte_range(start, end)


def _within(span: tuple[int, int], node: Any, fn: Function) -> bool:
    lo, hi = node.start_byte - fn.base, node.end_byte - fn.base
    return lo <= span[0] and span[1] <= hi


def _related_launches(model: FileModel, fn: Function) -> tuple[Related, ...]:
    return tuple(
        Related(f"launched here with `<<<{launch.grid}, {launch.block}>>>`", host.span(launch.span))
        for host, launch in launches_of(model, fn.name)[:5]
    )


# 1. scalar-global-access


def vector_accesses(fn: Function, ks: KernelSyntax, shape: Any) -> list[Access]:
    """Return the global accesses `a[i]` of pointer parameters inside an elementwise body."""
    out = []
    for acc in fn.accesses:
        if not _within(acc.span, shape.body, fn) or acc.space is not MemorySpace.GLOBAL:
            continue
        if len(acc.indices) != 1 or squash(acc.index) != shape.var or acc.array != acc.base:
            continue
        param = fn.param(acc.base)
        if param is None or param.pointer_depth != 1:
            continue
        out.append(acc)
    return out


@matcher("scalar_elementwise_accesses")
def scalar_elementwise_accesses(ctx: MatchContext) -> Iterator[Region]:
    """Find elementwise kernels whose arrays are read or written one 2-, 4- or 8-byte element per thread."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    if not any(
        a.space is MemorySpace.GLOBAL
        and a.width in (2, 4, 8)
        and not a.vector_cast
        and a.pattern is AccessPattern.CONTIGUOUS
        for a in fn.accesses
    ):
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    for shape in ks.elementwise:
        accesses = vector_accesses(fn, ks, shape)
        scalar = [a for a in accesses if a.width in (2, 4, 8) and not a.vector_cast and not a.via_ldg]
        if not scalar:
            continue
        arrays = sorted({a.base for a in accesses}, key=lambda b: _param_index(fn, b))
        width = scalar[0].width or 4
        elem = fn.param(arrays[0])
        vec = VECTOR_TYPES.get(elem.base_type if elem is not None else "", (None, 16 // width))
        reads = {b for b in arrays if any(a.base == b and a.kind is not AccessKind.WRITE for a in accesses)}
        writes = {b for b in arrays if any(a.base == b and a.kind is not AccessKind.READ for a in accesses)}
        parts = []
        for group, verb in (
            ([b for b in arrays if b in reads and b not in writes], "read"),
            ([b for b in arrays if b in writes and b not in reads], "written"),
            ([b for b in arrays if b in reads and b in writes], "read and written"),
        ):
            if group:
                parts.append(f"{_names(group)} {'is' if len(group) == 1 else 'are'} {verb}")
        yield Region(
            AnchorKind.ACCESS,
            fn,
            scalar[0].span,
            f"vector:{shape.var}:{shape.stmt.start_byte - fn.base}",
            {
                "kernel": fn.name,
                "shape": shape,
                "accesses": tuple(accesses),
                "arrays": arrays,
                "names": _names(arrays),
                "what": ", ".join(parts),
                "width": width,
                "lanes": vec[1],
                "vector": vec[0] or f"{16 // width}-wide vector",
                "index": shape.var,
                "bound": ks.text(shape.bound),
                "form": _form_text(ks, shape),
                "_related": _related_launches(ctx.model, fn),
            },
        )


def _form_text(ks: KernelSyntax, shape: Any) -> str:
    bound = ks.text(unparen(shape.bound))
    if shape.form == "loop":
        return "grid-stride loop"
    if shape.form == "return":
        return f"code after `if ({shape.var} >= {bound}) return;`"
    return f"`if ({shape.var} < {bound})`"


# 2. uncoalesced-thread-mapping


def index_form(ks: KernelSyntax, fn: Function, acc: Access) -> Any:
    """Return the linear form of a one-dimensional global access's index."""
    if len(acc.indices) != 1:
        return None
    node = _index_node(ks, fn, acc)
    return linear(ks, node) if node is not None else None


@matcher("swappable_thread_mapping")
def swappable_thread_mapping(ctx: MatchContext) -> Iterator[Region]:
    """Find strided global accesses of 2-D kernels that become contiguous or uniform when x and y are swapped."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    strided = [a for a in fn.accesses if a.space is MemorySpace.GLOBAL and a.pattern is AccessPattern.STRIDED]
    if not strided or b"threadIdx.y" not in ctx.model.text[fn.base : fn.base + fn.length]:
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    xvars = [v.name for v in ks.index_vars.values() if v.index.axis == "x"]
    yvars = [v.name for v in ks.index_vars.values() if v.index.axis == "y"]
    for acc in strided:
        form = index_form(ks, fn, acc)
        before, after = lane_class(form, "tid.x"), lane_class(form, "tid.y")
        if before != "strided" or after not in ("contiguous", "uniform") or form is None:
            continue
        verb = {AccessKind.READ: "read", AccessKind.WRITE: "written"}.get(acc.kind, "accessed")
        xname = next((v for v in xvars if v in acc.index_names), xvars[0] if xvars else "threadIdx.x")
        yname = next((v for v in yvars if v in acc.index_names), yvars[0] if yvars else "threadIdx.y")
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"mapping:{acc.base}:{acc.span[0]}",
            {
                "kernel": fn.name,
                "access": acc,
                "subscript": f"{acc.base}[{acc.index}]",
                "array": acc.base,
                "verb": verb,
                "stride": str(form["tid.x"]),
                "xvar": xname,
                "yvar": yname,
                "after": "contiguous" if after == "contiguous" else "the same element for the whole warp (a broadcast)",
                "_related": _related_launches(ctx.model, fn),
            },
        )


# 3. strided-transpose-access


@dataclass(frozen=True)
class TransposePair:
    """A global store whose value is a global load of the transposed element."""

    write: Access
    read: Access
    strided: Access
    assignment: Any


def transpose_pairs(ctx_model: FileModel, fn: Function, ks: KernelSyntax) -> list[TransposePair]:
    """Return `dst[...] = src[...]` pairs where one side is contiguous along x and the other along y."""
    out = []
    for w in fn.accesses:
        if w.space is not MemorySpace.GLOBAL or w.kind is not AccessKind.WRITE:
            continue
        node = ks.node.descendant_for_byte_range(*fn.span(w.span))
        parent = node.parent if node is not None else None
        while parent is not None and parent.type in ("parenthesized_expression",):
            parent = parent.parent
        if parent is None or parent.type != "assignment_expression":
            continue
        right = parent.child_by_field_name("right")
        if right is None:
            continue
        wf = index_form(ks, fn, w)
        for r in fn.accesses:
            if r.space is not MemorySpace.GLOBAL or r.kind is not AccessKind.READ or not _within(r.span, right, fn):
                continue
            rf = index_form(ks, fn, r)
            wx, wy, rx, ry = (
                lane_class(wf, "tid.x"),
                lane_class(wf, "tid.y"),
                lane_class(rf, "tid.x"),
                lane_class(rf, "tid.y"),
            )
            if (wx, wy, rx, ry) == ("strided", "contiguous", "contiguous", "strided"):
                out.append(TransposePair(w, r, w, parent))
            elif (wx, wy, rx, ry) == ("contiguous", "strided", "strided", "contiguous"):
                out.append(TransposePair(w, r, r, parent))
    return out


@matcher("transposed_global_copies")
def transposed_global_copies(ctx: MatchContext) -> Iterator[Region]:
    """Find transpose-like stores: one side walks rows along `threadIdx.x`, the other walks columns."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    if not any(a.space is MemorySpace.GLOBAL and a.pattern is AccessPattern.STRIDED for a in fn.accesses):
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    for pair in transpose_pairs(ctx.model, fn, ks):
        s = pair.strided
        other = pair.read if s is pair.write else pair.write
        yield Region(
            AnchorKind.ACCESS,
            fn,
            s.span,
            f"transpose:{s.base}:{s.span[0]}",
            {
                "kernel": fn.name,
                "pair": pair,
                "strided": f"{s.base}[{s.index}]",
                "contiguous": f"{other.base}[{other.index}]",
                "side": "written" if s is pair.write else "read",
                "other_side": "read" if s is pair.write else "written",
                "array": s.base,
            },
        )


# 4. readonly-data-without-restrict


@matcher("readonly_pointer_params")
def readonly_pointer_params(ctx: MatchContext) -> Iterator[Region]:
    """Find pointer parameters a kernel only reads that are not `const __restrict__` (and not read with `__ldg`)."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    for p in fn.params:
        if not p.is_pointer or p.is_reference or p.pointer_depth != 1 or (p.is_const and p.is_restrict):
            continue
        reads = [
            a for a in fn.accesses if a.base == p.name and a.space is MemorySpace.GLOBAL and a.kind is AccessKind.READ
        ]
        if not reads or is_written(fn, p.name) or all(a.via_ldg for a in reads):
            continue
        missing = [q for q, ok in (("const", p.is_const), ("__restrict__", p.is_restrict)) if not ok]
        yield Region(
            AnchorKind.PARAM,
            fn,
            p.span,
            f"readonly:{p.name}",
            {
                "kernel": fn.name,
                "param": p,
                "name": p.name,
                "missing": " and ".join(f"`{m}`" for m in missing),
                "reads": len(reads),
                "_related": tuple(
                    Related(f"launched here with `{', '.join(launch.args)}`", host.span(launch.span))
                    for host, launch in launches_of(ctx.model, fn.name)[:5]
                ),
            },
        )


# 5. repeated-global-tile-reads


@matcher("reused_global_reads_in_loop")
def reused_global_reads_in_loop(ctx: MatchContext) -> Iterator[Region]:
    """Find global loads in a loop that neighbouring threads repeat: a tile that shared memory could hold."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    cands = []
    for a in fn.accesses:
        if a.space is not MemorySpace.GLOBAL or a.kind is not AccessKind.READ or not a.loops or a.vector_cast:
            continue
        loop = fn.loops[a.loops[-1]]
        if (
            loop.var is None
            or loop.var not in a.index_names
            or a.pattern in (AccessPattern.INDIRECT, AccessPattern.UNKNOWN)
        ):
            continue
        cands.append((a, loop))
    if not cands:
        return
    two_d = b"threadIdx.y" in ctx.model.text[fn.base : fn.base + fn.length]
    if not two_d:
        # In a 1-D kernel only a stencil re-reads: a unit-step loop over a thread-contiguous index.
        cands = [(a, lp) for a, lp in cands if lp.step_value in (1, -1) and a.pattern is AccessPattern.CONTIGUOUS]
        if not cands:
            return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    axes = {v.index.axis for v in ks.index_vars.values()} if two_d else set()
    for acc, loop in cands:
        form = index_form(ks, fn, acc)
        if form is None or loop.var not in form:
            continue
        tids = [k for k in ("tid.x", "tid.y") if k in form]
        reason = None
        if len(tids) == 1 and {"x", "y"} <= axes:
            missing = "threadIdx.y" if tids[0] == "tid.x" else "threadIdx.x"
            reason = (
                f"every thread of the block with the same `{tids[0].replace('tid', 'threadIdx')}` reads the same "
                f"elements (the index does not depend on `{missing}`)"
            )
        elif loop.step_value in (1, -1) and any(form[t] == form[loop.var] for t in tids):
            reason = f"the thread next to each one reads the same element one iteration of `{loop.var}` later"
        if reason is None:
            continue
        yield Region(
            AnchorKind.ACCESS,
            fn,
            acc.span,
            f"tile:{acc.base}:{acc.span[0]}",
            {
                "kernel": fn.name,
                "access": acc,
                "load": f"{acc.base}[{acc.index}]",
                "array": acc.base,
                "loop": loop,
                "loop_label": loop_label(loop),
                "reason": reason,
                "_related": (Related(f"{loop_label(loop)} starts here", fn.span(loop.header_span)),),
            },
        )


# 6. fixed-size-grid-without-stride-loop and 7. one-element-per-thread


@matcher("one_element_per_thread")
def one_element_per_thread(ctx: MatchContext, factor: int = 1) -> Iterator[Region]:
    """Find kernels where each thread handles one element under `if (i < n)`, with `i` its global index."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or not fn.branches:
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    for shape in ks.elementwise:
        if shape.form == "loop":
            continue
        cond = shape.cond
        yield Region(
            AnchorKind.BRANCH,
            fn,
            (cond.start_byte - fn.base, cond.end_byte - fn.base),
            f"element:{shape.var}:{shape.stmt.start_byte - fn.base}",
            {
                "kernel": fn.name,
                "shape": shape,
                "index": shape.var,
                "bound": ks.text(shape.bound),
                "guard": " ".join(ks.text(shape.stmt).split())
                if shape.form == "return"
                else f"if ({shape.var} < {ks.text(unparen(shape.bound))})",
                "factor": factor,
                "_related": _related_launches(ctx.model, fn),
            },
        )


# 8. block-size-limits-occupancy


@dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of one compute capability (CUDA C++ Programming Guide, technical specifications)."""

    max_warps: int
    max_blocks: int
    smem_per_sm: int
    smem_per_block: int
    reserved_per_block: int
    registers: int = 65536


SM_LIMITS = {
    70: SmLimits(64, 32, 96 * 1024, 96 * 1024, 0),
    75: SmLimits(32, 16, 64 * 1024, 64 * 1024, 0),
    80: SmLimits(64, 32, 164 * 1024, 163 * 1024, 1024),
    86: SmLimits(48, 16, 100 * 1024, 99 * 1024, 1024),
    87: SmLimits(48, 16, 164 * 1024, 163 * 1024, 1024),
    89: SmLimits(48, 24, 100 * 1024, 99 * 1024, 1024),
    90: SmLimits(64, 32, 228 * 1024, 227 * 1024, 1024),
}


def sm_limits(sm: int) -> tuple[int, SmLimits]:
    """Return the limits of the closest known architecture at or below `sm`."""
    known = sorted(k for k in SM_LIMITS if k <= sm) or [min(SM_LIMITS)]
    return known[-1], SM_LIMITS[known[-1]]


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM for one block size, and what limits them."""

    threads: int
    warps_per_block: int
    blocks: int
    warps: int
    max_warps: int
    limiter: str
    detail: str
    smem: int | None

    @property
    def fraction(self) -> float:
        """Return the theoretical occupancy (resident warps over the maximum)."""
        return self.warps / self.max_warps


def occupancy(
    sm: int, threads: int, static_smem: int | None, dynamic_smem: int | None, min_blocks: int | None
) -> Occupancy:
    """Return the theoretical occupancy of a block size on an architecture (registers aside)."""
    arch, lim = sm_limits(sm)
    warps = math.ceil(threads / 32)
    by_threads = lim.max_warps // warps if warps else 0
    limits = [(by_threads, "threads"), (lim.max_blocks, "blocks")]
    smem = None
    if static_smem is not None and dynamic_smem is not None:
        smem = static_smem + dynamic_smem
        if smem > 0:
            limits.append((lim.smem_per_sm // (smem + lim.reserved_per_block), "shared"))
    blocks, limiter = min(limits, key=lambda t: t[0])
    resident = blocks * warps
    if limiter == "threads":
        detail = (
            f"{threads}-thread blocks are {warps} warps each; {blocks} of them fit the {lim.max_warps} warps "
            f"an sm_{arch} SM holds"
        )
    elif limiter == "blocks":
        detail = (
            f"an sm_{arch} SM holds at most {lim.max_blocks} blocks, and {lim.max_blocks} blocks of {threads} "
            f"threads are only {resident} warps"
        )
    else:
        detail = (
            f"each block needs {smem} bytes of shared memory plus {lim.reserved_per_block} reserved, so only "
            f"{blocks} fit the {lim.smem_per_sm // 1024} KB of an sm_{arch} SM"
        )
    if min_blocks:
        detail += f"; `__launch_bounds__` asks for {min_blocks} resident blocks"
    return Occupancy(threads, warps, blocks, resident, lim.max_warps, limiter, detail, smem)


def static_shared_bytes(fn: Function) -> int | None:
    """Return the kernel's static shared memory in bytes (None when a size is not known)."""
    total = 0
    for s in fn.shared:
        if s.is_extern:
            continue
        if s.size_bytes is None:
            return None
        total += s.size_bytes
    return total


@matcher("occupancy_limited_by_block")
def occupancy_limited_by_block(ctx: MatchContext, threshold: float = 0.5) -> Iterator[Region]:
    """Find kernels whose launch block size and shared memory keep theoretical occupancy low."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    static = static_shared_bytes(fn)
    bounds = fn.launch_bounds
    min_blocks = None
    if bounds and len(bounds) > 1 and bounds[1].strip().isdigit():
        min_blocks = int(bounds[1])
    sizes: dict[tuple[int, int | None], list[Any]] = {}
    for host, launch in launches_of(ctx.model, fn.name):
        if launch.block_value is None:
            continue
        threads = math.prod(launch.block_value)
        sizes.setdefault((threads, launch.smem_value), []).append((host, launch))
    if not sizes and bounds and bounds[0].strip().isdigit():
        sizes[(int(bounds[0]), 0)] = []
    worst = None
    for (threads, dyn), sites in sizes.items():
        if threads <= 0 or threads > 1024:
            continue
        occ = occupancy(ctx.target_sm, threads, static, dyn, min_blocks)
        granular = occ.limiter in ("threads", "blocks") and occ.fraction < 1
        flagged = occ.fraction <= threshold or granular or threads % 32
        if flagged and (worst is None or occ.fraction < worst[0].fraction):
            worst = (occ, sites)
    if worst is None:
        return
    occ, sites = worst
    partial = f"; the last warp of each block has only {occ.threads % 32} active threads" if occ.threads % 32 else ""
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"occupancy:{fn.name}:{occ.threads}",
        {
            "kernel": fn.name,
            "occupancy": occ,
            "threads": occ.threads,
            "blocks": occ.blocks,
            "warps": occ.warps,
            "max_warps": occ.max_warps,
            "percent": round(100 * occ.fraction),
            "detail": occ.detail + partial,
            "sm": sm_limits(ctx.target_sm)[0],
            "_related": tuple(
                Related(f"launched with {occ.threads} threads per block here", host.span(launch.span))
                for host, launch in sites[:5]
            ),
        },
    )


# 9. missing-launch-bounds


@matcher("kernels_without_launch_bounds")
def kernels_without_launch_bounds(ctx: MatchContext) -> Iterator[Region]:
    """Find kernels without `__launch_bounds__` that this file launches."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or fn.launch_bounds is not None:
        return
    launches = launches_of(ctx.model, fn.name)
    if not launches:
        return
    sizes = sorted({math.prod(launch.block_value) for _, launch in launches if launch.block_value is not None})
    threads = sizes[0] if len(sizes) == 1 else None
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"bounds:{fn.name}",
        {
            "kernel": fn.name,
            "threads": threads if threads is not None else "?",
            "sizes": sizes,
            "count": len(launches),
            "launches": "the launch" if len(launches) == 1 else f"all {len(launches)} launches",
            "use": "uses" if len(launches) == 1 else "use",
            "_related": tuple(
                Related(f"launched with `{launch.block}` threads per block here", host.span(launch.span))
                for host, launch in launches[:5]
            ),
        },
    )


# 10. synchronous-global-to-shared-copy


@dataclass(frozen=True)
class SharedCopy:
    """`tile[...] = g[...];` as its own statement: a global load staged through a register into shared memory."""

    statement: Any
    shared: Access
    source: Access


def copy_runs(model: FileModel, fn: Function, ks: KernelSyntax) -> list[tuple[list[SharedCopy], Any]]:
    """Return each run of global-to-shared copy statements directly followed by `__syncthreads();`."""
    by_span = {a.span: a for a in fn.accesses}
    out = []
    for call in fn.calls:
        if call.name != "__syncthreads":
            continue
        node = ks.node.descendant_for_byte_range(*fn.span(call.span))
        while node is not None and node.type != "expression_statement":
            node = node.parent
        if node is None or node.parent is None or node.parent.type != "compound_statement":
            continue
        run: list[SharedCopy] = []
        prev = node.prev_named_sibling
        while prev is not None:
            if prev.type == "comment":
                prev = prev.prev_named_sibling
                continue
            copy = _as_copy(fn, prev, by_span)
            if copy is None:
                break
            run.insert(0, copy)
            prev = prev.prev_named_sibling
        if run:
            out.append((run, node))
    return out


def _as_copy(fn: Function, stmt: Any, by_span: dict[tuple[int, int], Access]) -> SharedCopy | None:
    if stmt.type != "expression_statement" or stmt.named_child_count != 1:
        return None
    expr = stmt.named_children[0]
    if expr.type != "assignment_expression" or expr.child_by_field_name("operator").type != "=":
        return None
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    if left is None or right is None or right.type != "subscript_expression":
        return None
    dst = by_span.get((left.start_byte - fn.base, left.end_byte - fn.base))
    src = by_span.get((right.start_byte - fn.base, right.end_byte - fn.base))
    if dst is None or src is None:
        return None
    if dst.space is not MemorySpace.SHARED or src.space is not MemorySpace.GLOBAL or src.kind is not AccessKind.READ:
        return None
    return SharedCopy(stmt, dst, src)


@matcher("global_to_shared_copies")
def global_to_shared_copies(ctx: MatchContext) -> Iterator[Region]:
    """Find element copies from global to shared memory followed by `__syncthreads()` (one region per kernel)."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL or not fn.shared or not any(c.name == "__syncthreads" for c in fn.calls):
        return
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return
    runs = copy_runs(ctx.model, fn, ks)
    if not runs:
        return
    copies = [c for run, _ in runs for c in run]
    first = copies[0]
    more = len(copies) - 1
    yield Region(
        AnchorKind.ACCESS,
        fn,
        first.shared.span,
        f"async:{fn.name}",
        {
            "kernel": fn.name,
            "runs": tuple(runs),
            "copies": tuple(copies),
            "copy": f"{ctx.model.slice(fn, first.shared.span)} = {ctx.model.slice(fn, first.source.span)}",
            "more": f" (and {more} more cop{'y' if more == 1 else 'ies'} in `{fn.name}`)" if more else "",
            "count": len(copies),
        },
    )


# 11. warp-divergent-branch


@matcher("lane_divergent_branches")
def lane_divergent_branches(ctx: MatchContext) -> Iterator[Region]:
    """Find branches whose condition splits the lanes of every warp (`threadIdx.x % 2 == 0`)."""
    fn = ctx.function
    if fn.kind is FunctionKind.HOST:
        return
    for branch in fn.branches:
        pattern = branch.lane_pattern
        if pattern is None and branch.thread_dependent and "%" in branch.condition:
            pattern = _runtime_lane_period(ctx, fn, branch)
        if pattern is None:
            continue
        yield Region(
            AnchorKind.BRANCH,
            fn,
            branch.condition_span,
            f"lanes:{branch.span[0]}",
            {"branch": branch, "condition": branch.condition, "pattern": pattern},
        )


def _runtime_lane_period(ctx: MatchContext, fn: Function, branch: Any) -> str | None:
    """Describe `tid % p == 0` with a runtime period `p` (a reduction's `2 * s`): it splits warps while p < 32."""
    ks = kernel_syntax(ctx.model, fn)
    if ks is None:
        return None
    cond = ks.node.descendant_for_byte_range(*fn.span(branch.condition_span))
    stack = [cond] if cond is not None else []
    while stack:
        n = stack.pop()
        if n.type == "binary_expression" and n.child_by_field_name("operator").type == "%":
            left = linear(ks, n.child_by_field_name("left"))
            right = n.child_by_field_name("right")
            period = linear(ks, right)
            if left and "tid.x" in left and period is not None and not any(k.startswith("tid.") for k in period):
                return f"lanes alternate with period `{ks.text(unparen(right))}` while it is below 32"
        stack.extend(n.named_children)
    return None
