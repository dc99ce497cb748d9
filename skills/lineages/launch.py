"""Launch geometry of the kernels of a lineage, written into the problem file the gate runs.

A deoptimizer that changes how a kernel is launched (one element per thread needs more blocks) says so with
`LaunchChange`s relative to the kernel it came from. A kernel of the walk is launched with the expert's geometry
(the problem file's `launch(inputs)`, or its `grid`/`block`/`smem`) with the changes of every step between it
and the expert applied in order. The gate reads an original's geometry from `launch(inputs)` and a candidate's
from `launch_candidate(inputs)`, so `problem_source` appends both to the problem file's text; the result is
deterministic, so the same pair always has the same cache key. Without any change the problem file is used as
it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from warpwise.skills.lineages.deopt.base import LaunchChange

_PRELUDE = '''

# --- warpwise lineage: the launch geometry of both kernels of one step (generated; see skills/lineages/launch.py)
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
