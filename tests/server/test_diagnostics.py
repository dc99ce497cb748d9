"""Static diagnostics: published (or pulled) per version, with codes, links and related information."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.server.conftest import KERNELS, Session


async def test_open_reports_rules_and_cards(session: Session) -> None:
    uri = session.open(KERNELS)
    diags = await session.static(uri)
    codes = sorted(str(d.code) for d in diags)
    assert codes == [
        "constant-trip-loop-without-unroll",
        "missing-restrict",
        "uncoalesced-global-access",
        "uncoalesced-global-access",
    ]
    by_code = {str(d.code): d for d in diags}
    unroll = by_code["constant-trip-loop-without-unroll"]
    assert unroll.range.start == types.Position(line=7, character=4)
    assert unroll.source == "warpwise"
    assert "`k`" in unroll.message
    restrict = by_code["missing-restrict"]
    # The quiet default (issue 18): no gain is predicted for it, so it is a hint, not a squiggle.
    assert restrict.severity == types.DiagnosticSeverity.Hint
    # `column_copy` walks columns: each warp touches 32 sectors where a coalesced copy touches 4, a large traffic
    # win, so it is a warning without a ranking prediction (`skills.traffic`).
    uncoalesced = [d for d in diags if str(d.code) == "uncoalesced-global-access"]
    assert {d.severity for d in uncoalesced} == {types.DiagnosticSeverity.Warning}
    caps = session.caps.text_document.publish_diagnostics if session.caps.text_document else None
    if caps is not None and caps.code_description_support:
        assert restrict.code_description is not None
        assert restrict.code_description.href.endswith("missing-restrict/card.md")
    else:
        assert restrict.code_description is None
    if caps is not None and caps.related_information:
        assert restrict.related_information, "the launch site that supplies the precondition"
        assert restrict.related_information[0].location.range.start.line == 32
    else:
        assert restrict.related_information is None


async def test_edits_update_diagnostics_for_the_new_version(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    # Make the loop's trip count a runtime value: the unroll card no longer applies.
    version = session.change(uri, (7, 24), (7, 25), "n")
    diags = await session.static(uri, version)
    assert "constant-trip-loop-without-unroll" not in {str(d.code) for d in diags}
    version = session.change(uri, (7, 24), (7, 25), "5")
    diags = await session.static(uri, version)
    assert "constant-trip-loop-without-unroll" in {str(d.code) for d in diags}


async def test_full_text_change_and_close(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    version = session.replace_all(uri, "__global__ void k(float* x) { x[threadIdx.x * 32] = 0; }\n")
    diags = await session.static(uri, version)
    assert [str(d.code) for d in diags] == ["uncoalesced-global-access"]
    session.client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    cleared = await session.pushed(uri, lambda p: p.version is None)
    assert list(cleared.diagnostics) == []


async def test_project_rule_settings_reach_the_editor(session: Session, tmp_path: Path) -> None:
    """`[tool.warpwise]` per-file-ignores and severity overrides apply to open documents, as in `check`."""
    root = tmp_path
    (root / "pyproject.toml").write_text(
        "[tool.warpwise]\n"
        'per-file-ignores = { "quiet/**" = ["uncoalesced-global-access"] }\n'
        'severity = { "missing-restrict" = "error" }\n'
    )
    (root / "quiet").mkdir()
    shown = root / "kernels.cu"
    quiet = root / "quiet" / "kernels.cu"
    for p in (shown, quiet):
        p.write_bytes(KERNELS.read_bytes())
    diags = await session.static(session.open(shown))
    by_code = {str(d.code): d for d in diags}
    assert by_code["missing-restrict"].severity == types.DiagnosticSeverity.Error
    assert "uncoalesced-global-access" in by_code
    codes = {str(d.code) for d in await session.static(session.open(quiet))}
    assert "uncoalesced-global-access" not in codes and "missing-restrict" in codes


async def test_show_all_restores_every_declared_severity(session: Session) -> None:
    uri = session.open(KERNELS)
    quiet = {(str(d.code), d.range.start.line): d.severity for d in await session.static(uri)}
    assert quiet[("missing-restrict", 14)] == types.DiagnosticSeverity.Hint
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpwise": {"diagnostics": {"showAll": True}}})
    )
    if session.pulls:
        diags = await session.static(uri)
    else:
        params = await session.pushed(
            uri,
            lambda p: any(
                str(d.code) == "missing-restrict" and d.severity == types.DiagnosticSeverity.Information
                for d in p.diagnostics
            ),
        )
        diags = [d for d in params.diagnostics if d.source == "warpwise"]
    full = {(str(d.code), d.range.start.line): d.severity for d in diags}
    assert set(full) == set(quiet)
    assert full[("missing-restrict", 14)] == types.DiagnosticSeverity.Information
    assert any(full[k] == types.DiagnosticSeverity.Warning for k in full if k[0] == "uncoalesced-global-access")
