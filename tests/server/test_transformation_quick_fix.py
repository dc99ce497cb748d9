"""The editor offers the row-cooperative-reduction transformation as a quick fix on a kernel we did not tune for."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.server.conftest import apply_edit

SOFTMAX = ROOT / "bench" / "suite_ood" / "softmax" / "row_per_thread.cu"


async def test_row_kernel_gets_the_transformation_with_its_verification_state(sessions) -> None:
    session = await sessions("visual-studio-code", {"cards": {"enabled": ["row-cooperative-reduction"]}})
    uri = session.open(SOFTMAX)
    diags = await session.static(uri)
    assert "row-cooperative-reduction" in {str(d.code) for d in diags}
    line = next(i for i, t in enumerate(SOFTMAX.read_text().splitlines()) if "__global__" in t)
    actions = await session.actions(uri, line, only=["quickfix"], diagnostics=diags)
    fixes = [a for a in actions if a.title.startswith("Share each row of `softmax_row_per_thread`")]
    assert len(fixes) == 1, [a.title for a in actions]
    fix = fixes[0]
    # Unsafe (sums are re-associated) and not verified here: offered with its state, never preferred.
    assert re.search(r" — unverified", fix.title), fix.title
    assert not fix.is_preferred
    fix = await session.resolved(fix)
    assert fix.edit is not None
    text = apply_edit(SOFTMAX.read_text(), fix.edit, uri)
    assert "ww_rc_reduce<32>(mx, ww_rc_max())" in text and "for (int j = (0) + ww_lane; j < n_cols; j += 32)" in text
    version = session.replace_all(uri, text)
    after = await session.static(uri, version)
    assert "row-cooperative-reduction" not in {str(d.code) for d in after}
