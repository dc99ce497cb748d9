"""The SIMT steps before register tiles (untiled-contraction's `SimtStep`): coalesced mapping and shared tiles.

Without a GPU: every step generates for every layout of the card's fixtures (NN, NT, TN, TT, alpha/beta, half and
bfloat16 operands, a `while` loop, a 1-D mapping), the result parses and compiles, keeps the user's store, sums in
the loop's order (one `+=` per k, no reassociation), and launches on the grid of BS x BS output tiles. Correctness
and speed on the H200 are the gate's: bench/results/contraction_mma2-2026-12-02.md (section 2) and
contraction_lineage-2026-12-02.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library

_card = builtin_library().get("untiled-contraction")
assert _card is not None and _card.rules is not None
uc = _card.rules
FIXTURES = BUILTIN_CARDS / "untiled-contraction" / "fixtures"
POSITIVE = sorted(p for p in FIXTURES.glob("pos_*.cu") if not p.name.endswith(".expected.cu"))


def _rewrites(step: object) -> list[tuple[str, bytes, object]]:
    out = []
    for path in POSITIVE:
        model = analyze_text(path.read_bytes(), str(path))
        for fn in model.functions:
            if fn.kind is not FunctionKind.KERNEL:
                continue
            c, _ = uc.recognise(model, fn)
            if c is None:
                continue
            new = uc.rewrite_source(model, fn.name, step)
            assert new is not None, (path.name, fn.name)
            out.append((f"{path.name}:{fn.name}", new, c))
    return out


def test_steps_round_trip_and_refuse_unknown_sizes() -> None:
    for t in uc.SIMT_STEPS:
        assert uc.tiles_of(uc.tile_args(t)) == t and t.problems() == []
    assert uc.SimtStep("shared", 12).problems() and uc.SimtStep("transpose", 16).problems()


@pytest.mark.parametrize("step", uc.SIMT_STEPS, ids=lambda t: t.key)
def test_every_layout_generates_a_kernel_that_keeps_the_store(step: object) -> None:
    rows = _rewrites(step)
    assert len(rows) >= len(POSITIVE)
    for label, new, c in rows:
        text = new.decode()
        assert analyze_text(new).syntax_problems == (), label
        assert c.store in text, label
        assert "ww_acc += " in text, label  # one accumulation per k, in the loop's order
        if step.kind == "shared":
            assert "__shared__" in text and "__syncthreads();" in text, label
        else:
            assert "__shared__" not in text, label


def test_launch_becomes_a_grid_of_step_tiles() -> None:
    path = FIXTURES / "pos_nn_basic.cu"
    model = analyze_text(path.read_bytes(), str(path))
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
    c, _ = uc.recognise(model, fn)
    changes = uc.launch_changes(c, fn, uc.SimtStep("shared", 16))
    assert changes is not None
    assert [(ch.part, ch.axis, ch.python) for ch in changes][:2] == [
        ("grid", 0, 'max(1, -(-(1 * int(inputs["N"])) // 16))'),
        ("grid", 1, 'max(1, -(-(1 * int(inputs["M"])) // 16))'),
    ]
    assert changes[3].python == "256"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
def test_every_step_compiles() -> None:
    sources, labels = [], []
    for step in uc.SIMT_STEPS[:2]:
        for label, new, _ in _rewrites(step):
            sources.append(new)
            labels.append(f"{step.key} {label}")
    for label, (ok, log) in zip(labels, compile_many(sources), strict=True):
        assert ok, f"{label}: {log}"


def test_fixture_folder_exists() -> None:
    assert Path(FIXTURES).is_dir() and POSITIVE
