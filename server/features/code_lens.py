"""Code lenses over each kernel: its last measured time (or compile-only resources), waiting improvements, hints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.analyzers.findings import Severity
from warpwise.server import convert, presentation
from warpwise.server.analysis import Analysis
from warpwise.server.features.code_actions import FAILED_STATES

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.verification import VerificationService


async def code_lens(
    analysis: Analysis, params: types.CodeLensParams, *, documents: DocumentStore, verification: VerificationService
) -> list[types.CodeLens] | None:
    """Answer `textDocument/codeLens` (analysis lane: reads the current version's analysis)."""
    uri = params.text_document.uri
    doc = documents.get(uri)
    report = verification.reports.get(uri)
    stale = report is not None and doc is not None and doc.content_hash != report.content_hash
    lenses: list[types.CodeLens] = []
    seen: set[str] = set()
    shown = presentation.shown(verification, analysis)
    for fn in analysis.model.kernels:
        if fn.name in seen:
            continue
        seen.add(fn.name)
        rng = convert.span_range(analysis.model.lines, fn.span(fn.name_span))
        gpu_entry = verification.gpu_profiles.get(uri)
        timed = gpu_entry[1].get(fn.name) if gpu_entry is not None else None
        if timed is not None and timed.median_ms is not None:
            before = (
                " (before your edits)" if doc is not None and gpu_entry and gpu_entry[0] != doc.content_hash else ""
            )
            parts = [f"{timed.median_ms:.4f} ms on {timed.gpu or 'the GPU'}{before}"]
        else:
            parts = ["not timed"]
        records = report.resources(fn.name) if report is not None else []
        if timed is not None and timed.median_ms is not None:
            # The GPU build's own figures (the gate builds with NVRTC; its register count can differ from nvcc's).
            spill = f"spills {timed.spills} B" if timed.spills else "no spills"
            occ = f", achieved occupancy {timed.occupancy_pct:.0f}%" if timed.occupancy_pct is not None else ""
            if timed.registers is not None:
                parts.append(f"{timed.registers} registers, {spill}{occ}")
        elif records:
            res = max(records, key=lambda r: (r.spills, r.registers))
            spill = f"spills {res.spills} B" if res.spills else "no spills"
            occupancy = report.occupancy(res) if report is not None else None
            occ_text = f", occupancy {occupancy.fraction:.0%}" if occupancy is not None else ""
            parts.append(f"{res.registers} registers, {spill}{occ_text}" + (" (before your edits)" if stale else ""))
        elif report is None:
            parts.append("save to build the resource report")
        lenses.append(
            types.CodeLens(
                range=rng,
                command=types.Command(
                    title=" · ".join(parts), command="warpwise.profileFile", arguments=[{"uri": uri}]
                ),
            )
        )
        verified = unverified = hints = 0
        for item, severity in shown:
            if item.function != fn.name:
                continue
            hints += severity is Severity.HINT
            if not item.has_fix:
                continue
            state = verification.candidate_state(uri, analysis.content_hash, item.id, item.span)
            if state.state == "verified":
                verified += 1
            elif state.state not in FAILED_STATES:
                unverified += 1
        title = f"{verified} verified improvement{'s' if verified != 1 else ''} waiting"
        if unverified:
            title += f" · {unverified} not yet verified"
        if hints:
            title += f" · {hints} hint{'s' if hints != 1 else ''}"
        lenses.append(
            types.CodeLens(
                range=rng,
                command=types.Command(
                    title=title, command="warpwise.verifyKernel", arguments=[{"uri": uri, "kernel": fn.name}]
                ),
            )
        )
    return lenses
