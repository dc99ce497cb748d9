"""Document synchronisation: open, change, save, close (all on the event loop; analysis is handed off)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.server import convert
from warpwise.server.documents import OpenDocument, is_cuda
from warpwise.server.features import diagnostics, profiling, verifying
from warpwise.server.jobs import Priority

if TYPE_CHECKING:
    from warpwise.server.app import WarpwiseServer

log = logging.getLogger(__name__)


def _path(ls: WarpwiseServer, uri: str) -> str:
    from pygls.uris import to_fs_path

    return to_fs_path(uri) or uri


def did_open(ls: WarpwiseServer, params: types.DidOpenTextDocumentParams) -> None:
    """Start tracking a CUDA document and queue its analysis (event loop)."""
    td = params.text_document
    if not is_cuda(td.uri, td.language_id, td.text):
        return
    doc = ls.documents.open(td.uri, _path(ls, td.uri), td.language_id, td.version, td.text)
    ls.schedule(doc)


def did_change(ls: WarpwiseServer, params: types.DidChangeTextDocumentParams) -> None:
    """Apply the changes to the server's copy and queue the new version for analysis (event loop)."""
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return
    for change in params.content_changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            doc.apply_range(
                convert.plain_position(change.range.start), convert.plain_position(change.range.end), change.text
            )
        else:
            doc.replace(change.text)
    old_version = doc.version
    if params.text_document.version is not None:
        doc.version = params.text_document.version
    else:
        doc.version += 1
    if doc.version <= old_version:
        reset(ls, doc, old_version)
    ls.schedule(doc)
    verifying.on_change(ls, doc.uri)


def reset(ls: WarpwiseServer, doc: OpenDocument, old_version: int) -> None:
    """Forget what was computed for a document whose version did not increase (event loop).

    Versions are how results find their text; a version that goes backwards or repeats could match an analysis,
    a code action or a job of other text. So the analysis chain restarts from the whole text, the analysis and
    the verification states are dropped, waiters are answered with nothing, and the document's jobs cancelled.
    Code actions listed before carry the old text's hash, so resolving them is refused.
    """
    log.info("%s went from version %d to %d; its results are dropped", doc.uri, old_version, doc.version)
    doc.pending = None
    doc.snapshot_version = None
    ls.analyses.pop(doc.uri, None)
    ls.verification.forget(doc.uri)
    ls.drop_waiters(doc.uri)
    if (timer := ls.debounce.pop(doc.uri, None)) is not None:
        timer.cancel()
    for job in ls.verification.queue.active_jobs():
        if job.uri == doc.uri:
            ls.verification.queue.cancel(job.id, f"the document's version went back to {doc.version}")


def did_save(ls: WarpwiseServer, params: types.DidSaveTextDocumentParams) -> None:
    """Queue the profile of the saved version when `warpwise.profile.onSave` is on (job queue)."""
    doc = ls.documents.get(params.text_document.uri)
    if doc is None:
        return
    if ls.settings.profile_on_save:
        ls.spawn(profiling.profile(ls, doc.uri, Priority.ON_SAVE), f"profile-on-save {doc.uri}")
    verifying.on_save(ls, doc.uri)


def did_close(ls: WarpwiseServer, params: types.DidCloseTextDocumentParams) -> None:
    """Stop tracking a document, drop its state and clear its diagnostics (event loop)."""
    uri = params.text_document.uri
    doc = ls.documents.close(uri)
    if doc is None:
        return
    if ls.lane is not None:
        ls.lane.forget(uri)
    ls.analyses.pop(uri, None)
    ls.verification.forget(uri)
    ls.card_provider.forget(doc.path)
    if (timer := ls.debounce.pop(uri, None)) is not None:
        timer.cancel()
    for job in ls.verification.queue.active_jobs():
        if job.uri == uri:
            ls.verification.queue.cancel(job.id, "the document was closed")
    diagnostics.clear(ls, uri)
