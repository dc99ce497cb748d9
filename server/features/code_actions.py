"""Code actions: card quick fixes titled with their verification state, "fix all safe", "suppress this finding"
(a NOLINTNEXTLINE comment, `warpwise.analyzers.suppressions`), and problem-spec annotations.

Listing actions reads the current version's `Analysis` (analysis lane) and computes no edits. Edits are computed
on `codeAction/resolve`, in a worker thread over the immutable analysis, and refused with `ContentModified` if the
document changed since the action was listed. Clients that cannot resolve edits get them computed at listing time
(still off the event loop). A fix whose verification failed is not offered; only `safe` fixes that were verified
are marked preferred, and only `safe` fixes join "fix all". Quick fixes come verified first, then in the learned
ranking's order, and an unverified one carries its prediction ("unverified, predicted 1.1-1.4x").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcException

from warpwise.analyzers.suppressions import UNUSED_RULE, suppression_edit
from warpwise.server import convert, presentation
from warpwise.server.analysis import Analysis
from warpwise.server.features import ranking
from warpwise.server.providers import Item
from warpwise.server.services import ClientFeatures
from warpwise.server.verification import CandidateState, SpecAnnotation, has_spec_annotation, spec_annotation
from warpwise.skills.model import Applicability
from warpwise.skills.rewrite import Edit, Fix

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.providers import CardProvider
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)

FIX_ALL_KIND = "source.fixAll.warpwise"
SPEC_KIND = types.CodeActionKind.RefactorRewrite.value
FAILED_STATES = frozenset({"not_faster", "incorrect", "compile_failed", "launch_failed", "timed_out", "crashed"})
CODE_ACTION_KINDS = [types.CodeActionKind.QuickFix, FIX_ALL_KIND, types.CodeActionKind.RefactorRewrite]


class RequestFailed(JsonRpcException):
    """LSP's `RequestFailed`: the request was valid but could not be carried out."""

    CODE = -32803


