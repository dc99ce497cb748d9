"""`warpwise serve --tcp`: the same server on a socket."""

from __future__ import annotations

import asyncio
import json
import socket
import sys

from tests.server.conftest import WAIT_S


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _read_message(reader: asyncio.StreamReader) -> dict:
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(await reader.readexactly(length))


async def test_serve_over_tcp() -> None:
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "warpwise",
        "serve",
        "--tcp",
        "--port",
        str(port),
        "--log-level",
        "debug",
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(WAIT_S):
            # Wait for pygls to say it listens (it logs "Serving on ...").
            assert proc.stderr is not None
            while b"Serving on" not in (line := await proc.stderr.readline()):
                assert line, "the server exited before listening"
            drain = asyncio.ensure_future(proc.stderr.read())  # Keep reading, so the server never blocks on its log.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None}}
            ).encode()
            writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            while (message := await _read_message(reader)).get("id") != 1:
                pass
            caps = message["result"]["capabilities"]
            assert caps["positionEncoding"] == "utf-16"
            assert "warpwise.verifyKernel" in caps["executeCommandProvider"]["commands"]
            writer.close()
            drain.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
