"""Hover: card intent, precondition verdicts, risk, evidence and verification state; kernel resources."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.server.conftest import KERNELS, Session


def _text(hover: types.Hover | None) -> str:
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


async def test_hover_on_a_card_finding(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    text = _text(await session.hover(uri, 7, 6))
    assert "**constant-trip-loop-without-unroll**" in text
    assert "**Intent.**" in text
    assert "Preconditions for this code" in text
    assert "✅ holds" in text
    assert "**Risk.**" in text
    assert "Evidence" in text
    # No verification gate is wired: the hover says so rather than inventing a result.
    assert "**Verification.** not yet verified" in text


async def test_hover_on_a_rule_finding_shows_its_summary(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    text = _text(await session.hover(uri, 22, 6))
    # A column walk moves 8x the DRAM sectors of a coalesced copy: a warning without a prediction (`skills.traffic`).
    assert "**uncoalesced-global-access** · warning · rule" in text
    assert "Shown as a warning: each warp's access touches 32 32-byte sectors where a contiguous one touches 4" in text
    assert "Adjacent threads access global memory far apart." in text


async def test_hover_says_where_a_configured_severity_comes_from(session: Session, tmp_path: Path) -> None:
    (tmp_path / "warpwise.toml").write_text('severity = { "uncoalesced-global-access" = "hint" }\n')
    (tmp_path / "kernels.cu").write_bytes(KERNELS.read_bytes())
    uri = session.open(tmp_path / "kernels.cu")
    await session.static(uri)
    text = _text(await session.hover(uri, 22, 6))
    assert "**uncoalesced-global-access** · hint · rule" in text
    assert f"*Configured: severity `hint` from `{tmp_path / 'warpwise.toml'}`.*" in text


async def test_hover_on_a_kernel_name_shows_launches_and_resources(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    hover = await session.hover(uri, 14, 18)
    text = _text(hover)
    assert "**kernel `saxpy`**" in text
    assert "grid `(n + 255) / 256`, block `256`" in text
    assert "save the file to build the compile-only resource report" in text
    assert "no GPU timing" in text
    # Where the file's build flags come from (issue 17).
    assert "**Build**: " in text and "flags" in text
    assert hover is not None and hover.range is not None and hover.range.start.line == 14
    # The same hover at the launch site's kernel name.
    assert "**kernel `saxpy`**" in _text(await session.hover(uri, 32, 3))


async def test_hover_elsewhere_is_empty(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    assert await session.hover(uri, 0, 3) is None


async def test_hover_waits_for_the_analysis_of_the_current_version(session: Session) -> None:
    uri = session.open(KERNELS)
    session.change(uri, (14, 0), (14, 0), "\n")
    # No wait for diagnostics: the hover itself waits for version 2, where `saxpy` moved one line down.
    assert "**kernel `saxpy`**" in _text(await session.hover(uri, 15, 18))


async def test_hover_on_a_parameter_use(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    text = _text(await session.hover(uri, 16, 20))
    assert text.startswith("**parameter `a`** of kernel `saxpy`")
    assert "scalar, passed by value" in text and "passed `2.0f` at the launch on line 33" in text
    text = _text(await session.hover(uri, 16, 13))
    assert "**parameter `y`**" in text and "1 read(s), 1 write(s)" in text and "no const, no __restrict__" in text
