"""One representation of launch changes: the search's launch transforms are `verify.launch`'s `LaunchChange`s."""

from __future__ import annotations

import itertools
import math

import pytest

from warpwise.search.version import LaunchOverride, Transform
from warpwise.verify.launch import LaunchChange, problem_source, set_block, shrink_grid

BASE = "def launch(inputs):\n    return ((inputs['n'] + 255) // 256, inputs['rows'], 1), (256, 2, 1), 64\n"


def _run(source: str, name: str, inputs: dict) -> tuple:
    ns: dict = {}
    exec(source, ns)
    return tuple(ns[name](inputs))


def _expected(inputs: dict, transforms: list[Transform]) -> tuple:
    """The geometry computed by hand: blocks keep threads on scaled axes, grid_div rounds the grid up."""
    grid = [(inputs["n"] + 255) // 256, inputs["rows"], 1]
    block = [256, 2, 1]
    for t in transforms:
        if t.kind == "block":
            for d in range(3):
                if t.scale[d]:
                    grid[d] = max(1, math.ceil(grid[d] * block[d] / t.block[d]))
            block = list(t.block)
        else:
            grid[0] = max(1, math.ceil(grid[0] / t.factor))
    return tuple(grid), tuple(block), 64


def test_a_grid_transform_is_the_shrink_grid_change() -> None:
    assert Transform("grid_div", factor=4).changes == shrink_grid(4)
    assert Transform("block", block=(128, 1, 1), scale=(True, False, False)).changes == set_block(
        (128, 1, 1), (True, False, False)
    )
    assert Transform("python", code=BASE).changes is None
    assert all(isinstance(c, LaunchChange) for c in set_block((64, 4, 1), (True, True, False)))


TRANSFORMS = [
    Transform("grid_div", factor=3),
    Transform("block", block=(128, 1, 1), scale=(True, False, False)),
    Transform("block", block=(32, 8, 1), scale=(True, True, False)),
    Transform("block", block=(512, 1, 1)),
]


@pytest.mark.parametrize("chain", [c for r in range(1, 4) for c in itertools.permutations(TRANSFORMS, r)])
@pytest.mark.parametrize("n", [1, 255, 1 << 20, (1 << 20) + 7])
def test_the_search_override_and_the_gate_problem_file_launch_alike(chain: tuple[Transform, ...], n: int) -> None:
    override = LaunchOverride()
    for t in chain:
        override = override.then(t)
    changes = override.changes()
    assert changes is not None
    inputs = {"n": n, "rows": 3}
    searched = _run(BASE + override.source(), "launch_candidate", inputs)
    gated = _run(problem_source(BASE, (), changes), "launch_candidate", inputs)
    assert searched == gated == _expected(inputs, list(chain))
    # Adopting the version rewrites the problem file's `launch` to the same geometry.
    assert _run(BASE + override.problem_file_edit("k"), "launch", inputs) == searched


def test_a_whole_launch_from_a_lineage_is_no_launch_change() -> None:
    override = LaunchOverride().then(Transform("grid_div", factor=2)).then(Transform("python", code=BASE))
    assert override.changes() is None
    assert LaunchOverride().changes() == ()


def test_a_dynamic_shared_memory_change_sets_the_bytes_in_both_launch_forms() -> None:
    from warpwise.verify.launch import apply_lines

    changes = (*set_block((128, 1, 1)), LaunchChange("smem", 0, "98304", "98304 bytes of dynamic shared memory"))
    inputs = {"n": 1000, "rows": 3}
    gated = _run(problem_source(BASE, (), changes), "launch_candidate", inputs)
    assert gated == (((1000 + 255) // 256, 3, 1), (128, 1, 1), 98304)
    # The original keeps its own 64 bytes; `apply_lines` (the search's form) sets the same bytes.
    assert _run(problem_source(BASE, (), changes), "launch", inputs)[2] == 64
    ns = {"_grid": [4, 3, 1], "_block": [256, 2, 1], "_smem": 64, "inputs": inputs}
    exec("\n".join(line.strip() for line in apply_lines(changes)), ns)
    assert (ns["_block"], ns["_smem"]) == ([128, 1, 1], 98304)
