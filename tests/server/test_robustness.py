"""Bad input never crashes the server or loses text: odd edits, junk, malformed messages, unknown documents."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Future
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.conftest import CUDA_INVALID
from tests.server.conftest import KERNELS, Session

STRIDED = "out[c * rows + r] = in[c * rows + r];"


async def _alive(session: Session) -> None:
    """Check the server still answers (a fresh document gets its diagnostics)."""
    uri = session.open(KERNELS.with_name("alive.cu"), KERNELS.read_text())
    assert await session.static(uri)


async def test_utf16_columns_with_non_ascii_text(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    # An emoji (two UTF-16 units, four UTF-8 bytes) and an accented letter before the strided store.
    version = session.change(uri, (22, 4), (22, 4), "/*😀é*/")
    diags = await session.static(uri, version)
    starts = sorted(d.range.start.character for d in diags if str(d.code) == "uncoalesced-global-access")
    assert starts == [4 + 7, 24 + 7], "columns count UTF-16 units: /*😀é*/ is 7 of them"


async def test_edits_past_the_end_are_clamped_and_text_stays_in_sync(session: Session) -> None:
    uri = session.open(KERNELS)
    await session.static(uri)
    session.change(uri, (500, 0), (600, 3), "\n// appended past the end\n")
    session.change(uri, (22, 200), (22, 300), "  // past the end of the line")
    session.change(uri, (0, 0), (0, 0), "\x0c// a form feed is not a line break in LSP\n")
    version = session.change(uri, (23, 4), (23, 4), "")
    diags = await session.static(uri, version)
    lines = [d.range.start.line for d in diags if str(d.code) == "uncoalesced-global-access"]
    assert lines == [23, 23], "one line was added above the store"


async def test_junk_and_half_typed_files(session: Session) -> None:
    for name in ("binary_junk.cu", "half_typed.cu", "unterminated.cu"):
        path = CUDA_INVALID / name
        text = path.read_bytes().decode("utf-8", "replace")
        uri = session.open(path, text)
        diags = await session.static(uri)
        assert all(d.source == "warpwise" for d in diags)
        await session.hover(uri, 3, 3)
        await session.actions(uri, 2)
    await _alive(session)


async def test_changes_to_unknown_documents_are_ignored(session: Session) -> None:
    uri = "file:///nowhere/never-opened.cu"
    session.versions[uri] = 1
    session.change(uri, (0, 0), (0, 0), "x")
    assert await session.hover(uri, 0, 0) is None
    assert await session.actions(uri, 0) == []
    await _alive(session)


async def test_non_cuda_documents_are_not_analysed(session: Session) -> None:
    path = KERNELS.with_name("notes.txt")
    session.open(path, "__global__ void k(float* x) { x[threadIdx.x * 32] = 0; }", language_id="plaintext")
    assert await session.hover(path.as_uri(), 0, 17) is None
    await _alive(session)


async def _raw_request(session: Session, method: str, params: object) -> Any:
    """Send a request exactly as given (no client-side typing) and return the server's answer."""
    protocol = session.client.protocol
    msg_id = f"raw-{method}"
    future: Future = Future()
    protocol._request_futures[msg_id] = future
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    assert protocol.writer is not None
    protocol.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    return await asyncio.wrap_future(future)


async def test_malformed_requests_get_errors_and_the_server_goes_on(session: Session) -> None:
    with pytest.raises(JsonRpcException):
        await _raw_request(session, types.TEXT_DOCUMENT_HOVER, {"textDocument": {"uri": 5}, "position": "here"})
    with pytest.raises(JsonRpcException):
        await _raw_request(session, types.TEXT_DOCUMENT_CODE_ACTION, {"textDocument": {}})
    with pytest.raises(JsonRpcException):
        await session.command("warpwise.noSuchCommand")
    if session.name != "emacs":
        with pytest.raises(JsonRpcException):
            await session.client.code_action_resolve_async(types.CodeAction(title="foreign", data={"x": 1}))
    result = await session.command("warpwise.verifyKernel", 42, None, {"nested": ["junk"]})
    assert result["ok"] is False
    await _alive(session)


async def test_files_over_the_size_limit_are_not_analysed(sessions) -> None:
    s: Session = await sessions("visual-studio-code", {"analysis": {"maxFileSizeMiB": 0.001}})
    uri = s.open(KERNELS)
    assert await s.static(uri) == []
    assert await s.hover(uri, 14, 18) is None
