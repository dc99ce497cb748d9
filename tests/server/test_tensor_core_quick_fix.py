"""The editor offers both contraction steps on the user's own half-precision matmul, each with its state.

The exact tiling (untiled-contraction: bit-identical, SIMT) and the tensor-core kernel
(contraction-without-tensor-cores: mma.sync, sums in another order) are two quick fixes on the same kernel; neither
is verified here (no GPU in CI), so both carry their verification state in the title and neither is preferred.
They address one region, so the editor draws one diagnostic that names the other card (one per region and
problem); both fixes are offered where it is.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.server.conftest import apply_edit
from tests.server.test_contraction_step_quick_fixes import _one_diagnostic_names_the_others

HGEMM = ROOT / "bench" / "suite_ood" / "hgemm" / "nn_float_acc.cu"


async def test_half_matmul_gets_the_tiling_and_the_tensor_core_steps(sessions) -> None:
    cards = ["untiled-contraction", "contraction-without-tensor-cores"]
    session = await sessions("visual-studio-code", {"cards": {"enabled": cards}})
    uri = session.open(HGEMM)
    diags = await session.static(uri)
    _one_diagnostic_names_the_others(diags, cards)
    line = next(i for i, t in enumerate(HGEMM.read_text().splitlines()) if "__global__" in t)
    actions = await session.actions(uri, line, only=["quickfix"], diagnostics=diags)
    tiled = [a for a in actions if a.title.startswith("Tile `hgemm_nn`")]
    tensor = [a for a in actions if a.title.startswith("Run `hgemm_nn` on tensor cores")]
    assert len(tiled) == 1 and len(tensor) == 1, [a.title for a in actions]
    for fix in (tiled[0], tensor[0]):
        assert "unverified" in fix.title, fix.title
        assert not fix.is_preferred
    fix = await session.resolved(tensor[0])
    assert fix.edit is not None
    text = apply_edit(HGEMM.read_text(), fix.edit, uri)
    assert (
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in text and "C[row * N + col] = __float2half(acc);" in text
    )
    version = session.replace_all(uri, text)
    after = await session.static(uri, version)
    assert not set(cards) & {str(d.code) for d in after}  # the tensor-core kernel is no naive contraction
