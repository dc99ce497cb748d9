"""The editor offers the scalar-elementwise-map transformation as a quick fix on a bias-and-ReLU map (`bias[i % cols]`)."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.server.conftest import apply_edit

MAP = ROOT / "bench" / "suite_ood" / "bias_relu" / "modulo_col.cu"


async def test_bias_relu_map_gets_vector_accesses_with_its_verification_state(sessions) -> None:
    session = await sessions("visual-studio-code", {"cards": {"enabled": ["scalar-elementwise-map"]}})
    uri = session.open(MAP)
    diags = await session.static(uri)
    assert "scalar-elementwise-map" in {str(d.code) for d in diags}
    line = next(i for i, t in enumerate(MAP.read_text().splitlines()) if "__global__" in t)
    actions = await session.actions(uri, line, only=["quickfix"], diagnostics=diags)
    fixes = [a for a in actions if a.title.startswith("Give each thread of `bias_relu` 4 consecutive elements")]
    assert len(fixes) == 1, [a.title for a in actions]
    fix = fixes[0]
    # Not verified here (no GPU result for this content): offered with its state.
    assert re.search(r"unverified", fix.title), fix.title
    fix = await session.resolved(fix)
    assert fix.edit is not None
    text = apply_edit(MAP.read_text(), fix.edit, uri)
    assert "reinterpret_cast<const float4*>(x + ww_v0)" in text and "bias[i % cols]" in text
    version = session.replace_all(uri, text)
    after = await session.static(uri, version)
    assert "scalar-elementwise-map" not in {str(d.code) for d in after}
