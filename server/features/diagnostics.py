"""Diagnostics from two sources kept apart: static findings (rules and cards) and profiling results.

Static findings come from the `Analysis` of the current version. Profiling results come from the job queue, for
the text that was saved; they are shown only while the document's text is that text (same content hash), so a
report is never shown on newer text, and they come back if an undo returns to it.

Clients that pull diagnostics (`textDocument/diagnostic`) get static findings by pull and profiling results by
push, so the two live in separate collections in the editor. Clients that only accept pushes get both merged in
one `publishDiagnostics`, tagged with the document version.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warpwise.server import convert, presentation
from warpwise.server.analysis import Analysis
from warpwise.server.documents import OpenDocument
from warpwise.server.jobs import Job, JobState
from warpwise.server.services import Analyses, ClientFeatures, Editor
from warpwise.server.verification import KernelProfile, ProfileReport

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)

STATIC_SOURCE = "warpwise"
PROFILE_SOURCE = "warpwise profile"
MAX_COMPILER_MESSAGES = 20


def static_diagnostics(
    client: ClientFeatures, analysis: Analysis, uri: str, verification: VerificationService
) -> list[types.Diagnostic]:
    """Return the findings of an analysis as LSP diagnostics."""
    lines = analysis.model.lines
    out = []
    for item, severity in presentation.shown(verification, analysis):
        related = None
        if item.related and client.related_information:
            related = [
                types.DiagnosticRelatedInformation(
                    location=types.Location(uri=uri, range=convert.span_range(lines, span)), message=msg
                )
                for msg, span in item.related
            ]
        out.append(
            types.Diagnostic(
                range=convert.span_range(lines, item.span),
                message=item.message,
                severity=convert.SEVERITY[severity],
                code=item.id,
                code_description=(
                    types.CodeDescription(href=item.doc_url) if item.doc_url and client.code_description else None
                ),
                source=STATIC_SOURCE,
                related_information=related,
                data={"source": item.source, "version": analysis.version},
            )
        )
    return out


def static_diagnostics_json(
    client: ClientFeatures, analysis: Analysis, uri: str, verification: VerificationService
) -> list[dict[str, Any]]:
    """Return the findings of an analysis as LSP diagnostics in JSON values, ready to send.

    The same diagnostics as `static_diagnostics`, unstructured; built directly because this runs on every
    keystroke, for every finding of the file, and going through lsprotocol's classes and cattrs cost more than
    the rest of publishing.
    """
    lines = analysis.model.lines
    related_info = client.related_information
    code_description = client.code_description
    out = []
    for item, severity in presentation.shown(verification, analysis):
        diag: dict[str, Any] = {
            "range": convert.span_range_json(lines, item.span),
            "message": item.message,
            "severity": SEVERITY_JSON[severity],
            "code": item.id,
        }
        if item.doc_url and code_description:
            diag["codeDescription"] = {"href": item.doc_url}
        diag["source"] = STATIC_SOURCE
        if item.related and related_info:
            diag["relatedInformation"] = [
                {"location": {"uri": uri, "range": convert.span_range_json(lines, span)}, "message": msg}
                for msg, span in item.related
            ]
        diag["data"] = {"source": item.source, "version": analysis.version}
        out.append(diag)
    return out


SEVERITY_JSON = {k: int(v) for k, v in convert.SEVERITY.items()}


def _bytes(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def kernel_summary(report: ProfileReport, kernel: str) -> tuple[str, bool] | None:
    """Return one line about a kernel's resources (and whether it spills), or None when not in the report."""
    records = report.resources(kernel)
    if not records:
        return None
    res = max(records, key=lambda r: (r.spills, r.registers, r.shared_bytes))
    parts = [f"{res.registers} registers"]
    if res.spills:
        parts.append(
            f"spills {_bytes(res.spills)} to local memory ({_bytes(res.spill_stores)} stores, "
            f"{_bytes(res.spill_loads)} loads)"
        )
    else:
        parts.append("no spills")
    parts.append(f"{_bytes(res.shared_bytes)} static shared memory")
    if res.stack_frame:
        parts.append(f"{_bytes(res.stack_frame)} stack")
    occ = report.occupancy(res)
    shape = report.launches.get(kernel)
    if occ is not None and shape is not None:
        limit = "" if occ.limiter in ("warps per SM",) else f", limited by {occ.limiter}"
        occ_text = (
            f"theoretical occupancy {occ.fraction:.0%} ({occ.active_warps} of {occ.max_warps} warps per SM) at "
            f"{shape.block_size} threads per block (launch at line {shape.line + 1}){limit}"
        )
    elif shape is None:
        occ_text = "occupancy unknown (no launch with a constant block size in this file)"
    else:
        occ_text = f"occupancy unknown for {res.arch}"
    name = f"`{kernel}`" + (f" ({len(records)} instantiations; the heaviest shown)" if len(records) > 1 else "")
    tool = f", {report.toolkit}" if report.toolkit else ""
    return f"{name}: {', '.join(parts)}; {occ_text} [compile-only, {res.arch}{tool}]", res.spills > 0


