"""`$/progress` for every job of the queue, and cancellation from the editor (event loop).

Each job gets one progress token: the client's own when it sent one with the command, otherwise one the server
creates (`window/workDoneProgress/create`, when the client supports it). A per-job task sends the events in
order (begin when queued, reports while it runs, end with the outcome), so a fast job cannot report before its
token exists. `window/workDoneProgress/cancel` cancels the job behind the token.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warpwise.server.jobs import Job, JobState
from warpwise.server.services import ClientFeatures, Editor, ProgressBook, Tasks

if TYPE_CHECKING:
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)


@dataclass
class JobProgress:
    """The progress channel of one job."""

    job: Job
    token: str | int | None = None
    client_token: bool = False
    events: asyncio.Queue = field(default_factory=asyncio.Queue)


def attach_client_token(book: ProgressBook, job: Job, token: str | int) -> None:
    """Report a job's progress on a token the client created (from `ExecuteCommandParams.workDoneToken`)."""
    p = book.jobs.get(job.id)
    if p is not None and p.token is None:
        p.token = token
        p.client_token = True


def on_job_event(
    job: Job,
    event: str,
    *,
    progress: ProgressBook,
    verification: VerificationService,
    client: ClientFeatures,
    editor: Editor,
    tasks: Tasks,
) -> None:
    """Queue a job's state change for its progress channel."""
    p = progress.jobs.get(job.id)
    if p is None:
        if event != "queued":
            return
        p = JobProgress(job)
        progress.jobs[job.id] = p
        asyncio.get_running_loop().call_soon(_start, progress, client, editor, tasks, p)
    p.events.put_nowait((event, _message(verification, job, event), job.percentage))


def _message(verification: VerificationService, job: Job, event: str) -> str:
    if event == "queued":
        ahead = verification.queue.length - 1 + (1 if verification.queue.running is not None else 0)
        return f"queued ({ahead} ahead)" if ahead > 0 else "queued"
    if event == "end":
        if job.state is JobState.CANCELLED:
            return f"cancelled: {job.cancel_reason}"
        if job.state is JobState.FAILED:
            return f"failed: {job.error}"
        return str(getattr(job.result, "detail", "") or "done")
    return job.stage


def _start(book: ProgressBook, client: ClientFeatures, editor: Editor, tasks: Tasks, p: JobProgress) -> None:
    if p.token is None:
        if not client.work_done_progress:
            book.jobs.pop(p.job.id, None)
            return
        p.token = f"warpwise/{p.job.id}"
    tasks.spawn(_report(book, editor.progress, p), f"progress {p.job.id}")


async def _report(book: ProgressBook, work_done: Any, p: JobProgress) -> None:
    token = p.token
    assert token is not None
    try:
        if not p.client_token:
            try:
                await work_done.create_async(token)
            except Exception as exc:  # A client that refuses progress still gets the job done.
                log.info("the client did not create progress token %s: %s", token, exc)
                return
        book.tokens[token] = p.job.id
        begun = False
        while True:
            event, message, percentage = await p.events.get()
            if not begun:
                work_done.begin(
                    token, types.WorkDoneProgressBegin(title=p.job.title, cancellable=True, message=message)
                )
                begun = True
                if event == "queued":
                    continue
            if event == "end":
                work_done.end(token, types.WorkDoneProgressEnd(message=message))
                return
            work_done.report(
                token, types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True)
            )
    finally:
        book.jobs.pop(p.job.id, None)
        book.tokens.pop(token, None)
        work_done.tokens.pop(token, None)


def cancel(
    params: types.WorkDoneProgressCancelParams, *, progress: ProgressBook, verification: VerificationService
) -> None:
    """Cancel the job behind a progress token (event loop)."""
    job_id = progress.tokens.get(params.token)
    if job_id is None:
        return
    verification.queue.cancel(job_id, "cancelled from the editor")


def describe(book: ProgressBook) -> list[dict[str, Any]]:
    """Return the jobs that currently report progress."""
    return [p.job.describe() | {"token": p.token} for p in book.jobs.values()]
