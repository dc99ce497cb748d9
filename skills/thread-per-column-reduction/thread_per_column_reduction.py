"""Thread-per-column reduction: a thread that reduces a whole column gets the warps of a block to share it.

The pattern: each thread computes one output `i` (the global thread index) by a loop over `j` whose loads are
already coalesced across threads, `y[i] = sum_j A[j * M + i] * x[j]` (a column-major or transposed GEMV, column
sums). Its loads are not the problem; its parallelism is: with M outputs there are only M threads, each a chain of
K dependent iterations, so a GPU with more than a hundred SMs holds a few warps per SM and a few loads in flight per
warp. An 8192 x 8192 column-major GEMV on the H200 (8192 threads, 32 blocks of 256) moves 268 MB in 0.52 ms, about
517 GB/s or a ninth of the memory's bandwidth (bench/results/card_evidence-2026-11-29.md).

The recogniser reads what the kernel computes, through the row-cooperative-reduction card's kernel model (its
`_Syntax` polynomials, loop headers, loop scan and accumulator classes): the output index is an expression whose
value is the global thread index of a 1-D launch, `blockIdx.x * blockDim.x + threadIdx.x`, or of a 1-D grid of
2-D blocks, `(blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x` (in any order, through locals);
one guard compares it with a bound that is the same for every thread (`if (i < M) { ... }` or
`if (i >= M) return;`); every loop after the guard is a loop over `j` (its start free of the thread index) whose
carried values are sums, maxima or minima and whose global loads are contiguous (or uniform) across adjacent
threads, as the kernel model classifies them (a loop whose loads are a row apart is the row-cooperative card's);
an array that a per-output statement writes is touched nowhere else (only slice 0 writes it, after the loops).

The rewrite, with S slices (warps) per block and 32 outputs per block:

1. the output index becomes `ww_out = blockIdx.x * 32 + threadIdx.x % 32`; warp `ww_slice = threadIdx.x / 32`
   of the block takes the iterations `j = start + ww_slice, start + ww_slice + S, ...` of every loop over `j`, so
   the 32 lanes of a warp still read 32 consecutive elements (one 128-byte line) at each step, and S times as many
   warps share the work;
2. after each loop, each accumulator is combined across the S slices through shared memory (`ww_cs_reduce`:
   slot [slice][lane], a barrier, then every slice reads the S values of its lane in slice order), so every slice
   holds the output's value and the statements after the loop read it as before; a loop that stores is followed
   by `__syncthreads()`;
3. per-output stores and calls with effects run on slice 0 (`if (ww_slice == 0) { ... }`);
4. the barriers need every thread of the block: a block whose 32 outputs are all below the guard's bound runs
   the cooperative form (the guard is then true for all its threads, so no thread leaves before a barrier); the
   last, partial block runs the kernel's own statements on slice 0, one thread per output, as before;
5. the launch becomes ceil(threads covered / 32) blocks of 32 S threads (host launches in the file; a problem
   file's through `LaunchChange`s).

Exactness: maxima and minima are exact. A sum over `j` becomes S strided partial sums added in slice order, a
re-association: results change within the rounding of a float sum of K terms (the same n * 2^-24 * sum|x| bound as
the sequential sum). The partial block computes exactly what the kernel did. Hence the fix is `unsafe`, as the
row-cooperative sums are; the gate compares within the problem's tolerance. The rewrite assumes that distinct
pointer parameters do not overlap at elements the kernel writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.expr.poly import Poly
from warpwise.analyzers.facts import function_node
from warpwise.analyzers.facts_memory import launch_syntax, node_text, squash
from warpwise.analyzers.model import AccessKind, AccessPattern, FileModel, Function, FunctionKind, MemorySpace
from warpwise.skills.library import card_rules
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import CheckContext, MatchContext, Region, Verdict, check, holds, matcher, unknown
from warpwise.skills.rewrite import Edit, RewriteContext, apply_edits
from warpwise.verify.launch import LaunchChange

Node = Any

_ROW_1D = Poly({("blockDim.x", "blockIdx.x"): 1, ("threadIdx.x",): 1})
_ROW_2D = Poly({("blockDim.x", "blockDim.y", "blockIdx.x"): 1, ("blockDim.x", "threadIdx.y"): 1, ("threadIdx.x",): 1})
_BUILTIN = re.compile(r"^(threadIdx|blockIdx|blockDim|gridDim)\.([xyz])$")
# Slices (warps) per block a search may choose from; the anchor's default is the first.
SLICE_CHOICES = (32, 16, 8)


def _rc() -> Any:
    """Return the row-cooperative-reduction card's rules module, whose kernel reading this card shares."""
    return card_rules("row-cooperative-reduction")


