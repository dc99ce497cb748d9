"""Code lenses over each kernel: its last measured time (or compile-only resources) and waiting improvements."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.server import convert
from warpwise.server.features.code_actions import FAILED_STATES

if TYPE_CHECKING:
    from warpwise.server.app import WarpwiseServer


async def code_lens(ls: WarpwiseServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    """Answer `textDocument/codeLens` (analysis lane: reads the current version's analysis)."""
    uri = params.text_document.uri
    analysis = await ls.analysis_for(uri)
    if analysis is None:
        return None
    doc = ls.documents.get(uri)
    report = ls.verification.reports.get(uri)
    stale = report is not None and doc is not None and doc.content_hash != report.content_hash
    lenses: list[types.CodeLens] = []
    seen: set[str] = set()
    for fn in analysis.model.kernels:
        if fn.name in seen:
            continue
        seen.add(fn.name)
        rng = convert.span_range(analysis.model.lines, fn.span(fn.name_span))
        parts = ["not timed"]
        records = report.resources(fn.name) if report is not None else []
        if records:
            res = max(records, key=lambda r: (r.spills, r.registers))
            spill = f"spills {res.spills} B" if res.spills else "no spills"
            occ = report.occupancy(res) if report is not None else None
            occ_text = f", occupancy {occ.fraction:.0%}" if occ is not None else ""
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
        verified = unverified = 0
        for item in analysis.items:
            if item.function != fn.name or not item.has_fix:
                continue
            state = ls.verification.candidate_state(uri, analysis.content_hash, item.id, item.span)
            if state.state == "verified":
                verified += 1
            elif state.state not in FAILED_STATES:
                unverified += 1
        title = f"{verified} verified improvement{'s' if verified != 1 else ''} waiting"
        if unverified:
            title += f" · {unverified} not yet verified"
        lenses.append(
            types.CodeLens(
                range=rng,
                command=types.Command(
                    title=title, command="warpwise.verifyKernel", arguments=[{"uri": uri, "kernel": fn.name}]
                ),
            )
        )
    return lenses
