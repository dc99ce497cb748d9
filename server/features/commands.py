"""`workspace/executeCommand`: the server's commands.

Arguments are lenient, so every client can call them: one object `{uri, kernel?, position?, card?, jobId?}` (what
the VS Code extension and the code lenses send), or positional strings (`uri`, then the kernel or card id). Each
command answers an object with `ok`, `status` and a one-line `message` (or `markdown` for a document to show);
nothing is pretended: what is not available says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warpwise.server import convert
from warpwise.server.features import profiling, verifying
from warpwise.server.features import progress as progress_feature
from warpwise.server.features.hover import verification_line
from warpwise.server.jobs import JobState, Priority
from warpwise.server.services import Analyses, ClientFeatures, Config, Editor, ProgressBook, Tasks
from warpwise.server.verification import OptimizeOutcome, ProfileReport

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.providers import CardProvider
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Target:
    """What a command applies to."""

    uri: str | None = None
    kernel: str | None = None
    card: str | None = None
    job_id: str | None = None
    position: types.Position | None = None


def _target(params: types.ExecuteCommandParams) -> Target:
    args = list(params.arguments or [])
    first = args[0] if args else None
    if isinstance(first, dict):
        pos = first.get("position")
        position = None
        if isinstance(pos, dict) and isinstance(pos.get("line"), int) and isinstance(pos.get("character"), int):
            position = types.Position(line=pos["line"], character=pos["character"])
        return Target(
            uri=first.get("uri") if isinstance(first.get("uri"), str) else None,
            kernel=first.get("kernel") if isinstance(first.get("kernel"), str) else None,
            card=first.get("card") if isinstance(first.get("card"), str) else None,
            job_id=first.get("jobId") if isinstance(first.get("jobId"), str) else None,
            position=position,
        )
    strings = [a for a in args if isinstance(a, str)]
    uri = next((s for s in strings if ":" in s and "/" in s), None)
    rest = [s for s in strings if s != uri]
    name = rest[0] if rest else None
    return Target(uri=uri, kernel=name, card=name, job_id=name)


def _reply(ok: bool, status: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"ok": ok, "status": status, "message": message, **extra}


def _refuse_to_run(config: Config, not_done: str) -> dict[str, Any] | None:
    """Return the reply refusing a command that compiles and runs code, when the settings forbid it (else None)."""
    if not config.settings.verification_trusted_workspace:
        return _reply(False, "untrusted", f"{not_done}: this workspace is not trusted to run code")
    if config.settings.gpu_backend == "off":
        return _reply(False, "off", f"{not_done}: `warpwise.gpu.backend` is `off`")
    return None


async def _kernel(analyses: Analyses, target: Target) -> tuple[str | None, str]:
    """Return the kernel a command is about (named, or under the cursor), or why there is none."""
    if target.uri is None:
        return None, "no document given; run the command with a CUDA file open"
    if target.kernel:
        return target.kernel, ""
    analysis = await analyses.wait_for(target.uri)
    if analysis is None:
        return None, "the document is not open in the server"
    if target.position is None:
        return None, "no kernel given and no cursor position"
    fn = analysis.model.function_at(convert.offset(analysis.model.lines, target.position))
    if fn is None or not fn.is_kernel:
        return None, "the cursor is not inside a `__global__` kernel"
    return fn.name, ""


async def verify_kernel(
    params: types.ExecuteCommandParams,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    config: Config,
    cards: CardProvider,
    tasks: Tasks,
    progress: ProgressBook,
    client: ClientFeatures,
    editor: Editor,
) -> dict[str, Any]:
    """Verify the candidate rewrites of one kernel on the GPU (job queue)."""
    target = _target(params)
    kernel, why = await _kernel(analyses, target)
    if kernel is None:
        return _reply(False, "no_kernel", why)
    refused = _refuse_to_run(config, f"`{kernel}` is not verified")
    if refused is not None:
        return refused
    available, reason = verification.verification_available()
    if not available:
        return _reply(False, "unavailable", f"`{kernel}` cannot be verified: {reason}")
    assert target.uri is not None
    v = verifying.Verifier(documents, analyses, verification, config, cards, tasks, progress)
    jobs = await verifying.verify_candidates(v, target.uri, kernel, Priority.INTERACTIVE, params.work_done_token)
    if not jobs:
        return _reply(False, "no_candidates", f"`{kernel}` has no candidate rewrite to verify in this version")
    for job in jobs:
        await job.done
    lines = []
    verified = 0
    for job in jobs:
        state = job.result
        if job.state is JobState.DONE and state is not None:
            lines.append(f"{job.title}: {verification_line(state)}")
            verified += state.state == "verified"
        else:
            why = (
                (job.cancel_reason or job.error or "") if job.state is not JobState.DONE else "superseded by newer text"
            )
            lines.append(f"{job.title}: {job.state.value}: {why}")
    if client.code_lens_refresh:
        editor.refresh_code_lenses()
    return _reply(verified > 0, "verified" if verified else "not_verified", "; ".join(lines))


async def optimize_kernel(
    params: types.ExecuteCommandParams,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    config: Config,
    progress: ProgressBook,
    client: ClientFeatures,
) -> dict[str, Any]:
    """Search for a faster version of one kernel under the GPU-time budget (job queue).

    Optional arguments beside `uri`/`kernel`: `budgetSeconds`, `candidates`, `strategy` (mcts, greedy, random).
    The reply carries the best verified version as a workspace edit (`edit`) and the search's report (`markdown`);
    without a GPU the search is a compile-only dry run and proposes nothing.
    """
    target = _target(params)
    kernel, why = await _kernel(analyses, target)
    if kernel is None:
        return _reply(False, "no_kernel", why)
    refused = _refuse_to_run(config, f"`{kernel}` is not optimized")
    if refused is not None:
        return refused
    assert target.uri is not None
    doc = documents.get(target.uri)
    if doc is None:
        return _reply(False, "no_document", "the document is not open in the server")
    first = (params.arguments or [None])[0]
    extra = first if isinstance(first, dict) else {}
    budget = extra.get("budgetSeconds")
    count = extra.get("candidates")
    strategy = extra.get("strategy") if extra.get("strategy") in ("mcts", "greedy", "random") else "mcts"
    job = verification.submit_optimize(
        doc.capture(config.settings, config.generation),
        kernel,
        strategy=strategy,
        budget_s=float(budget) if isinstance(budget, int | float) and budget > 0 else 120.0,
        candidates=int(count) if isinstance(count, int) and count > 0 else 30,
    )
    if params.work_done_token is not None:
        progress_feature.attach_client_token(progress, job, params.work_done_token)
    await job.done
    if job.state is JobState.CANCELLED:
        return _reply(False, "cancelled", f"the search was cancelled: {job.cancel_reason}", jobId=job.id)
    if job.state is JobState.FAILED or not isinstance(job.result, OptimizeOutcome):
        return _reply(False, "failed", f"the search failed: {job.error}", jobId=job.id)
    outcome: OptimizeOutcome = job.result
    report = outcome.report
    if report.speedup is None:
        status = "no_gpu" if outcome.mode == "compile-only" else "not_verified"
        return _reply(False, status, outcome.detail, jobId=job.id, markdown=report.markdown())
    current = documents.get(outcome.uri)
    if current is None or current.version != outcome.version:
        message = f"{outcome.detail}, but the document changed during the search; run it again (results are cached)"
        return _reply(False, "changed", message, jobId=job.id, markdown=report.markdown())
    return _reply(
        True,
        "verified",
        outcome.detail,
        jobId=job.id,
        speedup=report.speedup,
        edit=_search_edit(client, outcome),
        markdown=report.markdown(),
    )


async def generate_kernel(
    params: types.ExecuteCommandParams, *, config: Config, verification: VerificationService, progress: ProgressBook
) -> dict[str, Any]:
    """Write a problem file and a first kernel from a description with the configured LLM, checked by the gate.

    Arguments: `description`, `name` (a C identifier; the files are `NAME.cu` and `NAME.problem.py`), and `folder`
    (a folder URI; else the folder of `uri`). Existing files are never replaced. The reply names the files
    (`kernelUri`, `problemUri`), each attempt's outcome and the gate's result; `checked` means the kernel matched
    the problem's `reference()` on every seed, `built` that it builds (compile-only, nothing was run).
    """
    import re
    from importlib.util import find_spec
    from pathlib import Path

    from pygls.uris import from_fs_path, to_fs_path

    first = (params.arguments or [None])[0]
    extra = first if isinstance(first, dict) else {}
    description = str(extra.get("description") or "").strip()
    name = str(extra.get("name") or "").strip()
    if not description:
        return _reply(False, "bad_arguments", "describe the kernel to generate (`description`)")
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return _reply(False, "bad_arguments", f"`{name}` is not a C identifier (letters, digits and _)")
    folder_uri = extra.get("folder") if isinstance(extra.get("folder"), str) else None
    doc_uri = extra.get("uri") if isinstance(extra.get("uri"), str) else None
    folder_path = to_fs_path(folder_uri) if folder_uri else None
    if folder_path is None and doc_uri:
        doc_path = to_fs_path(doc_uri)
        folder_path = str(Path(doc_path).parent) if doc_path else None
    if not folder_path or not Path(folder_path).is_dir():
        return _reply(False, "bad_arguments", "no folder to write into: open a workspace folder or a CUDA file")
    folder = Path(folder_path)
    cu, problem = folder / f"{name}.cu", folder / f"{name}.problem.py"
    if cu.exists() or problem.exists():
        return _reply(False, "exists", f"{cu.name} or {problem.name} exists already in {folder}; choose another name")
    refused = _refuse_to_run(config, "nothing is generated")
    if refused is not None:
        return refused
    from warpwise.search.llm import LLMConfig

    if LLMConfig.resolve(config.settings.llm_endpoint, config.settings.llm_model) is None:
        return _reply(
            False,
            "no_llm",
            "no LLM is configured: set `warpwise.llm.endpoint` and `warpwise.llm.model` (the key comes from "
            "WARPWISE_LLM_API_KEY or OPENAI_API_KEY in the server's environment)",
        )
    if find_spec("openai") is None:
        return _reply(
            False,
            "unavailable",
            "kernels cannot be generated: the `openai` package is not installed (pip install "
            "'warpwise[llm]' in the server's environment)",
        )
    job = verification.submit_generate(config.settings, description, name, str(folder))
    if params.work_done_token is not None:
        progress_feature.attach_client_token(progress, job, params.work_done_token)
    await job.done
    if job.state is JobState.CANCELLED:
        return _reply(False, "cancelled", f"generation was cancelled: {job.cancel_reason}", jobId=job.id)
    if job.state is JobState.FAILED or job.result is None:
        return _reply(False, "failed", f"generation failed: {job.error}", jobId=job.id)
    report = job.result
    written = Path(report.kernel_path).is_file() and Path(report.problem_path).is_file()
    files = {"kernelUri": from_fs_path(report.kernel_path), "problemUri": from_fs_path(report.problem_path)}
    return _reply(
        report.ok,
        report.status,
        f"`{name}`: {report.message}",
        jobId=job.id,
        attempts=report.attempts,
        result=report.result,
        **(files if written else {}),
    )


def _search_edit(client: ClientFeatures, outcome: OptimizeOutcome) -> types.WorkspaceEdit:
    """Return the search's edits (the kernel's file, and the problem file when the launch changed) for the client."""
    from pathlib import Path

    from warpwise.analyzers.build import line_index

    changes: list[tuple[str, int | None, types.TextEdit]] = []
    for e in outcome.report.edits:
        if e.path == outcome.report.file:
            uri, version, data = outcome.uri, outcome.version, outcome.text
        else:
            path = Path(e.path)
            uri, version = path.resolve().as_uri(), None
            data = path.read_bytes() if path.is_file() else b""
        rng = convert.span_range(line_index(data), (e.start, e.end))
        changes.append((uri, version, types.TextEdit(range=rng, new_text=e.text)))
    if client.document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                    edits=[edit],
                )
                for uri, version, edit in changes
            ]
        )
    by_uri: dict[str, list[types.TextEdit]] = {}
    for uri, _, edit in changes:
        by_uri.setdefault(uri, []).append(edit)
    return types.WorkspaceEdit(changes=by_uri)


async def profile_file(
    params: types.ExecuteCommandParams,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    verification: VerificationService,
    config: Config,
    cards: CardProvider,
    tasks: Tasks,
    progress: ProgressBook,
) -> dict[str, Any]:
    """Profile the kernels of a document now and answer when the report is in (job queue)."""
    target = _target(params)
    if target.uri is None or documents.get(target.uri) is None:
        return _reply(False, "no_document", "no open CUDA document given")
    v = verifying.Verifier(documents, analyses, verification, config, cards, tasks, progress)
    job = await profiling.profile(v, target.uri, Priority.INTERACTIVE, params.work_done_token)
    if job is None:
        return _reply(False, "changed", "the document changed before the profile could be queued; try again")
    await job.done
    if job.state is JobState.CANCELLED:
        return _reply(False, "cancelled", f"the profile was cancelled: {job.cancel_reason}", jobId=job.id)
    if job.state is JobState.FAILED or not isinstance(job.result, ProfileReport):
        return _reply(False, "failed", f"the profile failed: {job.error}", jobId=job.id)
    report: ProfileReport = job.result
    return _reply(report.status == "ok", report.status, report.detail, jobId=job.id, mode=report.mode)


def show_lineage(params: types.ExecuteCommandParams, *, analyses: Analyses, cards: CardProvider) -> dict[str, Any]:
    """Show where a skill card comes from and the measurements behind it (event loop)."""
    target = _target(params)
    card_id = target.card
    if target.position is not None and target.uri is not None:
        analysis = analyses.current(target.uri)
        if analysis is not None:
            at = convert.offset(analysis.model.lines, target.position)
            items = [i for i in analysis.items_at(at, at) if i.source == "card"]
            card_id = items[0].id if items else None
    if not card_id:
        return _reply(False, "no_card", "no skill card under the cursor (put it on a warpwise finding)")
    card = cards.card(card_id)
    if card is None:
        return _reply(False, "unknown_card", f"no skill card called `{card_id}` is loaded")
    h = card.header
    out = [
        f"# Lineage of `{h.skill_id}`",
        "",
        f"**{h.title}** ({h.status.value}): {h.intent}",
        "",
        f"Card: `{card.path}`",
    ]
    if h.requires or h.provides or h.conflicts:
        out += ["", "## Composition", ""]
        out += [f"- requires: {', '.join(h.requires) or 'nothing'}", f"- provides: {', '.join(h.provides) or '-'}"]
        out += [f"- conflicts with: {', '.join(h.conflicts) or 'nothing'}"]
    out += ["", "## Evidence (measured records)", ""]
    if h.evidence:
        out += [
            "| kernel | GPU | toolkit | speedup | spread | date | source |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for e in h.evidence:
            spread = f"{e.spread:.0%}" if e.spread is not None else "-"
            out.append(f"| {e.kernel} | {e.gpu} | {e.toolkit} | {e.speedup:.2f}x | {spread} | {e.date} | {e.source} |")
    else:
        out.append("No measured records yet: the card is admitted on evidence once verification produces some.")
    out += ["", "## References", ""]
    out += [f"- [{r.title}]({r.url})" if r.url else f"- {r.title}" for r in h.references]
    out += ["", "Lineage mining (KLineage) is not available in this installation; shown is what the card records."]
    return _reply(True, "ok", f"lineage of {h.skill_id}", markdown="\n".join(out))


def clear_cache(
    params: types.ExecuteCommandParams, *, verification: VerificationService, cards: CardProvider, analyses: Analyses
) -> dict[str, Any]:
    """Forget cached reports, reload the cards and re-analyse open documents from scratch (event loop)."""
    message = verification.clear_cache()
    cards.reload()
    analyses.restart()
    return _reply(True, "ok", f"{message}; skill cards reloaded; open documents re-analysed")


async def restart_worker(
    params: types.ExecuteCommandParams, *, verification: VerificationService, analyses: Analyses, editor: Editor
) -> dict[str, Any]:
    """Stop every job and build process and restart the analysis worker (event loop)."""
    message = await verification.restart()
    analyses.restart(reason="restarted on request")
    editor.notify_status()
    return _reply(True, "ok", f"{message}; analysis worker restarted")


def cancel_job(params: types.ExecuteCommandParams, *, verification: VerificationService) -> dict[str, Any]:
    """Cancel a queued or running job by id (event loop)."""
    target = _target(params)
    if target.job_id is None:
        return _reply(False, "no_job", "no job id given")
    if verification.queue.cancel(target.job_id, "cancelled by command"):
        return _reply(True, "ok", f"cancelled {target.job_id}")
    return _reply(False, "unknown_job", f"no queued or running job {target.job_id}")


def status(params: types.ExecuteCommandParams, *, editor: Editor) -> dict[str, Any]:
    """Return the same payload as the `warpwise/status` notification (event loop)."""
    return editor.status_payload()
