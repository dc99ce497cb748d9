"""Hover: on a finding, what the card or rule says and why; on a kernel's name, its resources and last profile.

Runs on the event loop over the immutable `Analysis` of the current version (waiting for it when the analysis
thread has not finished it yet); building the text is a lookup, a few hundred microseconds at most.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.analyzers.model import FileModel, Function
from warpwise.server import convert, presentation
from warpwise.server.analysis import Analysis
from warpwise.server.features import ranking
from warpwise.server.features.diagnostics import gpu_profile_line, kernel_summary
from warpwise.server.providers import Item, file_policy
from warpwise.server.services import ClientFeatures
from warpwise.server.verification import CandidateState
from warpwise.skills.model import Applicability

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.verification import VerificationService

_VERDICT_MARK = {"holds": "✅ holds", "violated": "❌ violated", "unknown": "❔ unknown"}


async def hover(
    analysis: Analysis,
    params: types.HoverParams,
    *,
    verification: VerificationService,
    documents: DocumentStore,
    client: ClientFeatures,
) -> types.Hover | None:
    """Answer `textDocument/hover` (analysis lane: reads the current version's analysis)."""
    lines = analysis.model.lines
    offset = convert.offset(lines, params.position)
    items = [i for i in analysis.items if i.span[0] <= offset <= i.span[1]]
    sections: list[str] = []
    rng = None
    if items:
        items.sort(key=lambda i: i.span[1] - i.span[0])
        if any(i.source == "card" and i.has_fix for i in items[:3]):
            # Computed once per version, off the loop.
            await asyncio.to_thread(ranking.predictions, verification, analysis)
        for item in items[:3]:
            sections.append(_item_markdown(verification, analysis, item))
        rng = convert.span_range(lines, items[0].span)
    kernel, name_span = _kernel_at(analysis.model, offset)
    if kernel is not None and name_span is not None:
        sections.append(_kernel_markdown(verification, documents, analysis, kernel))
        rng = rng or convert.span_range(lines, name_span)
    elif not items:
        found = _identifier_markdown(analysis.model, offset)
        if found is not None:
            sections.append(found[0])
            rng = convert.span_range(lines, found[1])
    if not sections:
        return None
    text = "\n\n---\n\n".join(sections)
    kind = types.MarkupKind.Markdown if client.markdown else types.MarkupKind.PlainText
    return types.Hover(contents=types.MarkupContent(kind=kind, value=text), range=rng)


def _kernel_at(model: FileModel, offset: int) -> tuple[Function | None, tuple[int, int] | None]:
    """Return the kernel whose name (at its definition or at a launch) is under the cursor."""
    for fn in model.kernels:
        span = fn.span(fn.name_span)
        if span[0] <= offset <= span[1]:
            return fn, span
    for host, launch in model.launches:
        span = host.span(launch.name_span)
        if span[0] <= offset <= span[1]:
            fn = model.function(launch.kernel)
            if fn is not None and fn.is_kernel:
                return fn, span
    return None, None


def _identifier_at(data: bytes, offset: int) -> tuple[str, tuple[int, int]] | None:
    """Return the C identifier under a byte offset and its span."""
    start = end = offset
    while start > 0 and (chr(data[start - 1]).isalnum() or data[start - 1] == 0x5F):
        start -= 1
    while end < len(data) and (chr(data[end]).isalnum() or data[end] == 0x5F):
        end += 1
    word = data[start:end].decode("ascii", "replace")
    if not word or word[0].isdigit():
        return None
    return word, (start, end)


def _identifier_markdown(model: FileModel, offset: int) -> tuple[str, tuple[int, int]] | None:
    """Describe a parameter or local of the function under the cursor, from the kernel model."""
    fn = model.function_at(offset)
    found = _identifier_at(model.text, offset) if fn is not None else None
    if fn is None or found is None:
        return None
    name, span = found
    kind = "kernel" if fn.is_kernel else "function"
    param = fn.param(name)
    if param is not None:
        out = [f"**parameter `{name}`** of {kind} `{fn.name}`", "", "```cuda", param.type.strip() + f" {name}", "```"]
        accesses = [a for a in fn.accesses if a.base == name]
        if param.is_pointer:
            reads = sum(1 for a in accesses if a.kind.value in ("read", "read_write"))
            writes = sum(1 for a in accesses if a.kind.value in ("write", "read_write", "atomic"))
            qualifiers = [q for q, on in (("const", param.is_const), ("__restrict__", param.is_restrict)) if on]
            out += [
                "",
                f"pointer ({', '.join(qualifiers) or 'no const, no __restrict__'}); {reads} read(s), "
                f"{writes} write(s) in this {kind}",
            ]
            patterns = sorted({a.pattern.value for a in accesses})
            if patterns:
                out.append(f"across a warp: {', '.join(patterns)}")
        else:
            out += ["", "scalar, passed by value (uniform across the block)"]
        for host, launch in model.launches_of(fn.name)[:3]:
            if param.index < len(launch.args):
                line = model.lines.position(host.span(launch.span)[0]).line + 1
                out.append(f"- passed `{launch.args[param.index].strip()}` at the launch on line {line}")
        return "\n".join(out), span
    local = fn.locals.get(name)
    if local is not None:
        return f"**local `{name}`** in {kind} `{fn.name}`: `{local}`", span
    return None


def verification_line(state: CandidateState) -> str:
    """Return one line about a candidate's verification."""
    if state.state == "verified" and state.speedup is not None:
        spread = f" ± {state.spread:.0%}" if state.spread is not None else ""
        return f"verified {state.speedup:.2f}x{spread} on {state.gpu}"
    if state.state == "reported":
        return state.detail or f"reported by {state.reported_by}, not verified here"
    if state.state in ("queued", "running"):
        return f"{state.state}{': ' + state.detail if state.detail else ''}"
    if state.state == "unverified":
        return f"not yet verified{' (' + state.detail + ')' if state.detail else ''}"
    return f"{state.state.replace('_', ' ')}{': ' + state.detail if state.detail else ''}"


def _item_markdown(verification: VerificationService, analysis: Analysis, item: Item) -> str:
    lines = analysis.model.lines
    kind = "skill card" if item.source == "card" else "rule"
    severity, why = presentation.explain(verification, analysis, item)
    head = f"**{item.id}** · {severity.value} · {kind}"
    if item.card is not None and item.card.status:
        head += f" ({item.card.status})"
    out = [head, "", item.message]
    if why:
        out += ["", f"*{why}*"]
    configured = file_policy(analysis.model.path).describe(item.id)
    if configured is not None:
        out += ["", f"*Configured: {configured}.*"]
    if item.card is not None:
        out += ["", f"**Intent.** {item.card.intent}"]
    elif item.summary:
        out += ["", f"*{item.summary}*"]
    if item.verdicts:
        out += ["", "**Preconditions for this code**", ""]
        for v in item.verdicts:
            mark = _VERDICT_MARK.get(v.verdict, v.verdict)
            out.append(f"- {mark} — {v.name} ({v.axis.replace('_', ' ')}): {v.reason}")
    if item.card is not None:
        if item.card.risk:
            out += ["", f"**Risk.** {item.card.risk}"]
        if item.card.evidence:
            out += ["", "**Evidence**", ""]
            for e in item.card.evidence[:5]:
                spread = f" ± {e.spread:.0%}" if e.spread is not None else ""
                out.append(f"- {e.speedup:.2f}x{spread} on {e.gpu} ({e.kernel}, {e.date}; {e.source})")
        else:
            out += ["", "**Evidence.** no measured records yet"]
    if item.source == "card":
        analysis_hash = analysis.content_hash
        state = verification.candidate_state(analysis.uri, analysis_hash, item.id, item.span)
        if item.has_fix:
            out += ["", f"**Verification.** {verification_line(state)}"]
            pred = ranking.prediction(verification, analysis, item.function or "", item.id)
            if pred is not None and state.state != "verified":
                gpu = verification.gpu
                out += ["", ranking.hover_line(pred, gpu.name if gpu is not None and gpu.found else None)]
        elif item.applicability is Applicability.DISPLAY_ONLY:
            out += ["", "**Fix.** advice only; this card has no automatic rewrite"]
    if item.related:
        out += ["", "**Related**", ""]
        for msg, span in item.related:
            out.append(f"- line {lines.position(span[0]).line + 1}: {msg}")
    if item.doc_url:
        out += ["", f"[Documentation]({item.doc_url})"]
    return "\n".join(out)


def _flags_line(path: str, analysis: Analysis) -> str:
    """Return where the file's build flags come from (project configuration, compile_commands.json, settings)."""
    from warpwise.server.verification import build_flags

    try:
        flags = build_flags(path, analysis.settings)
    except (OSError, ValueError) as exc:
        return f"the project configuration could not be read ({exc})"
    text = flags.describe()
    shown = " ".join((*flags.common_options(), *flags.nvcc_flags))
    problems = "; ".join(str(p) for p in flags.problems[:3])
    return text + (f" (`{shown}`)" if flags.origins else "") + (f"; problems: {problems}" if problems else "")


def _kernel_markdown(
    verification: VerificationService, documents: DocumentStore, analysis: Analysis, fn: Function
) -> str:
    model = analysis.model
    out = [f"**kernel `{fn.name}`**", "", "```cuda", fn.signature.strip(), "```"]
    launches = model.launches_of(fn.name)
    if launches:
        out += ["", f"**Launches in this file** ({len(launches)})", ""]
        for host, launch in launches[:5]:
            line = model.lines.position(host.span(launch.span)[0]).line + 1
            smem = f", {launch.smem} B dynamic shared memory" if launch.smem else ""
            out.append(f"- line {line}: grid `{launch.grid}`, block `{launch.block}`{smem}")
    else:
        out += ["", "No launch of this kernel in this file."]
    report = verification.reports.get(analysis.uri)
    doc = documents.get(analysis.uri)
    out += ["", f"**Build**: {_flags_line(model.path, analysis)}"]
    out += ["", "**Resources**", ""]
    if report is None:
        out.append("not reported yet: save the file to build the compile-only resource report")
    else:
        summary = kernel_summary(report, fn.name)
        age = _age(report.finished_at)
        if summary is not None:
            out.append(summary[0])
        elif report.status == "ok":
            out.append(f"`{fn.name}` is not in the compiler's report (a template kernel never instantiated?)")
        else:
            out.append(f"the last build did not report resources: {report.detail}")
        stale = doc is not None and doc.content_hash != report.content_hash
        out.append("")
        out.append(
            f"*{report.mode} report of the text saved {age}" + ("; the text has changed since*" if stale else "*")
        )
    out += ["", "**Last profile**", ""]
    available, reason = verification.verification_available()
    entry = verification.gpu_profiles.get(analysis.uri)
    profile = entry[1].get(fn.name) if entry is not None else None
    if profile is not None:
        if profile.median_ms is not None:
            out.append(gpu_profile_line(profile))
        else:
            out.append(f"not timed: {profile.status.replace('_', ' ')}: {profile.message}")
        if doc is not None and entry is not None and doc.content_hash != entry[0]:
            out += ["", "*of the text saved before your last edits*"]
    elif available:
        out.append("not profiled on the GPU yet: save the file to profile it")
    else:
        out.append(f"no GPU timing: {reason}")
    return "\n".join(out)


def _age(finished_at: float) -> str:
    seconds = max(0, int(time.time() - finished_at))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"
