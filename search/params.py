"""Parameter actions: block size, unroll factor and elements per thread, offered only where set exactly.

- **Block size.** Offered when the version's block is known exactly (a literal block in the problem file's
  `launch`, the annotation's `block=`, or one launch-site value) and every place that depends on it can be
  rewritten: the kernel may not contain the old size as a bare number; a `#define` of it whose name says it is
  a block size (`BLOCK`, `THREADS`, `TPB`, ...) is rewritten with it, as is a literal `__launch_bounds__`.
  Along each dimension where the kernel computes a global index (`blockIdx.x * blockDim.x`), the grid is scaled
  to keep the number of threads; elsewhere (a block per row) it is kept. For problem files the geometry change is
  a launch override; for annotations the `block=` and `grid=(N+B-1)/B` tokens are rewritten; for host launches
  only a block given by the rewritten macro qualifies. Sizes are powers of two (tree reductions halve them) with
  at most 1,024 threads; 2-D blocks are offered only to kernels without a block-size macro.
- **Unroll factor.** `#pragma unroll N` (N = 2, 4, 8) on every `for` loop of the kernel with a run-time trip
  count and no pragma, or replacing a numeric pragma; unrolling never changes results.
- **Elements per thread.** The `one-element-per-thread` card's rewrite with a factor of 2 or 8 (the card itself
  uses 4), with the grid shrunk by the same factor (at the launch sites, or by a launch override).

- **Contraction tiles.** For a kernel the untiled-contraction card recognises as a naive matrix multiply, its
  rewrite with each tile shape of the card's `TILE_CHOICES` (BM x BN outputs per block, BK-deep shared tiles,
  TM x TN outputs per thread, launch bounds; two stages, double-buffered through registers): every variant is
  exact (bit-identical to the naive loop, out-of-range tile entries are zeros) for any M, N and K. The grid of
  output tiles is the rewrite's own: rewritten at the launch sites in the file, or a launch override for a
  problem file's `launch(inputs)` (annotated kernels are not offered it: their `grid=` is not rewritten). The
  prior is the card's (its evidence, or the ranking model's prediction), lowered by `TILE_DECAY` per place in
  the card's order of measured tile shapes, so the search tries the measured best first. Half and bfloat16
  operands are offered the card's tensor-core shapes first (`MMA_CHOICES`, `param:tiles=mma...`); float operands
  its TF32 shapes last, and only when the problem file's literal `tolerance = (rtol, atol)` is at least the
  card's `TF32_TOLERANCE` (`choices_for`). Both change the order of the float sums (unsafe, within the stated
  tolerance: the action's reason says which), and the gate checks each.

Vector widths are not offered separately: the vectorization card always uses 16-byte vectors and the tiling
cards take the block's size, which the block-size action sets.
"""

from __future__ import annotations

import re

from warpwise.analyzers.model import FileModel, Function
from warpwise.search.actions import Action, ActionKind, ready
from warpwise.search.context import SearchContext, strip_comments
from warpwise.search.version import LaunchOverride, Transform, Version
from warpwise.verify.spec import problem_tolerance

BLOCK_SIZES = (64, 128, 256, 512, 1024)
BLOCK_SHAPES_2D = ((32, 8), (16, 16), (32, 16), (32, 32), (64, 4), (16, 8), (8, 32))
UNROLL_FACTORS = (4, 2, 8)
ELEMENT_FACTORS = (2, 8)
BLOCK_PRIOR = 0.3
UNROLL_PRIOR = 0.25
ELEMENTS_PRIOR = 0.3
CONTRACTION_CARD = "untiled-contraction"
TILE_DECAY = 0.04
_BLOCKISH = re.compile(r"BLOCK|THREAD|TPB|NT$|^NT|BS$|^BS|BDIM|WG", re.I)
_DIMS = "xyz"


def _edit(text: bytes, edits: list[tuple[int, int, str]]) -> str | None:
    """Apply (start, end, text) byte edits; None when they overlap."""
    out = bytearray()
    pos = 0
    for start, end, new in sorted(edits):
        if start < pos:
            return None
        out += text[pos:start] + new.encode()
        pos = end
    out += text[pos:]
    return out.decode("utf-8", "surrogateescape")