@dataclass(frozen=True)
class ColumnKernel:
    """A kernel whose threads each reduce one column (spans are the user's)."""

    kernel: str
    out: str  # the output index as written (for messages)
    out_spans: tuple[tuple[int, int], ...]  # expressions whose value is the output index
    bound: str  # the guard's bound, as written
    loops: tuple[Any, ...]  # the row-cooperative card's `RowLoop`s
    per_output: tuple[tuple[int, int], ...]  # statements with effects (run on slice 0)
    body: tuple[int, int]  # the kernel body's span, braces included
    fn_start: int

    @property
    def summary(self) -> str:
        """Return the reductions in words: `sum of `s``."""
        parts = [f"{r.op} of `{r.var}`" for lp in self.loops for r in lp.reductions]
        return ", ".join(parts) if parts else "elementwise passes"


class _Reject(Exception):
    """The kernel is not a thread-per-column reduction; the message says why."""


def _out_spans(s: Any) -> list[Node]:
    """Return the maximal expressions whose value is the global thread index (1-D, or a 1-D grid of 2-D blocks)."""
    found: list[Node] = []
    stack = [s.body]
    while stack:
        n = stack.pop()
        if n.type in ("binary_expression", "parenthesized_expression", "cast_expression") and re.search(
            r"\b(threadIdx|blockIdx)\s*\.\s*[xy]\b", s.text(n)
        ):
            p = s.poly(n)
            if p in (_ROW_1D, _ROW_2D):
                found.append(n)
                continue
        stack.extend(n.named_children)
    return found


def _guard(s: Any, st: Node, out: Poly) -> tuple[str, Node, Node | None] | None:
    """Read `if (i < M) {...}` (kind "block") or `if (i >= M) return;` ("return"): (kind, bound, body)."""
    rc = _rc()
    if st.type != "if_statement" or st.child_by_field_name("alternative") is not None:
        return None
    cond = rc._condition(st.child_by_field_name("condition"))
    if cond is None or cond.type != "binary_expression":
        return None
    op = s.text(cond.child_by_field_name("operator"))
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
    if s.poly(right) == out and op in flip:
        left, right, op = right, left, flip[op]
    if s.poly(left) != out or op not in ("<", ">="):
        return None
    if re.search(r"\b(threadIdx|blockIdx|blockDim|gridDim)\b", s.text(right)) or s.names(right) & set(s.defs):
        return None  # The bound must be the same for every thread: parameters, macros, constants.
    then = st.child_by_field_name("consequence")
    if op == "<":
        return "block", right, then
    body = rc._statements(then)
    if len(body) == 1 and body[0].type == "return_statement" and body[0].named_child_count == 0:
        return "return", right, None
    return None


