"""Profiling a file's kernels: on save, or from `warpwise.profileFile` (job queue).

The job is queued with the model of the saved version (for the launch shapes occupancy needs); its result comes
back through the queue's listener (`diagnostics.on_profile`). With the verification gate this becomes a GPU
profile; until then it is the compile-only resource report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from warpwise.server.features import progress
from warpwise.server.jobs import Job

if TYPE_CHECKING:
    from warpwise.server.features.verifying import Verifier


async def profile(v: Verifier, uri: str, priority: int, token: str | int | None = None) -> Job | None:
    """Queue the profile of a document's current version; return the job (None if the document is gone)."""
    doc = v.documents.get(uri)
    if doc is None:
        return None
    version = doc.version
    analysis = await v.analyses.wait_for(uri)
    doc = v.documents.get(uri)
    if analysis is None or doc is None or doc.version != version:
        return None
    snap = doc.capture(v.config.settings, v.config.generation)
    job = v.verification.submit_profile(snap, analysis.model, priority)
    if v.verification.verification_available()[0] and analysis.model.kernels:
        kernels = sorted({k.name for k in analysis.model.kernels})
        v.verification.submit_gpu_profile(snap, kernels, model=analysis.model)
    if token is not None:
        progress.attach_client_token(v.progress, job, token)
    return job