def _body(model: FileModel, fn: Function) -> str:
    """Return the kernel's text with comments blanked."""
    return strip_comments(model.text[fn.base : fn.base + fn.length].decode("utf-8", "replace"))


def scaled_dims(body: str) -> tuple[bool, bool, bool]:
    """Return, per dimension, whether the kernel computes a global index from it (so the grid must scale)."""
    out = []
    for d in _DIMS:
        pat = rf"blockIdx\s*\.\s*{d}\s*\*\s*blockDim\s*\.\s*{d}|blockDim\s*\.\s*{d}\s*\*\s*blockIdx\s*\.\s*{d}"
        out.append(re.search(pat, body) is not None)
    return out[0], out[1], out[2]


def crossed_dims(body: str) -> bool:
    """Return whether the kernel multiplies a block index by the block size of another axis (`blockIdx.y *
    blockDim.x`): its grid axes do not pair with its block axes, so scaling the grid per axis would not keep the
    threads covering the same work (the search's block-size action then offers nothing)."""
    for a in _DIMS:
        for b in _DIMS:
            if a == b:
                continue
            pat = rf"blockIdx\s*\.\s*{a}\s*\*\s*blockDim\s*\.\s*{b}|blockDim\s*\.\s*{b}\s*\*\s*blockIdx\s*\.\s*{a}"
            if re.search(pat, body):
                return True
    return False