def profile_diagnostics(report: ProfileReport, analysis: Analysis) -> list[types.Diagnostic]:
    """Return a profile's diagnostics on the kernels' names of the (identical) analysed text."""
    lines = analysis.model.lines
    out = []
    seen: set[str] = set()
    for fn in analysis.model.kernels:
        if fn.name in seen:
            continue
        seen.add(fn.name)
        summary = kernel_summary(report, fn.name)
        if summary is None:
            continue
        text, spills = summary
        out.append(
            types.Diagnostic(
                range=convert.span_range(lines, fn.span(fn.name_span)),
                message=text,
                severity=types.DiagnosticSeverity.Warning if spills else types.DiagnosticSeverity.Information,
                code="register-spills" if spills else "resource-report",
                source=PROFILE_SOURCE,
                data={"source": "profile", "mode": report.mode},
            )
        )
    if report.status == "compile_failed":
        for msg in [m for m in report.messages if m.severity == "error"][:MAX_COMPILER_MESSAGES]:
            start = lines.line_start(msg.line)
            end = lines.line_start(msg.line + 1)
            line_text = analysis.model.text[start:end]
            indent = len(line_text) - len(line_text.lstrip())
            content_end = start + len(line_text.rstrip())
            out.append(
                types.Diagnostic(
                    range=convert.span_range(lines, (start + indent, max(start + indent, content_end))),
                    message=f"nvcc: {msg.message} (the compile-only resource report could not be built)",
                    severity=types.DiagnosticSeverity.Error,
                    code="compile-error",
                    source=PROFILE_SOURCE,
                    data={"source": "profile", "mode": report.mode},
                )
            )
    elif report.status == "timed_out" and analysis.model.kernels:
        fn = analysis.model.kernels[0]
        out.append(
            types.Diagnostic(
                range=convert.span_range(lines, fn.span(fn.name_span)),
                message=report.detail,
                severity=types.DiagnosticSeverity.Information,
                code="profile-timed-out",
                source=PROFILE_SOURCE,
            )
        )
    return out


def gpu_profile_line(p: KernelProfile) -> str:
    """Return one line about a kernel's GPU profile."""
    parts = []
    if p.median_ms is not None:
        iqr = f" (IQR {p.iqr_ms:.4f} ms)" if p.iqr_ms is not None else ""
        parts.append(f"{p.median_ms:.4f} ms median{iqr} on {p.gpu or 'the GPU'}")
    if p.dram_gbps is not None:
        pct = f" ({p.dram_pct:.0f}% of DRAM peak)" if p.dram_pct is not None else ""
        parts.append(f"{p.dram_gbps:,.0f} GB/s{pct}")
    if p.gflops is not None:
        pct = f" ({p.sm_pct:.0f}% SM throughput)" if p.sm_pct is not None else ""
        parts.append(f"{p.gflops / 1000:,.2f} TFLOP/s{pct}")
    if p.occupancy_pct is not None:
        parts.append(f"achieved occupancy {p.occupancy_pct:.0f}%")
    if p.registers is not None:
        spills = "no spills" if not p.spills else f"spills {p.spills} B"
        parts.append(f"{p.registers} registers, {spills}")
    if p.bottleneck:
        parts.append(f"bottleneck: {p.bottleneck}")
    return f"`{p.kernel}`: " + "; ".join(parts)


def gpu_profile_diagnostics(
    verification: VerificationService, doc: OpenDocument, analysis: Analysis
) -> list[types.Diagnostic]:
    """Return GPU profiles of the current text on the kernels' names."""
    entry = verification.gpu_profiles.get(doc.uri)
    if entry is None or entry[0] != doc.content_hash:
        return []
    out = []
    for fn in analysis.model.kernels:
        p = entry[1].get(fn.name)
        if p is None or p.median_ms is None:
            continue
        out.append(
            types.Diagnostic(
                range=convert.span_range(analysis.model.lines, fn.span(fn.name_span)),
                message=gpu_profile_line(p),
                severity=types.DiagnosticSeverity.Information,
                code="gpu-profile",
                source=PROFILE_SOURCE,
                data={"source": "profile", "mode": "gpu"},
            )
        )
    return out


