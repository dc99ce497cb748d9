"""Commands, code lenses and the status notification."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from lsprotocol import types

from tests.search.llm_server import ReplayServer, load
from tests.server.conftest import KERNELS, PINNED, Session

COMMANDS = {
    "warpwise.verifyKernel",
    "warpwise.optimizeKernel",
    "warpwise.generateKernel",
    "warpwise.profileFile",
    "warpwise.showLineage",
    "warpwise.clearCache",
    "warpwise.restartWorker",
    "warpwise.cancelJob",
    "warpwise.status",
}


async def test_status_notification_reports_gpu_queue_and_worker(session: Session) -> None:
    status = await session.status(lambda p: p["gpu"]["detail"] != "looking for a GPU")
    assert set(status) >= {"gpu", "backend", "queue", "running", "worker", "verification", "cards", "version"}
    assert isinstance(status["gpu"]["found"], bool)
    assert status["queue"] == {"length": 0, "running": None}
    assert status["worker"]["state"] == "running"
    assert status["cards"]["available"] is True
    if not status["gpu"]["found"]:
        assert status["backend"] == "compile-only"
        assert status["verification"]["available"] is False and status["verification"]["detail"]
    assert await session.command("warpwise.status") == status


async def test_verify_without_a_gpu_says_why(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    status = await session.status(lambda p: p["gpu"]["detail"] != "looking for a GPU")
    result = await session.command(
        "warpwise.verifyKernel", {"uri": uri, "version": 1, "position": {"line": 8, "character": 4}}
    )
    if status["verification"]["available"]:
        assert result["status"] in ("verified", "not_verified")
    else:
        assert result == {
            "ok": False,
            "status": "unavailable",
            "message": f"`taps` cannot be verified: {status['verification']['detail']}",
        }


async def test_verify_outside_a_kernel(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    result = await session.command("warpwise.verifyKernel", {"uri": uri, "position": {"line": 0, "character": 0}})
    assert result["status"] == "no_kernel" and "not inside a `__global__` kernel" in result["message"]


async def test_optimize_runs_the_search_with_progress(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    status = await session.status(lambda p: p["gpu"]["detail"] != "looking for a GPU")
    result = await session.command("warpwise.optimizeKernel", {"uri": uri, "kernel": "saxpy", "candidates": 3})
    if status["gpu"]["found"]:
        assert result["status"] in ("verified", "not_verified")
        return
    # Without a GPU the search is a compile-only dry run: every candidate is built, nothing is claimed or proposed.
    assert result["ok"] is False and result["status"] == "no_gpu" and "edit" not in result
    # Versions measured by an earlier run come from the result cache at no cost, so a re-run builds 3 more.
    assert re.fullmatch(r"`saxpy`: built \d+ versions \(compile-only, nothing timed\)", result["message"])
    assert (
        result["markdown"].startswith("# Optimize `saxpy` (kernels.cu)")
        and "no speedup is claimed" in result["markdown"]
    )
    if session.caps.window and session.caps.window.work_done_progress:
        reports = await session.recorder.wait(
            lambda: (
                [v for _, v in session.recorder.progress if isinstance(v, types.WorkDoneProgressReport)]
                and [v for _, v in session.recorder.progress if isinstance(v, types.WorkDoneProgressEnd)]
            )
        )
        assert reports[-1].message == result["message"]
        messages = [v.message or "" for _, v in session.recorder.progress]
        assert any(re.match(r"\d+ versions · best none yet · [\d.]+ build-s$", m) for m in messages)


async def test_cancelling_a_search_from_the_editor(sessions) -> None:
    s: Session = await sessions("visual-studio-code", PINNED)
    uri = s.open(KERNELS)
    await s.static(uri)
    status = await s.status(lambda p: p["gpu"]["detail"] != "looking for a GPU")
    if status["gpu"]["found"]:
        return
    command = asyncio.ensure_future(s.command("warpwise.optimizeKernel", {"uri": uri, "kernel": "saxpy"}))
    token = await s.recorder.wait(
        lambda: next(
            (
                t
                for t, v in s.recorder.progress
                if isinstance(v, types.WorkDoneProgressReport) and "versions" in (v.message or "")
            ),
            None,
        )
    )
    s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(command, 60)
    assert (
        result["status"] == "cancelled" and result["message"] == "the search was cancelled: cancelled from the editor"
    )
    idle = await s.status(lambda p: p["running"] is None and p["queue"]["length"] == 0)
    assert idle["worker"]["state"] == "running"


async def test_show_lineage_of_the_card_under_the_cursor(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    result = await session.command("warpwise.showLineage", {"uri": uri, "position": {"line": 7, "character": 6}})
    assert result["ok"] is True
    assert result["markdown"].startswith("# Lineage of `constant-trip-loop-without-unroll`")
    assert "## Evidence (measured records)" in result["markdown"]
    missing = await session.command("warpwise.showLineage", {"card": "no-such-card"})
    assert missing["status"] == "unknown_card"


async def test_clear_cache_and_restart_worker_keep_serving(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    cleared = await session.command("warpwise.clearCache")
    assert cleared["ok"] is True and cleared["message"].startswith("cleared ")
    restarted = await session.command("warpwise.restartWorker")
    assert restarted["ok"] is True and "analysis worker restarted" in restarted["message"]
    version = session.change(uri, (7, 24), (7, 25), "6")
    assert "constant-trip-loop-without-unroll" in {str(d.code) for d in await session.static(uri, version)}


async def test_code_lens_over_each_kernel(session: Session) -> None:
    if session.caps.text_document is None or session.caps.text_document.code_lens is None:
        return
    uri = session.open(KERNELS)
    await session.static(uri)
    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lenses is not None
    by_line: dict[int, list[str]] = {}
    for lens in lenses:
        assert lens.command is not None
        by_line.setdefault(lens.range.start.line, []).append(lens.command.title)
    assert sorted(by_line) == [3, 14, 19]
    # How many of the kernel's findings are hints is the shipped ranking model's call (the quiet default); the lens
    # counts them after the findings waiting for verification.
    assert by_line[3][0] == "not timed · save to build the resource report"
    assert re.fullmatch(r"0 verified improvements waiting · [12] not yet verified( · 1 hint)?", by_line[3][1]), by_line[
        3
    ]
    verify = next(
        lens.command
        for lens in lenses
        if lens.range.start.line == 14 and lens.command is not None and "verified" in lens.command.title
    )
    assert verify.command == "warpwise.verifyKernel"
    assert list(verify.arguments or []) == [{"uri": uri, "kernel": "saxpy"}]


async def test_capabilities_and_commands_are_advertised(sessions) -> None:
    s: Session = await sessions("visual-studio-code")
    caps = s.init_result.capabilities
    assert caps.execute_command_provider is not None
    assert set(caps.execute_command_provider.commands) == COMMANDS
    assert caps.position_encoding == types.PositionEncodingKind.Utf16
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions) and sync.change == types.TextDocumentSyncKind.Incremental
    assert isinstance(caps.code_action_provider, types.CodeActionOptions) and caps.code_action_provider.resolve_provider
    assert caps.diagnostic_provider is not None and caps.hover_provider and caps.code_lens_provider is not None


async def test_generate_a_kernel_from_a_description(sessions, tmp_path: Path) -> None:
    # The LLM is a local server replaying recorded answers: the first problem file imports `subprocess` and is
    # refused, the second is written with its kernel and built by the gate (no GPU here: compile-only).
    with ReplayServer(load("generate")) as llm:
        settings = {**PINNED, "llm": {"endpoint": llm.url, "model": "recorded-model"}}
        s: Session = await sessions("visual-studio-code", settings)
        await s.status(lambda p: p["gpu"]["detail"] != "looking for a GPU")
        args = {"description": "double every element", "name": "scale2", "folder": tmp_path.as_uri()}
        result = await s.command("warpwise.generateKernel", args)
    assert result["status"] == "built" and result["ok"], result
    assert result["attempts"][0]["outcome"].startswith("refused: the problem file imports `subprocess`")
    assert result["kernelUri"] == (tmp_path / "scale2.cu").as_uri()
    assert "__global__ void scale2(" in (tmp_path / "scale2.cu").read_text()
    assert 'kernel = "scale2"' in (tmp_path / "scale2.problem.py").read_text()
    # Nothing is replaced, and a missing LLM, a bad name or a missing folder is said in words.
    again = await s.command("warpwise.generateKernel", args)
    assert again["status"] == "exists" and not again["ok"]
    bad = await s.command("warpwise.generateKernel", {**args, "name": "2x"})
    assert bad["status"] == "bad_arguments" and "not a C identifier" in bad["message"]
    nowhere = await s.command("warpwise.generateKernel", {"description": "x", "name": "k"})
    assert nowhere["status"] == "bad_arguments"


async def test_generate_without_an_llm_says_how_to_configure_one(session: Session, tmp_path: Path) -> None:
    args = {"description": "double every element", "name": "scale2", "folder": tmp_path.as_uri()}
    result = await session.command("warpwise.generateKernel", args)
    assert result["status"] == "no_llm" and "warpwise.llm.endpoint" in result["message"]
    assert not list(tmp_path.iterdir())