class ParamActions:
    """Lists the parameter choices that can be set exactly in a version."""

    def __init__(self, block: bool = True, unroll: bool = True, elements: bool = True, tiles: bool = True) -> None:
        self.block = block
        self.unroll = unroll
        self.elements = elements
        self.tiles = tiles

    def actions(self, version: Version, ctx: SearchContext) -> list[Action]:
        """Return the parameter actions for a version."""
        out: list[Action] = []
        if self.block:
            out += self._blocks(version, ctx)
        if self.unroll:
            out += self._unrolls(version, ctx)
        if self.elements:
            out += self._elements(version, ctx)
        if self.tiles:
            out += self._tiles(version, ctx)
        return out

    # -- contraction tiles ---------------------------------------------------------------------------------------

    @staticmethod
    def _ranked(version: Version, ctx: SearchContext) -> tuple[float, str] | None:
        """Return the ranking model's expected share of time saved by the contraction card here, if it predicts."""
        if ctx.ranking is None:
            return None
        from warpwise.search.cards import _ranked
        from warpwise.skills.engine import match_file

        model, fn, _ = ctx.launch_model(version)
        if fn is None:
            return None
        matches = [
            m for m in match_file(model, ctx.library, {CONTRACTION_CARD}, ctx.target_sm) if m.function == ctx.kernel
        ]
        return _ranked(ctx, CONTRACTION_CARD, matches, model) if matches else None

    def _tiles(self, version: Version, ctx: SearchContext) -> list[Action]:
        from warpwise.search.cards import evidence_gain, prior_of
        from warpwise.search.version import LaunchOverride, Transform

        card = ctx.library.get(CONTRACTION_CARD) if ctx.library is not None else None
        rules = getattr(card, "rules", None)
        if card is None or rules is None or ctx.spec_source == "annotation":
            return []
        model, fn = ctx.function(version)
        if fn is None:
            return []
        try:
            c, _ = rules.recognise(model, fn)
        except Exception:  # A recogniser that fails offers no tiles; the other actions are unaffected.
            return []
        if c is None:
            return []
        own_launches = bool(model.launches_of(ctx.kernel))
        if ctx.spec_source == "problem_file" and own_launches:
            return []  # The problem file launches the kernel; a launch site in the file would not be the one run.
        gain, n = evidence_gain(card, ctx.kernel)
        source = f"{n} evidence record{'s' if n != 1 else ''}"
        predicted = self._ranked(version, ctx)
        if predicted is not None:
            gain, source = predicted
        base = prior_of(gain, [])
        out = []
        choices = rules.choices_for(c, problem_tolerance(ctx.problem_source)) if hasattr(rules, "choices_for") else ()
        for place, tiles in enumerate(choices or rules.TILE_CHOICES):
            if not hasattr(tiles, "wm") and tiles.problems():
                continue
            try:
                data = rules.rewrite_source(model, ctx.kernel, tiles)
            except Exception:  # The same: a failing rewrite is no action.
                continue
            if data is None:
                continue
            text = data.decode("utf-8", "surrogateescape")
            launch = version.launch
            if ctx.spec_source == "problem_file":
                changes = rules.launch_changes(c, fn, tiles)
                if changes is None:
                    continue
                by = {(ch.part, ch.axis): ch.python for ch in changes}
                code = (
                    "def launch(inputs):\n"
                    f"    return (({by['grid', 0]}, {by['grid', 1]}, 1), ({tiles.threads}, 1, 1), "
                    f"{by.get(('smem', 0), '0')})\n"
                )
                label = f"grid of {tiles.bm}x{tiles.bn} output tiles, {tiles.threads} threads"
                launch = (launch or LaunchOverride()).then(Transform("python", code=code, label=label))
            elif not own_launches:
                continue  # No launch in the file or a problem file to give the tiled grid to.
            child = version.derive(text, launch, None)
            prior = max(0.02, base - TILE_DECAY * place)
            if hasattr(tiles, "wm"):
                tol = rules.TF32_TOLERANCE if tiles.tf32 else rules.MMA_TOLERANCE
                why = (
                    f"{c.layout} contraction `{c.a.name}` x `{c.b.name}` on tensor cores "
                    f"({'TF32' if tiles.tf32 else ('wgmma' if tiles.wgmma else 'mma.sync m16n8k16')}, float "
                    f"accumulation): {tiles.bm}x{tiles.bn} "
                    f"tiles, BK {tiles.bk}, {tiles.stages} cp.async stages, {tiles.wm}x{tiles.wn} warps; unsafe: "
                    f"another summation order, within rtol {tol[0]:g} / atol {tol[1]:g}; the card's prior from {source}"
                )
            else:
                why = (
                    f"{c.layout} contraction `{c.a.name}` x `{c.b.name}`: {tiles.bm}x{tiles.bn} tiles, BK "
                    f"{tiles.bk}, {tiles.tm}x{tiles.tn} per thread, {tiles.threads} threads; the card's prior from "
                    f"{source}"
                )
            out.append(
                Action(
                    ActionKind.PARAM,
                    f"param:tiles={tiles.key}",
                    f"Tile the contraction {tiles.key}",
                    prior,
                    why,
                    ready(child),
                    CONTRACTION_CARD,
                )
            )
        return out

    # -- block size ----------------------------------------------------------------------------------------------

    def _blocks(self, version: Version, ctx: SearchContext) -> list[Action]:
        cur = ctx.block_of(version)
        model, fn = ctx.function(version)
        if cur is None or fn is None or cur[2] != 1:
            return []
        body = _body(model, fn)
        if crossed_dims(body):
            return []
        scale = scaled_dims(body)
        two_d = cur[1] > 1
        shapes: list[tuple[int, int, int]] = (
            [(x, y, 1) for x, y in BLOCK_SHAPES_2D] if two_d else [(b, 1, 1) for b in BLOCK_SIZES]
        )
        out = []
        total = cur[0] * cur[1]
        for new in shapes:
            if new == cur or new[0] * new[1] > 1024:
                continue
            edits = self._block_edits(version, ctx, model, fn, body, cur, new, scale)
            if edits is None:
                continue
            text = _edit(model.text, edits)
            if text is None:
                continue
            launch = version.launch
            label = "x".join(str(d) for d in (new[:2] if two_d else new[:1]))
            if ctx.spec_source == "problem_file":
                launch = (launch or LaunchOverride()).then(
                    Transform("block", block=new, scale=scale, label=f"block {label}")
                )
            child = version.derive(text, launch, new)
            ratio = max(new[0] * new[1], total) / min(new[0] * new[1], total)
            prior = BLOCK_PRIOR if ratio <= 2 else BLOCK_PRIOR * 0.7
            kept = "scaled" if any(scale) else "kept"
            why = f"block {cur[0]}x{cur[1]} -> {label}; grid {kept} to cover the same work"
            out.append(
                Action(ActionKind.PARAM, f"param:block={label}", f"Block size {label}", prior, why, ready(child))
            )
        return out

    def _block_edits(
        self,
        version: Version,
        ctx: SearchContext,
        model: FileModel,
        fn: Function,
        body: str,
        cur: tuple[int, int, int],
        new: tuple[int, int, int],
        scale: tuple[bool, bool, bool],
    ) -> list[tuple[int, int, str]] | None:
        """Return the text edits that set the block to `new`, or None when it cannot be set exactly."""
        edits: list[tuple[int, int, str]] = []
        bounds_span = _launch_bounds_span(model, fn)
        body_wo_bounds = body
        if bounds_span is not None:
            a, b = bounds_span[0] - fn.base, bounds_span[1] - fn.base
            body_wo_bounds = body[:a] + " " * (b - a) + body[b:]
        total_old, total_new = cur[0] * cur[1], new[0] * new[1]
        changed = {cur[d] for d in range(2) if cur[d] != new[d]}
        for old in changed | {total_old}:
            if old > 1 and re.search(rf"(?<![\w.]){old}(?![\w.])", body_wo_bounds):
                return None
        macros = []
        for name in sorted(model.macros):
            value = model.constants.get(name)
            if value is None or value not in changed | {total_old}:
                continue
            if re.search(rf"\b{re.escape(name)}\b", body) is None:
                continue
            if not _BLOCKISH.search(name) or cur[1] > 1:
                return None
            macros.append(name)
        for name in macros:
            m = re.search(
                rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name.encode()) + rb"[ \t]+(\d+)[ \t]*$", model.text, re.M
            )
            if m is None:
                return None
            edits.append((m.start(1), m.end(1), str(total_new)))
        if bounds_span is not None:
            inner = model.text[bounds_span[0] : bounds_span[1]].decode("utf-8", "replace")
            first = inner.split(",")[0].strip()
            if first.isdigit():
                if int(first) != total_old:
                    return None
                start = bounds_span[0] + inner.index(first)
                edits.append((start, start + len(first), str(total_new)))
            elif first not in macros:
                return None
        if ctx.spec_source == "problem_file":
            return edits
        if ctx.spec_source == "annotation":
            more = _annotation_edits(model, fn, cur, new, scale)
            return None if more is None else edits + more
        # Host launch sites: the block must be the macro just rewritten, and the grid must follow it where it scales.
        if not macros:
            return None
        for _, launch in model.launches_of(ctx.kernel):
            if launch.block.strip() not in macros:
                return None
            uses = any(re.search(rf"\b{re.escape(m)}\b", launch.grid) for m in macros)
            if uses != scale[0]:
                return None
        return edits

    # -- unroll factor -------------------------------------------------------------------------------------------

    def _unrolls(self, version: Version, ctx: SearchContext) -> list[Action]:
        model, fn = ctx.function(version)
        if fn is None:
            return []
        out = []
        for factor in UNROLL_FACTORS:
            edits: list[tuple[int, int, str]] = []
            for loop in fn.loops:
                if loop.kind != "for" or loop.trip_count is not None:
                    continue
                start = fn.base + loop.span[0]
                line = model.text.rfind(b"\n", 0, start) + 1
                if model.text[line:start].strip():
                    continue
                indent = model.text[line:start].decode()
                if loop.unroll is None:
                    edits.append((line, line, f"{indent}#pragma unroll {factor}\n"))
                    continue
                m = re.fullmatch(r"unroll\s+(\d+)", loop.unroll)
                if m is None or int(m.group(1)) == factor:
                    continue
                prev = model.text.rfind(b"\n", 0, line - 1) + 1
                pm = re.search(rb"unroll\s+(\d+)", model.text[prev:line])
                if pm is not None:
                    edits.append((prev + pm.start(1), prev + pm.end(1), str(factor)))
            if not edits:
                continue
            text = _edit(model.text, edits)
            if text is None:
                continue
            child = version.derive(text)
            why = f"unroll {len(edits)} run-time loop(s) of `{ctx.kernel}` by {factor}"
            prior = UNROLL_PRIOR if factor == 4 else UNROLL_PRIOR * 0.8
            out.append(
                Action(
                    ActionKind.PARAM, f"param:unroll={factor}", f"Unroll loops by {factor}", prior, why, ready(child)
                )
            )
        return out

    # -- elements per thread -------------------------------------------------------------------------------------

    def _elements(self, version: Version, ctx: SearchContext) -> list[Action]:
        from warpwise.skills.engine import match_file
        from warpwise.skills.rewrite import RewriteContext, apply_edits

        model, fn, limit = ctx.launch_model(version)
        if fn is None:
            return []
        matches = [
            m
            for m in match_file(model, ctx.library, {"one-element-per-thread"}, ctx.target_sm)
            if m.function == ctx.kernel and m.has_rewrite
        ]
        if len(matches) != 1 or matches[0].card.rewrite_fn is None:
            return []
        m = matches[0]
        own = ctx.model(version)
        out = []
        for factor in ELEMENT_FACTORS:
            rctx = RewriteContext(model, m.region.function, m.region, {**m.card.header.anchor.args, "factor": factor})
            try:
                edits = m.card.rewrite_fn(rctx)
            except Exception:  # A rewrite that fails offers no parameter; the card action is unaffected.
                continue
            if not edits:
                continue
            edits = [e for e in edits if e.end <= limit and e.start < limit]
            try:
                text = apply_edits(model.text[:limit], sorted(set(edits))).decode("utf-8", "surrogateescape")
            except ValueError:
                continue
            launch = version.launch
            if ctx.spec_source == "problem_file" and not own.launches_of(ctx.kernel):
                launch = (launch or LaunchOverride()).then(
                    Transform("grid_div", factor=factor, label=f"grid / {factor} (elements per thread)")
                )
            child = version.derive(text, launch)
            why = f"{factor} elements of `{m.region.facts.get('index', 'i')}` per thread, grid / {factor}"
            out.append(
                Action(
                    ActionKind.PARAM,
                    f"param:elements={factor}",
                    f"{factor} elements per thread",
                    ELEMENTS_PRIOR,
                    why,
                    ready(child),
                )
            )
        return out


