"""On save: the compile-only resource report as profiling diagnostics, with progress; cancelling a long job."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types

from tests.conftest import needs_nvcc
from tests.server.conftest import CLIENTS, KERNELS, SLOW_NVCC, WAIT_S, Session


def _ends(s: Session) -> list[tuple[object, object]]:
    return [(t, v) for t, v in s.recorder.progress if isinstance(v, types.WorkDoneProgressEnd)]


@needs_nvcc
async def test_save_publishes_the_compile_only_resource_report(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    session.save(uri)
    diags = await session.profile(uri)
    by_line = {d.range.start.line: d for d in diags}
    assert sorted(by_line) == [3, 14, 19], "one report on each kernel's name"
    saxpy = by_line[14]
    assert saxpy.code == "resource-report" and saxpy.source == "warpwise profile"
    assert saxpy.range.start.character == 16 and saxpy.range.end.character == 21
    assert "`saxpy`:" in saxpy.message and "registers" in saxpy.message and "no spills" in saxpy.message
    assert "theoretical occupancy" in saxpy.message and "256 threads per block" in saxpy.message
    assert "[compile-only, sm_90" in saxpy.message
    # Static findings are still there (pushed together, or pulled apart).
    if not session.pulls:
        latest = [p for p in session.recorder.diagnostics if p.uri == uri][-1]
        assert any(d.source == "warpwise" for d in latest.diagnostics)
    # Progress: begin ... end, on a token the server created.
    if session.caps.window and session.caps.window.work_done_progress:
        token, end = (await session.recorder.wait(lambda: _ends(session)))[0]
        kinds = [type(v).__name__ for t, v in session.recorder.progress if t == token]
        assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
        assert "kernel builds reported" in (end.message or "")


def _seen(s: Session, uri: str) -> str:
    """Return what the server sent about a document so far: each push's version and its counts of static and
    profiling diagnostics, the job progress that ended, and the last status's job and queue."""
    pushes = [
        f"v{p.version}: {sum(d.source == 'warpwise' for d in p.diagnostics)} static, "
        f"{sum(d.source == 'warpwise profile' for d in p.diagnostics)} profile"
        for p in s.recorder.diagnostics
        if p.uri == uri
    ]
    ends = [str(v.message) for _, v in _ends(s)]
    status = s.recorder.status[-1] if s.recorder.status else {}
    return (
        f"pushes [{'; '.join(pushes)}], jobs ended {ends}, last status: running {status.get('running')}, "
        f"queue {status.get('queue')}, worker {status.get('worker')}"
    )


async def _step(s: Session, uri: str, what: str, waiting: Any) -> Any:
    """Await one step of a scenario; on a timeout, fail saying which step and what the server had sent."""
    try:
        return await waiting
    except TimeoutError:
        pytest.fail(f"no {what} within {WAIT_S:g} s; {_seen(s, uri)}")


@needs_nvcc
async def test_profile_is_hidden_on_newer_text_and_returns_on_undo(session: Session) -> None:
    uri = session.open(KERNELS)
    await _step(session, uri, "first diagnostics", session.static(uri))
    session.save(uri)
    await _step(session, uri, "profile of the saved text", session.profile(uri))
    version = session.change(uri, (0, 0), (0, 0), "// x\n")
    if not session.pulls:
        params = await _step(
            session, uri, f"diagnostics of version {version}", session.pushed(uri, lambda p: p.version == version)
        )
        assert not any(d.source == "warpwise profile" for d in params.diagnostics)
    else:
        await _step(session, uri, "cleared profile", session.pushed(uri, lambda p: not p.diagnostics))
    session.change(uri, (0, 0), (1, 0), "")
    assert await _step(session, uri, "profile after the undo", session.profile(uri))


@needs_nvcc
async def test_hover_on_a_kernel_after_save_shows_its_resources(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    session.save(uri)
    await session.profile(uri)
    hover = await session.hover(uri, 19, 18)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert "**kernel `column_copy`**" in text and "registers" in text and "compile-only report" in text


@pytest.mark.parametrize("editor", CLIENTS)
async def test_cancelling_a_running_build(sessions, editor: str) -> None:
    s: Session = await sessions(editor, {"compiler": {"nvcc": str(SLOW_NVCC)}})
    if not (s.caps.window and s.caps.window.work_done_progress):
        pytest.skip(f"{editor} does not support work-done progress")
    uri = s.open(KERNELS)
    await s.static(uri)
    s.save(uri)
    status = await s.status(lambda p: p["running"] is not None and p["running"]["stage"].startswith("compiling"))
    job_id = status["running"]["id"]
    token = await s.recorder.wait(
        lambda: next((t for t, v in s.recorder.progress if isinstance(v, types.WorkDoneProgressBegin)), None)
    )
    begin = next(v for t, v in s.recorder.progress if t == token)
    assert begin.cancellable
    s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    end = await s.recorder.wait(lambda: next((v for t, v in _ends(s) if t == token), None))
    assert end.message == "cancelled: cancelled from the editor"
    idle = await s.status(lambda p: p["running"] is None and p["queue"]["length"] == 0)
    assert idle["worker"]["state"] == "running"
    result = await s.command("warpwise.cancelJob", {"jobId": job_id})
    assert result["status"] == "unknown_job"


async def test_profile_command_without_nvcc_says_so(sessions) -> None:
    s: Session = await sessions("visual-studio-code", {"compiler": {"nvcc": "/nonexistent/nvcc"}})
    uri = s.open(KERNELS)
    await s.static(uri)
    result = await s.command("warpwise.profileFile", {"uri": uri})
    assert result["ok"] is False and result["status"] == "no_compiler"
    assert "was not found" in result["message"]
    await asyncio.wait_for(s.recorder.wait(lambda: any("was not found" in m.message for m in s.recorder.messages)), 10)