def recognise(model: FileModel, fn: Function) -> tuple[ColumnKernel | None, str]:
    """Return the column kernel found in `fn` (or None) and, when none, why not in one line."""
    if fn.kind is not FunctionKind.KERNEL:
        return None, "not a kernel"
    node = function_node(model, fn)
    if node is None or node.child_by_field_name("body") is None:
        return None, "the kernel has no body"
    if fn.shared:
        return None, f"`{fn.name}` already uses shared memory"
    rc = _rc()
    s = rc._Syntax(model, fn, node)
    if re.search(r"__syncthreads|__syncwarp|gridDim", s.text(s.body)):
        return None, f"`{fn.name}` synchronises its threads or strides over the grid"
    try:
        ck = _recognise(rc, s)
    except (rc._Reject, _Reject) as exc:
        return None, str(exc)
    if not _coalesced(fn, ck):
        return None, f"the loads of `{fn.name}`'s loops are not all contiguous across adjacent threads"
    return ck, ""


def _recognise(rc: Any, s: Any) -> ColumnKernel:
    outs = _out_spans(s)
    if not outs:
        raise _Reject("no expression of the kernel is the global thread index")
    out = s.poly(outs[0])
    if any(s.poly(n) != out for n in outs):
        raise _Reject("the kernel computes the thread index in two ways")
    spans = [(n.start_byte, n.end_byte) for n in outs]
    for n in s.within(("field_expression",)):
        if _BUILTIN.match(squash(s.text(n))) is None or rc._inside(n, spans):
            continue
        local = rc._hoisted(s, n)
        if local is None or not all(
            rc._inside(u, spans) or rc._in_decl(s, u, local)
            for u in rc._walk(s.body)
            if u.type == "identifier" and s.text(u) == local
        ):
            raise _Reject(f"`{s.text(n)}` is used for something other than the output index")
    stmts = rc._statements(s.body)
    work: list[Node] | None = None
    bound: Node | None = None
    for k, st in enumerate(stmts):
        g = _guard(s, st, out)
        if g is not None:
            kind, bound, then = g
            rest = stmts[k + 1 :]
            if kind == "block":
                if any(r.type != "comment" for r in rest):
                    raise _Reject("statements follow the guarded block")
                work = rc._statements(then)
            else:
                work = rest
            break
        if st.type != "declaration" or rc._writes_memory(s, st):
            raise _Reject("the kernel does more than declare locals before its guard on the output index")
    if work is None or bound is None:
        raise _Reject("no guard compares the output index with a bound the same for every thread")
    outer: set[str] = set(s.defs)
    loops: list[Any] = []
    per_output: list[Node] = []

    def walk(stmts: list[Node]) -> None:
        prev = None
        for st in stmts:
            t = st.type
            if t in ("for_statement", "while_statement"):
                head = rc._loop_header(s, st, prev)
                if head is None or not rc._is_column_loop(s, head):
                    raise _Reject("a loop after the guard is not a loop over the column")
                if st.parent is None or st.parent.type != "compound_statement":
                    raise _Reject("a loop over the column is not inside braces")
                lp = rc._column_loop(s, st, head, outer)
                if any(r.op not in ("sum", "max", "min") for r in lp.reductions):
                    raise _Reject("a loop over the column carries a value that is not a sum, maximum or minimum")
                loops.append(lp)
            elif t in ("declaration", "expression_statement", "if_statement"):
                inner = ("for_statement", "while_statement", "do_statement", "return_statement")
                if any(n.type in inner for n in rc._walk(st)):
                    raise _Reject("a branch after the guard holds a loop or a return")
                if t == "declaration" and any(
                    c.type == "array_declarator" for d in st.children_by_field_name("declarator") for c in rc._walk(d)
                ):
                    raise _Reject("the kernel declares a local array")
                if rc._writes_memory(s, st):
                    per_output.append(st)
            elif t == "compound_statement":
                walk(rc._statements(st))
            elif t != "comment":
                raise _Reject(f"the kernel has a `{t.replace('_statement', '')}` statement after its guard")
            prev = st

    walk(work)
    if not loops:
        raise _Reject("no loop walks a column")
    # An array a per-output statement writes is touched nowhere else: only slice 0 writes it, after the loops.
    spans_out = [(n.start_byte, n.end_byte) for n in per_output]
    for st in per_output:
        for n in rc._walk(st):
            target = None
            if n.type == "assignment_expression":
                target = n.child_by_field_name("left")
            elif n.type == "update_expression":
                target = n.child_by_field_name("argument")
            e = s.element(target) if target is not None else None
            if e is None:
                continue
            for u in rc._walk(s.body):
                if u.type == "identifier" and s.text(u) in rc._aliases(s, e[0]) and not rc._inside(u, spans_out):
                    raise _Reject(f"`{e[0]}` holds per-output results and is also read or written by the loops")
    return ColumnKernel(
        kernel=s.fn.name,
        out=squash(s.text(outs[0])),
        out_spans=tuple(spans),
        bound=s.text(bound),
        loops=tuple(loops),
        per_output=tuple((n.start_byte, n.end_byte) for n in per_output),
        body=(s.body.start_byte, s.body.end_byte),
        fn_start=rc._definition_start(s),
    )


