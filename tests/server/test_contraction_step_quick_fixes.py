"""The editor offers each step of the contraction lineage as its own quick fix on the user's matmul, with its state.

The coalesced mapping (contraction-lanes-walk-rows, only where lanes take rows), shared tiles
(contraction-without-shared-tiles: one output per thread), register tiles (untiled-contraction), all three
bit-identical, and, for half operands, tensor cores (contraction-without-tensor-cores) are separate quick fixes on
the same kernel, all on one diagnostic (one per region and problem: the others are named in its related
information, `warpwise.skills.presentation.one_per_region`); none is verified here (no GPU in CI), so each carries its verification state in its title and none
is preferred. Applying a step leaves a kernel that no step fires on.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.server.conftest import apply_edit

HGEMM = ROOT / "bench" / "suite_ood" / "hgemm" / "nn_float_acc.cu"
CARDS = ["contraction-without-shared-tiles", "untiled-contraction", "contraction-without-tensor-cores"]


async def test_each_contraction_step_is_its_own_quick_fix(sessions) -> None:
    session = await sessions("visual-studio-code", {"cards": {"enabled": CARDS}})
    uri = session.open(HGEMM)
    diags = await session.static(uri)
    _one_diagnostic_names_the_others(diags, CARDS)
    line = next(i for i, t in enumerate(HGEMM.read_text().splitlines()) if "__global__" in t)
    actions = await session.actions(uri, line, only=["quickfix"], diagnostics=diags)
    titles = [a.title for a in actions]
    shared = [a for a in actions if a.title.startswith("Stage `hgemm_nn`'s operands in 16 x 16 shared tiles")]
    tiled = [a for a in actions if a.title.startswith("Tile `hgemm_nn`")]
    tensor = [a for a in actions if a.title.startswith("Run `hgemm_nn` on tensor cores")]
    assert len(shared) == 1 and len(tiled) == 1 and len(tensor) == 1, titles
    for fix in (shared[0], tiled[0], tensor[0]):
        assert "unverified" in fix.title, fix.title
        assert not fix.is_preferred
    fix = await session.resolved(shared[0])
    assert fix.edit is not None
    text = apply_edit(HGEMM.read_text(), fix.edit, uri)
    assert "__shared__ float ww_As[16][17];" in text and "C[row * N + col] = __float2half(acc);" in text
    version = session.replace_all(uri, text)
    after = await session.static(uri, version)
    assert not set(CARDS) & {str(d.code) for d in after}  # a kernel with shared tiles is no naive contraction


def _one_diagnostic_names_the_others(diags, cards: list[str]) -> None:
    """Assert the contraction cards show one diagnostic whose related information names every other card."""
    shown = [d for d in diags if str(d.code) in cards]
    assert len(shown) == 1, [d.code for d in shown]
    notes = " ".join(r.message for r in shown[0].related_information or ())
    for card in set(cards) - {str(shown[0].code)}:
        assert f"`{card}`" in notes, notes


SGEMM_ROWS_ON_X = ROOT / "bench" / "suite_ood" / "sgemm" / "nn_swapped_alpha_beta.cu"
FLOAT_CARDS = ["contraction-lanes-walk-rows", "contraction-without-shared-tiles", "untiled-contraction"]


async def test_rows_on_lanes_get_the_coalesced_step_first(sessions) -> None:
    session = await sessions("visual-studio-code", {"cards": {"enabled": FLOAT_CARDS}})
    uri = session.open(SGEMM_ROWS_ON_X)
    diags = await session.static(uri)
    _one_diagnostic_names_the_others(diags, FLOAT_CARDS)
    line = next(i for i, t in enumerate(SGEMM_ROWS_ON_X.read_text().splitlines()) if "__global__" in t)
    actions = await session.actions(uri, line, only=["quickfix"], diagnostics=diags)
    lanes = [a for a in actions if a.title.startswith("Put adjacent lanes of `sgemm_naive_nn` on adjacent")]
    assert len(lanes) == 1 and "unverified" in lanes[0].title and not lanes[0].is_preferred, [a.title for a in actions]
    fix = await session.resolved(lanes[0])
    assert fix.edit is not None
    text = apply_edit(SGEMM_ROWS_ON_X.read_text(), fix.edit, uri)
    assert "ww_nj = ww_n0 + ww_tx" in text and "__shared__" not in text
    version = session.replace_all(uri, text)
    after = await session.static(uri, version)
    assert not set(FLOAT_CARDS) & {str(d.code) for d in after}