def _wanted(only: list[str] | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") for o in only)


def title_suffix(state: CandidateState, prediction: Any = None) -> str:
    """Return the verification state as the end of a quick-fix title (with the ranking's prediction, if any)."""
    if state.state == "verified" and state.speedup is not None:
        return f"verified {state.speedup:.1f}x on {state.gpu}"
    if state.state == "reported":
        return f"reported by {state.reported_by}, not verified here"
    if state.state == "queued":
        return "verification queued"
    if state.state == "running":
        return f"verifying{': ' + state.detail if state.detail else ''}"
    if prediction is not None:
        return f"unverified, {prediction.label}"
    return "not yet verified"


async def code_action(
    analysis: Analysis,
    params: types.CodeActionParams,
    *,
    client: ClientFeatures,
    verification: VerificationService,
    documents: DocumentStore,
    cards: CardProvider,
) -> list[types.CodeAction] | None:
    """Answer `textDocument/codeAction` (analysis lane; edits are left to `codeAction/resolve`)."""
    uri = params.text_document.uri
    if not client.code_action_literals:
        return None
    lines = analysis.model.lines
    start = convert.offset(lines, params.range.start)
    end = convert.offset(lines, params.range.end)
    only = [str(k) for k in params.context.only] if params.context.only else None
    actions: list[types.CodeAction] = []
    base = {"uri": uri, "version": analysis.version, "hash": analysis.content_hash}
    if _wanted(only, types.CodeActionKind.QuickFix):
        listed = analysis.items_at(start, end)
        if listed:
            # A card finding another one's region absorbed is not drawn; its fix is offered where the kept one is.
            seen = {(i.id, i.span) for i in listed}
            alts = await asyncio.to_thread(presentation.alternatives, verification, analysis, listed)
            listed += [a for a in alts if (a.id, a.span) not in seen]
        preds = await asyncio.to_thread(ranking.predictions, verification, analysis) if listed else {}
        fixes: list[tuple[tuple[float, int, float], types.CodeAction]] = []
        for item in listed:
            if not item.has_fix:
                continue
            state = verification.candidate_state(uri, analysis.content_hash, item.id, item.span)
            if state.state in FAILED_STATES:
                continue
            diags = [d for d in params.context.diagnostics if d.code == item.id]
            pred = preds.get((item.function or "", item.id))
            # Verified fixes first (fastest first), then by the ranking's priority: likely winners before losers, and
            # between fixes of one priority the larger predicted speedup.
            if state.state == "verified":
                order: tuple[float, int, float] = (-(state.speedup or 0.0), 0, 0.0)
            else:
                priority, speedup = ranking.editor_priority(pred)
                order = (0.0, -priority, -speedup)
            fixes.append(
                (
                    order,
                    types.CodeAction(
                        title=f"{item.fix_title} — {title_suffix(state, pred)}",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=diags or None,
                        is_preferred=item.applicability is Applicability.SAFE and state.state == "verified",
                        data={**base, "action": "fix", "id": item.id, "span": list(item.span)},
                    ),
                )
            )
        actions += [a for _, a in sorted(fixes, key=lambda f: f[0])]
        actions += _suppress_actions(analysis, start, end, params.context.diagnostics, base)
    if _wanted(only, FIX_ALL_KIND):
        safe = _safe_items(verification, analysis)
        if safe:
            actions.append(
                types.CodeAction(
                    title=f"Fix all safe warpwise findings ({len(safe)})",
                    kind=FIX_ALL_KIND,
                    data={**base, "action": "fixAll"},
                )
            )
    if _wanted(only, SPEC_KIND):
        fn = analysis.model.function_at(start)
        if fn is not None and fn.is_kernel and not has_spec_annotation(analysis.model, fn.name):
            actions.append(
                types.CodeAction(
                    title=f"Insert problem-spec annotation for `{fn.name}`",
                    kind=SPEC_KIND,
                    data={**base, "action": "spec", "kernel": fn.name},
                )
            )
    if not client.resolve_edit:
        resolved = []
        for action in actions:
            try:
                resolved.append(
                    await resolve(
                        analysis, action, documents=documents, verification=verification, cards=cards, client=client
                    )
                )
            except JsonRpcException as exc:
                log.info("code action %r not offered: %s", action.title, exc.message)
        actions = resolved
    return actions


def _suppress_actions(
    analysis: Analysis, start: int, end: int, diagnostics: Sequence[types.Diagnostic], base: dict[str, Any]
) -> list[types.CodeAction]:
    """Offer "Suppress this finding" (a `// NOLINTNEXTLINE(warpwise-<id>)` comment) once per id and line."""
    out: list[types.CodeAction] = []
    seen: set[tuple[str, int]] = set()
    for item in analysis.items_at(start, end):
        line = analysis.model.lines.position(item.span[0]).line
        if item.id == UNUSED_RULE or (item.id, line) in seen:
            continue
        seen.add((item.id, line))
        out.append(
            types.CodeAction(
                title=f"Suppress `{item.id}` on line {line + 1} (// NOLINTNEXTLINE)",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[d for d in diagnostics if d.code == item.id] or None,
                data={**base, "action": "suppress", "id": item.id, "line": line},
            )
        )
    return out


def _safe_items(verification: VerificationService, analysis: Analysis) -> list[Item]:
    out = []
    for item in analysis.items:
        if not item.has_fix or item.applicability is not Applicability.SAFE:
            continue
        state = verification.candidate_state(analysis.uri, analysis.content_hash, item.id, item.span)
        # A result only reported by another machine never joins a bulk edit.
        if state.state not in FAILED_STATES and state.state != "reported":
            out.append(item)
    return out


def _data(action: types.CodeAction) -> dict[str, Any]:
    data = action.data
    if not isinstance(data, dict) or not isinstance(data.get("uri"), str) or not isinstance(data.get("version"), int):
        raise RequestFailed("this code action carries no warpwise data (it was not listed by this server)")
    return data


def action_document(action: types.CodeAction) -> str:
    """Return the document a listed action belongs to (from the data it was listed with)."""
    return str(_data(action)["uri"])


def action_gone(action: types.CodeAction) -> types.CodeAction:
    """Refuse to resolve an action whose document is closed or has no analysis of its current version."""
    raise JsonRpcContentModified("the document of this action is closed or changed; request the actions again")


async def resolve(
    analysis: Analysis,
    action: types.CodeAction,
    *,
    documents: DocumentStore,
    verification: VerificationService,
    cards: CardProvider,
    client: ClientFeatures,
) -> types.CodeAction:
    """Compute a code action's edit (`codeAction/resolve`; a worker thread over the listed version's analysis)."""
    data = _data(action)
    uri = data["uri"]
    doc = documents.get(uri)
    listed_hash = data.get("hash")
    if doc is None or doc.version != data["version"] or listed_hash != doc.content_hash:
        raise JsonRpcContentModified(
            f"the document changed since this action was listed (version {data['version']}, now "
            f"{doc.version if doc is not None else 'closed'}); request the actions again"
        )
    if analysis.version != data["version"] or analysis.content_hash != listed_hash:
        raise JsonRpcContentModified("the document changed while the action was being resolved")
    kind = data.get("action")
    if kind == "fix":
        edits = await _fix_edits(cards, analysis, str(data.get("id")), data.get("span"))
    elif kind == "fixAll":
        edits = await _fix_all_edits(verification, cards, analysis)
    elif kind == "suppress":
        edits = _suppress_edits(analysis, str(data.get("id")), data.get("line"))
    elif kind == "spec":
        edits = await _spec_edits(analysis, str(data.get("kernel")))
    else:
        raise RequestFailed(f"unknown warpwise code action {kind!r}")
    if documents.get(uri) is not doc or doc.version != analysis.version or doc.content_hash != listed_hash:
        raise JsonRpcContentModified("the document changed while the edit was being computed")
    action.edit = _workspace_edit(client, uri, analysis, edits)
    return action


async def _fix_edits(cards: CardProvider, analysis: Analysis, item_id: str, span: Any) -> list[Edit]:
    item = next(
        (i for i in analysis.items if i.id == item_id and list(i.span) == list(span or ()) and i.has_fix),
        None,
    )
    if item is None:
        raise RequestFailed(f"`{item_id}` no longer applies at this place")
    fix: Fix | None = await asyncio.to_thread(cards.compute_fix, analysis.model, item)
    if fix is None:
        raise RequestFailed(f"the rewrite of `{item_id}` does not apply exactly here; no edit is offered")
    return list(fix.edits)


async def _fix_all_edits(verification: VerificationService, cards: CardProvider, analysis: Analysis) -> list[Edit]:
    items = _safe_items(verification, analysis)

    def compute() -> list[Edit]:
        from warpwise.skills.guard import unsafe_for_resources

        fixes = []
        for i in items:
            fix = cards.compute_fix(analysis.model, i)
            if fix is None or fix.applicability is not Applicability.SAFE:
                continue
            # A safe fix whose build adds spills (or that no build confirms) is left out of "fix all".
            if i.payload is not None and unsafe_for_resources(analysis.model, i.payload, fix) is not None:
                continue
            fixes.append(fix)
        return cards.merge(fixes)

    edits = await asyncio.to_thread(compute)
    if not edits:
        raise RequestFailed("no safe fix applies to this version of the file")
    return edits


def _suppress_edits(analysis: Analysis, item_id: str, line: Any) -> list[Edit]:
    if not isinstance(line, int) or not any(
        i.id == item_id and analysis.model.lines.position(i.span[0]).line == line for i in analysis.items
    ):
        raise RequestFailed(f"`{item_id}` is no longer reported on this line")
    span, text = suppression_edit(analysis.model, item_id, line)
    return [Edit(span[0], span[1], text)]


async def _spec_edits(analysis: Analysis, kernel: str) -> list[Edit]:
    spec = await asyncio.to_thread(spec_annotation, analysis.model, kernel)
    if not isinstance(spec, SpecAnnotation):
        raise RequestFailed(spec)
    at = analysis.model.lines.line_start(spec.line)
    return [Edit(at, at, spec.text + "\n")]


def _workspace_edit(client: ClientFeatures, uri: str, analysis: Analysis, edits: list[Edit]) -> types.WorkspaceEdit:
    lines = analysis.model.lines
    text_edits = [types.TextEdit(range=convert.span_range(lines, (e.start, e.end)), new_text=e.text) for e in edits]
    if client.document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=analysis.version),
                    edits=list(text_edits),
                )
            ]
        )
    return types.WorkspaceEdit(changes={uri: text_edits})