def _coalesced(fn: Function, ck: ColumnKernel) -> bool:
    """Whether every global load of the loops is contiguous or uniform across adjacent threads (one at least
    contiguous), as the kernel model classifies it: a column walk, not a row walk."""
    spans = [lp.stmt for lp in ck.loops]
    reads = [
        a
        for a in fn.accesses
        if a.space is MemorySpace.GLOBAL
        and a.kind is AccessKind.READ
        and any(lo <= fn.base + a.span[0] < hi for lo, hi in spans)
    ]
    return any(a.pattern is AccessPattern.CONTIGUOUS for a in reads) and all(
        a.pattern in (AccessPattern.CONTIGUOUS, AccessPattern.UNIFORM) for a in reads
    )


HELPERS = """#ifndef WARPWISE_COLUMN_SLICES_HELPERS
#define WARPWISE_COLUMN_SLICES_HELPERS
// warpwise thread-per-column-reduction: combine one value per slice (warp) of a block across its SLICES slices,
// lane by lane, through shared memory; every slice gets the same result, added in slice order.
struct ww_cs_add {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct ww_cs_max {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b > a ? b : a; }
};
struct ww_cs_min {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};
template <int SLICES, class T, class Op> __device__ __forceinline__ T ww_cs_reduce(T v, Op op) {
  __shared__ T ww_cs_part[SLICES][32];
  __syncthreads();
  ww_cs_part[threadIdx.x / 32][threadIdx.x % 32] = v;
  __syncthreads();
  v = ww_cs_part[0][threadIdx.x % 32];
#pragma unroll
  for (int s = 1; s < SLICES; ++s) v = op(v, ww_cs_part[s][threadIdx.x % 32]);
  return v;
}
#endif
"""


def _splice(data: bytes, lo: int, hi: int, edits: list[Edit]) -> str:
    """Return data[lo:hi] with edits inside that range applied."""
    local = [Edit(e.start - lo, e.end - lo, e.text) for e in edits]
    return apply_edits(data[lo:hi], local).decode("utf-8", "replace")


