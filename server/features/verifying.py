"""Verifying candidate rewrites: from a card match with a fix to a job in the gate's queue (job queue).

Triggered by `warpwise.verifyKernel`, by saving (`warpwise.verification.trigger` = `onSave`), or by typing
(`onType`, debounced: only the version the user paused on is verified). Each candidate is the current text with
one fix applied; results are kept per (document, content hash, card, span), so titles and hovers only ever
describe the exact text they were measured on. Candidates are submitted in the learned ranking's order, each with
the gate priority the ranking gives it (`warpwise.ranking.queue_priority`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from warpwise.server.features import progress as progress_feature
from warpwise.server.features import ranking
from warpwise.server.jobs import Job, Priority
from warpwise.server.services import Analyses, Config, ProgressBook, Tasks, Timers
from warpwise.skills.rewrite import apply_edits

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.providers import CardProvider
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)

ON_TYPE_DEBOUNCE_S = 1.5


@dataclass(frozen=True, slots=True)
class Verifier:
    """What queueing a document's jobs (verification, profiles) reads and submits to."""

    documents: DocumentStore
    analyses: Analyses
    verification: VerificationService
    config: Config
    cards: CardProvider
    tasks: Tasks
    progress: ProgressBook


async def verify_candidates(
    v: Verifier, uri: str, kernel: str | None, priority: int, token: str | int | None = None
) -> list[Job]:
    """Queue the verification of every candidate rewrite of a document (or of one kernel)."""
    available, _ = v.verification.verification_available()
    doc = v.documents.get(uri)
    if not available or doc is None:
        return []
    analysis = await v.analyses.wait_for(uri)
    doc = v.documents.get(uri)
    if analysis is None or doc is None or doc.version != analysis.version:
        return []
    snap = doc.capture(v.config.settings, v.config.generation)
    jobs = []
    preds = await asyncio.to_thread(ranking.predictions, v.verification, analysis)
    items = [
        i for i in analysis.items if i.has_fix and i.function is not None and (kernel is None or i.function == kernel)
    ]
    # Likely winners first (the queue runs equal priorities in submission order); predicted losers last, and the
    # gate's queue skips them when its GPU budget is short.
    items.sort(key=lambda i: -ranking.queue_priority(preds.get((i.function or "", i.id))))
    for item in items:
        assert item.function is not None
        pred = preds.get((item.function, item.id))
        fix = await asyncio.to_thread(v.cards.compute_fix, analysis.model, item)
        if fix is None:
            continue
        candidate = apply_edits(analysis.model.text, fix.edits)
        job = v.verification.submit_verify(
            snap,
            item.id,
            item.span,
            item.function,
            candidate,
            item.fix_title or item.id,
            priority,
            gate_priority=ranking.queue_priority(pred) if pred is not None else None,
            model=analysis.model,
        )
        if token is not None:
            progress_feature.attach_client_token(v.progress, job, token)
            token = None
        jobs.append(job)
    return jobs


def on_save(v: Verifier, uri: str) -> None:
    """Queue verification of the saved version when the trigger is `onSave`."""
    if v.config.settings.verification_trigger == "onSave" and v.verification.verification_available()[0]:
        v.tasks.spawn(verify_candidates(v, uri, None, Priority.ON_SAVE), f"verify-on-save {uri}")


def on_change(v: Verifier, uri: str, timers: Timers) -> None:
    """Restart the debounce timer of `onType` verification."""
    if v.config.settings.verification_trigger != "onType" or not v.verification.verification_available()[0]:
        return
    timers.start(
        uri,
        ON_TYPE_DEBOUNCE_S,
        lambda: v.tasks.spawn(verify_candidates(v, uri, None, Priority.BACKGROUND), f"verify-on-type {uri}"),
    )
