"""No stale edit: a client whose version numbers go backwards never gets an edit computed for other text.

Reproducer: list the quick fix at version 1, change the text at version 5, then send other text as version 1
again; resolving the fix listed first used to return an edit for the first text (3 of 5 trials corrupted the
document). A version that does not increase now resets the document: its analysis, verification states, waiters
and jobs are dropped, and actions listed before are refused with ContentModified.
"""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.server.conftest import KERNELS, PINNED, SLOW_NVCC, Session, apply_edit

UNROLL_LINE = 7
PREFIX = "// one\n// two\n// three\n"


def send(s: Session, uri: str, version: int, text: str) -> None:
    s.versions[uri] = version
    s.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


@pytest.mark.parametrize("trial", range(5))
async def test_a_fix_listed_before_versions_went_back_is_refused(session: Session, trial: int) -> None:
    if session.name == "emacs":
        pytest.skip("Emacs 29 does not resolve code actions; its edits come with the list")
    original = KERNELS.read_text()
    uri = session.open(KERNELS)
    await session.static(uri)
    fix = next(a for a in await session.actions(uri, UNROLL_LINE) if a.kind == types.CodeActionKind.QuickFix)
    send(session, uri, 5, "// five\n" + original)
    if trial % 2:
        await session.static(uri, 5)
    current = PREFIX + original
    send(session, uri, 1, current)
    with pytest.raises(JsonRpcException) as err:
        await session.client.code_action_resolve_async(fix)
    assert err.value.code == -32801  # ContentModified
    # Actions listed now, for the text the server holds now, apply to it correctly.
    await session.static(uri, 1)
    fresh = next(a for a in await session.actions(uri, UNROLL_LINE + 3) if a.kind == types.CodeActionKind.QuickFix)
    fresh = await session.resolved(fresh)
    assert fresh.edit is not None
    fixed = apply_edit(current, fresh.edit, uri)
    assert fixed.startswith(PREFIX) and "    #pragma unroll\n    for (int k = 0; k < 5; ++k) {" in fixed


async def test_diagnostics_after_a_backwards_version_describe_the_new_text(session: Session) -> None:
    original = KERNELS.read_text()
    uri = session.open(KERNELS)
    first = await session.static(uri)
    send(session, uri, 4, original + "\n")
    await session.static(uri, 4)
    send(session, uri, 2, PREFIX + original)
    after = await session.static(uri, 2)
    unroll = [d for d in first if str(d.code) == "constant-trip-loop-without-unroll"]
    moved = [d for d in after if str(d.code) == "constant-trip-loop-without-unroll"]
    assert unroll and moved and moved[0].range.start.line == unroll[0].range.start.line + 3


async def test_a_backwards_version_cancels_the_documents_running_job(sessions) -> None:
    # The stand-in compiler never finishes, so the save's resource report runs until something cancels it.
    s: Session = await sessions("neovim", {**PINNED, "compiler": {"nvcc": str(SLOW_NVCC)}})
    original = KERNELS.read_text()
    uri = s.open(KERNELS)
    await s.static(uri)
    send(s, uri, 3, "// three\n" + original)
    await s.static(uri, 3)
    s.save(uri)
    running = await s.status(lambda p: p["running"] is not None and p["running"]["uri"] == uri)
    job_id = running["running"]["id"]
    send(s, uri, 2, PREFIX + original)
    await s.status(lambda p: p["running"] is None or p["running"]["id"] != job_id)
    await s.static(uri, 2)
    status = await s.command("warpwise.status")
    assert status["running"] is None or status["running"]["id"] != job_id
    assert status["queue"]["length"] == 0