def generate_edits(ck: ColumnKernel, slices: int, data: bytes) -> list[Edit]:
    """Return the edits that turn the kernel into its sliced form (launches not included)."""
    rc = _rc()
    edits: list[Edit] = []
    if b"WARPWISE_COLUMN_SLICES_HELPERS" not in data:
        at = rc._annotation_start(data, ck.fn_start)
        edits.append(Edit(at, at, HELPERS + "\n"))
    lo, hi = ck.body[0] + 1, ck.body[1] - 1
    names = [Edit(a, b, "ww_out") for a, b in ck.out_spans]
    fast = list(names)
    for a, b in ck.per_output:
        fast.append(Edit(a, b, f"{{ if (ww_slice == 0) {{ {data[a:b].decode('utf-8', 'replace')} }} }}"))
    for i, lp in enumerate(ck.loops):
        start = data[lp.start[0] : lp.start[1]].decode("utf-8", "replace")
        fast.append(Edit(lp.start[0], lp.start[1], f"({start}) + ww_slice"))
        fast.append(Edit(lp.step[0], lp.step[1], f"{lp.var} += {slices}"))
        indent = rc._indent_at(data, lp.stmt[0])
        before, after = [], []
        for r in lp.reductions:
            red = f"ww_cs_reduce<{slices}>"
            if r.op == "sum" and not r.zero_start:
                before.append(f"const auto ww_start{i}_{r.var} = {r.var}; {r.var} = 0;")
                after.append(f"{r.var} = ww_start{i}_{r.var} + {red}({r.var}, ww_cs_add());")
            else:
                fn = {"sum": "add"}.get(r.op, r.op)
                after.append(f"{r.var} = {red}({r.var}, ww_cs_{fn}());")
        if lp.stores:
            after.append("__syncthreads();")
        if before:
            fast.append(Edit(lp.stmt[0], lp.stmt[0], "".join(f"{b}\n{indent}" for b in before)))
        if after:
            fast.append(Edit(lp.stmt[1], lp.stmt[1], "".join(f"\n{indent}{a}" for a in after)))
    body = (
        f"\n  // warpwise thread-per-column-reduction: {slices} warps of a block share each of its 32 outputs "
        f"({ck.summary}), launched with blocks of {32 * slices} threads.\n"
        "  const unsigned ww_slice = threadIdx.x / 32u;\n"
        "  const unsigned ww_out = blockIdx.x * 32u + threadIdx.x % 32u;\n"
        f"  if ((long long)blockIdx.x * 32 + 32 <= (long long)({ck.bound})) {{\n"
        "  // Every output of this block is below the bound: the guard holds for all its threads.\n"
        f"{_splice(data, lo, hi, sorted(fast))}\n"
        "  } else if (ww_slice == 0) {\n"
        "  // The last, partial block: one thread per output, the kernel's own statements.\n"
        f"{_splice(data, lo, hi, sorted(names))}\n"
        "  }\n"
    )
    edits.append(Edit(lo, hi, body))
    return edits


def _launch_texts(grid: str, block: str, slices: int) -> tuple[str, str]:
    """Return the grid and block of a host launch: the same threads covered, 32 outputs per block."""
    b = f"dim3({block})"
    threads = f"(unsigned long long)dim3({grid}).x * {b}.x * {b}.y * {b}.z"
    return f"dim3((unsigned)(({threads} + 31) / 32), dim3({grid}).y, dim3({grid}).z)", f"dim3({32 * slices})"


def launch_changes(slices: int) -> tuple[LaunchChange, ...]:
    """Return the launch change for a problem file: the threads the old launch covered, 32 outputs per block."""
    covered = "value * g[1][0] * g[1][1] * g[1][2]"
    return (
        LaunchChange("grid", 0, f"-(-({covered}) // 32)", "grid.x = threads covered / 32"),
        LaunchChange("block", 0, str(32 * slices), f"block.x = {32 * slices}"),
        LaunchChange("block", 1, "1", "block.y = 1"),
        LaunchChange("block", 2, "1", "block.z = 1"),
    )


def _slices(args: dict[str, Any]) -> int:
    return int(args.get("slices", SLICE_CHOICES[0]))


def problem_launch_changes(matches: list[Any]) -> tuple[LaunchChange, ...] | None:
    """Return the launch change of the card's rewrite for a problem file's launch of the first match's kernel."""
    if not matches:
        return None
    return launch_changes(_slices(dict(matches[0].card.header.anchor.args)))


