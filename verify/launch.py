"""Launch geometry changes: how a candidate kernel is launched differently from the kernel it came from.

This is the one representation of a launch change in warpwise. A rewrite that changes how a kernel must be
launched (each thread now covers several elements, a lineage's simpler kernel needs more blocks) says so with
`LaunchChange`s relative to the kernel it came from. A kernel is launched with the problem file's geometry
(its `launch(inputs)`, or its `grid`/`block`/`smem`) with the changes applied in order. The gate reads an
original's geometry from `launch(inputs)` and a candidate's from `launch_candidate(inputs)`, so `problem_source`
appends both to the problem file's text; the result is deterministic, so the same pair always has the same
cache key. Without any change the problem file is used as it is. The search's launch overrides
(`warpwise.search.version`: its block and grid transforms are `set_block` and `shrink_grid`, applied by
`apply_lines`) and the lineages' steps are both written as these changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LaunchChange:
    """One dimension of the simpler kernel's launch, as a Python expression over the current value and inputs.

    `part` is "grid", "block" (with `axis` 0, 1 or 2) or "smem" (the dynamic shared memory in bytes, `axis` 0).

    `python` is evaluated inside the problem file (see `warpwise.lineages.launch`) with `value` bound to
    the current kernel's value of that dimension and `inputs` to the problem's inputs; `text` says the same in C
    terms for people.
    """

    part: str
    axis: int
    python: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form."""
        return {"part": self.part, "axis": self.axis, "python": self.python, "text": self.text}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LaunchChange:
        """Rebuild from `to_dict`'s output."""
        return cls(str(d["part"]), int(d["axis"]), str(d["python"]), str(d["text"]))


_PRELUDE = '''

# --- warpwise lineage: the launch geometry of both kernels of one step (generated; see verify/launch.py)
_ww_expert_launch = (
    globals()["launch"]
    if "launch" in globals()
    else (lambda inputs: (globals()["grid"], globals()["block"], globals().get("smem", 0)))
)


def _ww_tdiv(a, b):
    """Divide integers as C does (truncating)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _ww_geometry(inputs, changes):
    """Return the expert's geometry with the given changes applied in order, as (grid, block, smem)."""
    g = _ww_expert_launch(inputs)

    def dim3(v):
        t = tuple(int(x) for x in (v if isinstance(v, (tuple, list)) else (v,)))
        return list((*t, 1, 1, 1)[:3])

    geo = [dim3(g[0]), dim3(g[1]), int(g[2]) if len(g) > 2 else 0]
    for part, axis, fn in changes:
        if part == "smem":
            geo[2] = int(fn(geo[2], inputs, geo))
            continue
        i = 0 if part == "grid" else 1
        geo[i][axis] = int(fn(geo[i][axis], inputs, geo))
    return tuple(geo[0]), tuple(geo[1]), geo[2]
'''


def _changes(changes: Sequence[LaunchChange]) -> str:
    """Return a Python list literal of (part, axis, function) for the changes."""
    items = [f'("{c.part}", {c.axis}, lambda value, inputs, g: {c.python})' for c in changes]
    return "[" + ", ".join(items) + "]"


def problem_source(base: str, original: Sequence[LaunchChange], candidate: Sequence[LaunchChange]) -> str:
    """Return the problem file text that launches the original and the candidate with their own geometry."""
    if not original and not candidate:
        return base
    return (
        base.rstrip("\n")
        + _PRELUDE
        + f"\n\ndef launch(inputs):\n    return _ww_geometry(inputs, {_changes(original)})\n"
        + f"\n\ndef launch_candidate(inputs):\n    return _ww_geometry(inputs, {_changes(candidate)})\n"
    )


def describe(changes: Sequence[LaunchChange]) -> str:
    """Return the changes for people (`grid.x = ceil(n4 / SUM_THREADS)`), or an empty string."""
    return "; ".join(c.text for c in changes)


def shrink_grid(factor: int) -> tuple[LaunchChange, ...]:
    """Return the launch change of a rewrite whose threads each cover `factor` elements."""
    return (LaunchChange("grid", 0, f"max(1, -(-value // {factor}))", f"grid.x / {factor} (rounded up)"),)


def set_block(
    block: tuple[int, int, int], scale: tuple[bool, bool, bool] = (False, False, False)
) -> tuple[LaunchChange, ...]:
    """Return the launch changes that set the block to `block`, keeping the number of threads along each
    dimension in `scale` by scaling the grid (rounded up)."""
    out = []
    for d, axis in enumerate("xyz"):
        if scale[d]:
            expr = f"max(1, -(-(value * g[1][{d}]) // {block[d]}))"
            out.append(LaunchChange("grid", d, expr, f"grid.{axis} scaled to block.{axis} = {block[d]}"))
    out += [LaunchChange("block", d, str(block[d]), f"block.{axis} = {block[d]}") for d, axis in enumerate("xyz")]
    return tuple(out)


def apply_lines(changes: Sequence[LaunchChange], indent: str = "    ") -> list[str]:
    """Return Python statements that apply the changes in order to the lists `_grid` and `_block` (with `_smem`
    and `inputs` in scope), as `problem_source`'s generated `launch_candidate` does."""
    lines = []
    for c in changes:
        if c.part == "smem":
            lines.append(
                f"{indent}_smem = int((lambda value, inputs, g: {c.python})(_smem, inputs, (_grid, _block, _smem)))"
                f"  # {c.text}"
            )
            continue
        dim = "_grid" if c.part == "grid" else "_block"
        lines.append(
            f"{indent}{dim}[{c.axis}] = int((lambda value, inputs, g: {c.python})"
            f"({dim}[{c.axis}], inputs, (_grid, _block, _smem)))  # {c.text}"
        )
    return lines
