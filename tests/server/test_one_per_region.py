"""One diagnostic per region and problem in the editor (issue 18), with every card's fix still a quick fix.

`examples/vector_ops.cu`'s `saxpy` draws three cards that address one problem (scalar-elementwise-map,
one-element-per-thread, scalar-global-access): the editor shows the best-ranked one, names the others in its
related information, and offers their fixes where it is; `showAll` draws them all again.
"""

from __future__ import annotations

from tests.conftest import ROOT

VECTOR_OPS = ROOT / "examples" / "vector_ops.cu"
CARDS = {"scalar-elementwise-map", "one-element-per-thread", "scalar-global-access"}


def _in_saxpy(diags) -> list:
    return [d for d in diags if str(d.code) in CARDS and 4 <= d.range.start.line <= 9]


async def test_saxpy_shows_one_diagnostic_whose_alternatives_stay_quick_fixes(sessions) -> None:
    session = await sessions("visual-studio-code")
    uri = session.open(VECTOR_OPS)
    diags = await session.static(uri)
    shown = _in_saxpy(diags)
    assert len(shown) == 1, [(d.code, d.range.start.line) for d in shown]
    kept = shown[0]
    notes = " ".join(r.message for r in kept.related_information or ())
    for card in CARDS - {str(kept.code)}:
        assert f"`{card}`" in notes, notes
    actions = await session.actions(uri, kept.range.start.line, only=["quickfix"], diagnostics=diags)
    titles = [a.title for a in actions]
    assert any(t.startswith("Give each thread of `saxpy` 4 consecutive elements") for t in titles), titles
    assert any(t.startswith("Handle 4 elements") for t in titles), titles


async def test_show_all_draws_every_card_again(sessions) -> None:
    session = await sessions("visual-studio-code", {"diagnostics": {"showAll": True}})
    uri = session.open(VECTOR_OPS)
    diags = await session.static(uri)
    assert {str(d.code) for d in _in_saxpy(diags)} >= CARDS