def _launch_bounds_span(model: FileModel, fn: Function) -> tuple[int, int] | None:
    """Return the absolute span of the text inside `__launch_bounds__( ... )` of a kernel, if it has one."""
    head = model.text[fn.base : fn.base + (fn.body_span[0] if fn.body_span else fn.length)]
    m = re.search(rb"__launch_bounds__\s*\(", head)
    if m is None:
        return None
    depth = 1
    i = m.end()
    while i < len(head) and depth:
        depth += {ord("("): 1, ord(")"): -1}.get(head[i], 0)
        i += 1
    return fn.base + m.end(), fn.base + i - 1


def _annotation_edits(
    model: FileModel, fn: Function, cur: tuple[int, int, int], new: tuple[int, int, int], scale: tuple[bool, ...]
) -> list[tuple[int, int, str]] | None:
    """Return edits of the kernel's annotation for a 1-D block change, or None when it cannot be set exactly."""
    from warpwise.verify import annotation

    if cur[1] != 1 or new[1] != 1:
        return None
    ann = annotation.find(model, fn)
    if ann is None:
        return None
    old, b = cur[0], new[0]
    edits: list[tuple[int, int, str]] = []
    seen_block = False
    for tok in ann.tokens:
        at = model.lines.line_start(tok.line) + tok.column
        if tok.text == f"block={old}":
            edits.append((at, at + len(tok.text), f"block={b}"))
            seen_block = True
        elif tok.text.startswith("grid="):
            expr = tok.text[5:]
            if scale[0]:
                m = re.fullmatch(rf"\((.+?)\s*\+\s*{old - 1}\s*\)\s*/\s*{old}", expr)
                if m is None:
                    return None
                edits.append((at, at + len(tok.text), f"grid=({m.group(1)}+{b - 1})/{b}"))
            elif re.search(rf"(?<![\w.]){old}(?![\w.])", expr):
                return None
    return edits if seen_block else None