def verification_diagnostics(
    verification: VerificationService, doc: OpenDocument, analysis: Analysis
) -> list[types.Diagnostic]:
    """Return the finished verifications of candidates of the current text, on their findings."""
    out = []
    for card_id, span, state in verification.candidates_for(doc.uri, doc.content_hash):
        if state.state in ("unverified", "queued", "running"):
            continue
        item = next((i for i in analysis.items if i.id == card_id and tuple(i.span) == tuple(span)), None)
        title = item.fix_title if item is not None and item.fix_title else card_id
        if state.state == "verified" and state.speedup is not None:
            spread = f" ± {state.spread:.0%}" if state.spread is not None else ""
            text = f"{title}: verified {state.speedup:.2f}x{spread} on {state.gpu}"
        elif state.state == "reported":
            text = f"{title}: {state.detail or f'reported by {state.reported_by}, not verified here'}"
        else:
            text = f"{title}: {state.state.replace('_', ' ')}: {state.detail}; the fix is not offered"
        out.append(
            types.Diagnostic(
                range=convert.span_range(analysis.model.lines, span),
                message=text,
                severity=types.DiagnosticSeverity.Information,
                code=f"verification-{state.state}",
                source=PROFILE_SOURCE,
                data={"source": "verification", "card": card_id},
            )
        )
    return out


def visible_report(verification: VerificationService, doc: OpenDocument) -> ProfileReport | None:
    """Return the document's last profile if it was taken of exactly the current text."""
    report = verification.reports.get(doc.uri)
    if report is None or report.content_hash != doc.content_hash:
        return None
    return report


def publish(
    doc: OpenDocument,
    analysis: Analysis,
    *,
    verification: VerificationService,
    client: ClientFeatures,
    editor: Editor,
    pushed: dict[str, bool],
) -> None:
    """Push the document's diagnostics (both sources, or profiling alone for pull clients)."""
    report = visible_report(verification, doc)
    profile = profile_diagnostics(report, analysis) if report is not None else []
    profile += gpu_profile_diagnostics(verification, doc, analysis)
    profile += verification_diagnostics(verification, doc, analysis)
    if client.pull_diagnostics:
        if not profile and not pushed.get(doc.uri):
            return
        pushed[doc.uri] = bool(profile)
        diags = []
    else:
        diags = static_diagnostics_json(client, analysis, doc.uri, verification)
    diags += [editor.unstructure(d) for d in profile]
    editor.notify_json(
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, {"uri": doc.uri, "diagnostics": diags, "version": analysis.version}
    )


def on_analysis(
    doc: OpenDocument,
    analysis: Analysis,
    *,
    verification: VerificationService,
    client: ClientFeatures,
    editor: Editor,
    pushed: dict[str, bool],
) -> None:
    """Publish after a fresh analysis of the current version (event loop)."""
    if analysis.skipped:
        log.info("%s: %s", doc.uri, analysis.skipped)
    publish(doc, analysis, verification=verification, client=client, editor=editor, pushed=pushed)


def on_result(
    job: Job,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    client: ClientFeatures,
    editor: Editor,
    pushed: dict[str, bool],
) -> None:
    """Show a finished verification or GPU profile if the document still has that text (event loop)."""
    if job.uri is None or (doc := documents.get(job.uri)) is None:
        return
    analysis = analyses.current(doc.uri)
    if analysis is not None:
        publish(doc, analysis, verification=verification, client=client, editor=editor, pushed=pushed)
    if client.code_lens_refresh:
        editor.refresh_code_lenses()


def on_profile(
    job: Job,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    client: ClientFeatures,
    editor: Editor,
    pushed: dict[str, bool],
) -> None:
    """Keep a finished profile and show it if the document still has the profiled text (event loop)."""
    report = job.result
    if job.state is not JobState.DONE or not isinstance(report, ProfileReport):
        return
    doc = documents.get(report.uri)
    if doc is None:
        return
    previous = verification.reports.get(report.uri)
    if previous is not None and previous.finished_at > report.finished_at:
        return
    verification.reports[report.uri] = report
    if report.status == "no_compiler":
        editor.show_message(types.MessageType.Info, f"warpwise: {report.detail}")
    analysis = analyses.current(doc.uri)
    if analysis is not None:
        publish(doc, analysis, verification=verification, client=client, editor=editor, pushed=pushed)
    if client.code_lens_refresh:
        editor.refresh_code_lenses()


def clear(uri: str, *, editor: Editor, pushed: dict[str, bool]) -> None:
    """Remove every diagnostic of a closed document."""
    pushed.pop(uri, None)
    editor.publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


async def pull(
    analysis: Analysis,
    params: types.DocumentDiagnosticParams,
    *,
    client: ClientFeatures,
    verification: VerificationService,
) -> types.DocumentDiagnosticReport:
    """Return the static findings of the current version (`textDocument/diagnostic`; analysis lane)."""
    uri = params.text_document.uri
    result_id = f"{analysis.version}.{analysis.generation}"
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    items = static_diagnostics(client, analysis, uri, verification)
    return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=result_id)
