"""The launch a card's checks see: the file's own launches, else the one the kernel's run spec gives.

A kernel is often launched somewhere else (a torch binding in another file, a Python driver) while its file has
a problem file or an annotation that says how it runs. Checks that read launches (the block size, the grid that
covers the bound, distinct buffers) would answer "no launch of `k` in this file" and withhold a fix the spec
makes safe to verify. `launches_of` returns the file's launches when it has any; otherwise one launch built from
the spec of an annotation or a problem file, whose host is named after where it came from (`the annotation at
line 3`, `the problem file k.problem.py`), so every message says so. An annotation gives constant geometry and
scalar values; a problem file's `launch(inputs)` runs only in the worker, so its geometry stays unknown to the
checks (said in their messages), while its buffers are distinct tensors by construction.

A spec launch has no text in the file: `is_spec_launch` tells rewrites that edit launch sites to leave it alone
(a problem file's launch is changed through `warpwise.skills.launches` instead).
"""

from __future__ import annotations

import dataclasses
import re

from warpwise.analyzers.facts import SPEC_CALLER, is_spec_launch, provide_spec_launches
from warpwise.analyzers.model import FileModel, Function, Launch

__all__ = ["SPEC_CALLER", "is_spec_launch", "kernel_spec", "launches_of", "spec_launch"]


def _dims(values: tuple[int, int, int]) -> tuple[int, ...]:
    """Return a dim3 without its trailing 1s."""
    out = list(values)
    while len(out) > 1 and out[-1] == 1:
        out.pop()
    return tuple(out)


def kernel_spec(model: FileModel, kernel: str) -> object | None:
    """Return the run spec `verify.spec.resolve_spec` gives a kernel of this model, resolved once per model (the
    checks and matchers that read it share the answer); None when it cannot be read (verify reports why)."""
    from warpwise.verify.spec import resolve_spec

    memo = model.memo.setdefault("kernel_spec", {})
    if kernel not in memo:
        try:
            memo[kernel] = resolve_spec(model.path, model.text, kernel, model)
        except Exception:
            memo[kernel] = None  # A spec that cannot be read leaves the checks where they were.
    return memo[kernel]


def spec_launch(model: FileModel, kernel: str) -> tuple[Function, Launch] | None:
    """Return the launch an annotation or a problem file gives a kernel without a launch in its file."""
    from warpwise.verify.spec import ProblemSpec, kernel_function

    memo = model.memo.setdefault("spec_launch", {})
    if kernel in memo:
        return memo[kernel]
    fn = kernel_function(model, kernel)
    found: tuple[Function, Launch] | None = None
    spec = kernel_spec(model, kernel) if fn is not None else None
    if fn is not None and isinstance(spec, ProblemSpec) and spec.source in ("annotation", "problem_file"):
        run = spec.run
        values = {a.param: a for a in run.args}
        args = tuple(
            (values[p.name].buffer or p.name)
            if p.name in values and values[p.name].value is None
            else (repr(values[p.name].value) if p.name in values else p.name)
            for p in fn.params
        )
        runtime = spec.source == "problem_file" and bool(
            re.search(r"^(def\s+launch\s*\(|grid\s*=)", run.problem_source or "", re.M)
        )
        where = spec.origin
        geom = run.original_geometry
        grid = None if runtime else _dims(geom.grid)
        block = None if runtime else _dims(geom.block)
        text = "launch(inputs)" if runtime else ""
        launch = Launch(
            kernel=kernel,
            template_args=spec.template_args,
            template_values=spec.template_args,
            grid=text or ", ".join(map(str, grid or ())),
            block=text or ", ".join(map(str, block or ())),
            smem=None if runtime else str(geom.smem),
            stream=None,
            grid_value=grid,
            block_value=block,
            smem_value=None if runtime else geom.smem,
            args=args,
            span=(0, 0),
            name_span=(0, 0),
            caller=SPEC_CALLER,
        )
        found = (dataclasses.replace(fn, name=f"the {where}"), launch)
    memo[kernel] = found
    return found


def launches_of(model: FileModel, kernel: str) -> list[tuple[Function, Launch]]:
    """Return a kernel's launches in its file, else the one its annotation or problem file gives (if any)."""
    from warpwise.analyzers.facts import launches_of as _launches_of

    return _launches_of(model, kernel)


# The analyzers' shared facts ask for spec launches through this hook (they may not import the spec layer).
provide_spec_launches(spec_launch)