@matcher("thread_per_column_reduction")
def thread_per_column_reduction(ctx: MatchContext, **_args: Any) -> Iterator[Region]:
    """Find kernels in which each thread reduces a whole column with loads coalesced across threads."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    ck, _ = recognise(ctx.model, fn)
    if ck is None:
        return
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"thread-per-column:{fn.name}",
        {"kernel": fn.name, "column_kernel": ck, "out": ck.out, "what": ck.summary, "bound": ck.bound},
    )


@check("column_launches_rewritable")
def column_launches_rewritable(ctx: CheckContext) -> Verdict:
    """Hold when every launch of the kernel in the file can be rewritten to 32 outputs per block (or there is none)."""
    ck: ColumnKernel | None = ctx.fact("column_kernel")
    if ck is None:
        return unknown("no column kernel was recognised here")
    if _rc()._annotation_tokens(ctx.model.text, ck.fn_start):
        return unknown(f"the `// warpwise:` annotation of `{ck.kernel}` gives its launch; the rewrite does not edit it")
    for host, launch in ctx.model.launches_of(ck.kernel):
        if launch_syntax(ctx.model, host, launch) is None:
            return unknown(f"the launch of `{ck.kernel}` in `{host.name}` cannot be rewritten")
    return holds(f"every launch of `{ck.kernel}` in this file can be rewritten to 32 outputs per block")


def rewrite(ctx: RewriteContext) -> list[Edit] | None:
    """Let the warps of a block share each column, and rewrite the kernel's launches in the file."""
    ck: ColumnKernel | None = ctx.fact("column_kernel")
    if ck is None:
        ck, _ = recognise(ctx.model, ctx.function)
        if ck is None:
            return None
    slices = _slices(ctx.args)
    if slices not in (2, 4, 8, 16, 32):
        return None
    if ctx.function.launch_bounds is not None:
        return None  # A kernel with its own launch bounds may not take the new block size.
    if _rc()._annotation_tokens(ctx.data, ck.fn_start):
        return None  # An annotation's launch would keep the old geometry.
    edits = generate_edits(ck, slices, ctx.data)
    for host, launch in ctx.model.launches_of(ck.kernel):
        ls = launch_syntax(ctx.model, host, launch)
        if ls is None:
            return None
        grid, block = _launch_texts(node_text(ctx.model, ls.grid), node_text(ctx.model, ls.block), slices)
        edits.append(Edit(ls.grid.start_byte, ls.grid.end_byte, grid))
        edits.append(Edit(ls.block.start_byte, ls.block.end_byte, block))
    return sorted(edits)


def rewrite_source(model: FileModel, kernel: str, slices: int = SLICE_CHOICES[0]) -> bytes | None:
    """Return the file's text with one kernel rewritten (None when it is not a recognised column kernel)."""
    fn = next((f for f in model.functions if f.name == kernel and f.kind is FunctionKind.KERNEL), None)
    if fn is None:
        return None
    ck, _ = recognise(model, fn)
    if ck is None:
        return None
    region = Region(AnchorKind.KERNEL, fn, fn.name_span, f"thread-per-column:{kernel}", {"column_kernel": ck})
    edits = rewrite(RewriteContext(model, fn, region, {"slices": slices}))
    if edits is None:
        return None
    return apply_edits(model.text, edits)


def search_variants(matches: list[Any]) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """Return the search's parameter choices: (label, rewrite arguments, launch steps for a problem file).

    The launch is one `("changes", launch changes)` step: the threads the launch covered (grid.x times the whole
    block, which may have two dimensions), 32 outputs a block."""
    return [
        (f"{s} warps per column block", {"slices": s}, [("changes", launch_changes(s), (32 * s, 1, 1))])
        for s in SLICE_CHOICES
    ]


__all__ = [
    "HELPERS",
    "SLICE_CHOICES",
    "ColumnKernel",
    "column_launches_rewritable",
    "generate_edits",
    "launch_changes",
    "problem_launch_changes",
    "recognise",
    "rewrite",
    "rewrite_source",
    "search_variants",
    "thread_per_column_reduction",
]
