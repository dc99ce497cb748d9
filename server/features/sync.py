"""Document synchronisation: open, change, save, close (all on the event loop; analysis is handed off)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.server import convert
from warpwise.server.documents import DocumentStore, OpenDocument, is_cuda
from warpwise.server.features import diagnostics, profiling, verifying
from warpwise.server.jobs import Priority
from warpwise.server.services import Analyses, Config, Editor, ProgressBook, Tasks, Timers

if TYPE_CHECKING:
    from warpwise.server.providers import CardProvider
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)


def _path(uri: str) -> str:
    from pygls.uris import to_fs_path

    return to_fs_path(uri) or uri


def did_open(params: types.DidOpenTextDocumentParams, *, documents: DocumentStore, analyses: Analyses) -> None:
    """Start tracking a CUDA document and queue its analysis (event loop)."""
    td = params.text_document
    if not is_cuda(td.uri, td.language_id, td.text):
        return
    doc = documents.open(td.uri, _path(td.uri), td.language_id, td.version, td.text)
    analyses.schedule(doc)


def did_change(
    params: types.DidChangeTextDocumentParams,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    config: Config,
    timers: Timers,
    tasks: Tasks,
    cards: CardProvider,
    progress: ProgressBook,
) -> None:
    """Apply the changes to the server's copy and queue the new version for analysis (event loop)."""
    doc = documents.get(params.text_document.uri)
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
        reset(doc, old_version, analyses=analyses, verification=verification, timers=timers)
    analyses.schedule(doc)
    verify = verifying.Verifier(documents, analyses, verification, config, cards, tasks, progress)
    verifying.on_change(verify, doc.uri, timers)


def reset(
    doc: OpenDocument, old_version: int, *, analyses: Analyses, verification: VerificationService, timers: Timers
) -> None:
    """Forget what was computed for a document whose version did not increase (event loop).

    Versions are how results find their text; a version that goes backwards or repeats could match an analysis,
    a code action or a job of other text. So the analysis chain restarts from the whole text, the analysis and
    the verification states are dropped, waiters are answered with nothing, and the document's jobs cancelled.
    Code actions listed before carry the old text's hash, so resolving them is refused.
    """
    log.info("%s went from version %d to %d; its results are dropped", doc.uri, old_version, doc.version)
    doc.pending = None
    doc.snapshot_version = None
    analyses.reset(doc.uri)
    verification.forget(doc.uri)
    timers.cancel(doc.uri)
    for job in verification.queue.active_jobs():
        if job.uri == doc.uri:
            verification.queue.cancel(job.id, f"the document's version went back to {doc.version}")


def did_save(
    params: types.DidSaveTextDocumentParams,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    config: Config,
    cards: CardProvider,
    tasks: Tasks,
    progress: ProgressBook,
) -> None:
    """Queue the profile of the saved version when `warpwise.profile.onSave` is on (job queue)."""
    doc = documents.get(params.text_document.uri)
    if doc is None:
        return
    verify = verifying.Verifier(documents, analyses, verification, config, cards, tasks, progress)
    if config.settings.profile_on_save:
        tasks.spawn(profiling.profile(verify, doc.uri, Priority.ON_SAVE), f"profile-on-save {doc.uri}")
    verifying.on_save(verify, doc.uri)


def did_close(
    params: types.DidCloseTextDocumentParams,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    cards: CardProvider,
    timers: Timers,
    editor: Editor,
    pushed: dict[str, bool],
) -> None:
    """Stop tracking a document, drop its state and clear its diagnostics (event loop)."""
    uri = params.text_document.uri
    doc = documents.close(uri)
    if doc is None:
        return
    analyses.close(uri)
    verification.forget(uri)
    cards.forget(doc.path)
    timers.cancel(uri)
    for job in verification.queue.active_jobs():
        if job.uri == uri:
            verification.queue.cancel(job.id, "the document was closed")
    diagnostics.clear(uri, editor=editor, pushed=pushed)
