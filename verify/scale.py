"""Reduced problems: the same problem file at a smaller size, for screening candidates before the real one.

A search that times every candidate at the user's size spends most of its budget on the slow starting kernel
(a naive 4096^3 SGEMM runs 275 ms per run, and each gate job runs it a dozen times). It can instead screen
candidates on a reduced problem and confirm only the best few at the user's size; only the confirmation at the
user's size may be called verified (`warpwise.search.screening`).

Problem files name their sizes in a module-level `SIZES` dict whose `full` entry is the default preset (the one
the gate runs when `WARPWISE_PROBLEM_SCALE` is unset; otherwise the preset that variable names is the user's size).
A reduced problem is the same problem file with one statement appended that replaces that preset's entry:

- by the problem file's own `SIZES["screen"]`, when it names one (the author knows which size keeps the kernel's
  behaviour: the same waves of blocks, the same cache regime), for the first level;
- else by `full` with every dimension of at least `MIN_SCALED` scaled by the level's factor (rounded to a
  multiple of the largest power of two, up to 32, that divided the original, so that aligned sizes stay aligned).
  Small dimensions (batch counts, channels, a head size) are kept: scaling them changes what is computed.

The reduced problem is a new problem source, so the gate's cache keys it apart from the user's size. Nothing here
runs the problem file: `SIZES` is read from its syntax tree (integer literals, `+ - * // <<` and tuples), and a
problem file whose sizes are written any other way has no reduced problem. Whether the kernel is still correct at
the reduced size is the gate's question: a kernel that assumes its size (a macro for the row length) fails at the
reduced size, and the search then evaluates at the user's size.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
import os
from typing import Any

MIN_SCALED = 256
"""Dimensions smaller than this are never scaled."""

_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.LShift: operator.lshift,
}

Sizes = int | tuple[int, ...]


def _value(node: ast.expr) -> Sizes | None:
    """Return an integer or a tuple of integers written with literals and simple arithmetic, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return int(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _value(node.left), _value(node.right)
        if isinstance(a, int) and isinstance(b, int):
            if isinstance(node.op, ast.FloorDiv) and b == 0:
                return None
            if isinstance(node.op, ast.LShift) and not 0 <= b < 63:
                return None
            return int(_OPS[type(node.op)](a, b))
        return None
    if isinstance(node, ast.Tuple) and node.elts:
        vals = [_value(e) for e in node.elts]
        if all(isinstance(v, int) for v in vals):
            return tuple(int(v) for v in vals if isinstance(v, int))
    return None


def problem_sizes(problem_source: str) -> dict[str, Sizes] | None:
    """Return the problem file's `SIZES` presets (the last top-level assignment), or None when there is none."""
    try:
        tree = ast.parse(problem_source)
    except SyntaxError:
        return None
    found: dict[str, Sizes] | None = None
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        # `SIZES["full"] = (...)` after the dict (a problem file that extends another, or a reduced problem).
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == "SIZES"
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
        ):
            val = _value(stmt.value)
            if found is not None and val is not None:
                found[target.slice.value] = val
            elif found is not None:
                found.pop(target.slice.value, None)
            continue
        if not (isinstance(target, ast.Name) and target.id == "SIZES"):
            continue
        if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value) == "dict(SIZES)":
            continue  # a copy: the presets are unchanged
        if not isinstance(stmt.value, ast.Dict):
            found = None
            continue
        presets: dict[str, Sizes] = {}
        for k, v in zip(stmt.value.keys, stmt.value.values, strict=True):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                continue
            val = _value(v)
            if val is not None:
                presets[k.value] = val
        found = presets
    return found if found and "full" in found else None


def _align(v: int) -> int:
    """Return the largest power of two (at most 32) that divides v."""
    a = 1
    while a < 32 and v % (2 * a) == 0:
        a *= 2
    return a


def scale_sizes(full: Sizes, factor: float) -> Sizes:
    """Return `full` with every dimension of at least `MIN_SCALED` scaled by `factor`, aligned as it was."""

    def one(v: int) -> int:
        if v < MIN_SCALED:
            return v
        a = _align(v)
        return max(a, round(v * factor / a) * a)

    if isinstance(full, int):
        return one(full)
    return tuple(one(v) for v in full)


@dataclasses.dataclass(frozen=True, slots=True)
class Reduced:
    """One reduced problem: its label, the sizes it runs, and the problem source that runs them."""

    label: str
    sizes: Sizes
    full: Sizes
    problem_source: str


def reduced_problem(problem_source: str, level: int, factor: float, preset: str | None = None) -> Reduced | None:
    """Return the problem at a reduced size (level 0 takes the file's `screen` preset when it names one).

    `preset` is the size the user runs (`WARPWISE_PROBLEM_SCALE`, `full` when unset); it is the one replaced.
    """
    presets = problem_sizes(problem_source)
    preset = preset or os.environ.get("WARPWISE_PROBLEM_SCALE", "full")
    if presets is None or preset not in presets:
        return None
    full = presets[preset]
    if level == 0 and "screen" in presets:
        sizes, label = presets["screen"], "the problem file's `screen` preset"
    else:
        sizes, label = scale_sizes(full, factor), f"`full` scaled by {factor:g} per dimension"
    if sizes == full:
        return None
    line = (
        "\n\n# warpwise screening: a reduced problem for ranking candidates; never the size results are verified at.\n"
        f"SIZES = dict(SIZES)\nSIZES[{preset!r}] = {sizes!r}\n"
    )
    return Reduced(f"{label}: {_text(sizes)} instead of {_text(full)}", sizes, full, problem_source + line)


def _text(sizes: Sizes) -> str:
    return str(sizes) if isinstance(sizes, int) else " x ".join(str(v) for v in sizes)


def reduced_spec(spec: Any, level: int, factor: float, preset: str | None = None) -> tuple[Any, Reduced] | None:
    """Return a problem-file spec at a reduced size and what was reduced, or None when the spec cannot be reduced."""
    if spec is None or spec.source != "problem_file" or not spec.run.problem_source:
        return None
    red = reduced_problem(spec.run.problem_source, level, factor, preset)
    if red is None:
        return None
    return dataclasses.replace(spec, run=dataclasses.replace(spec.run, problem_source=red.problem_source)), red
