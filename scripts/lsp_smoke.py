"""A language-server smoke test that needs nothing but the standard library: run it with any Python against any
`warpwise serve` (an installed wheel, a pipx or uv tool install, the VS Code extension's bundled server).

    python scripts/lsp_smoke.py examples/vector_ops.cu -- /path/to/venv/bin/warpwise serve

It starts the server over stdio, opens the file, and checks what an editor needs: the server initializes, it
publishes warpwise diagnostics for the file, a hover on the first one answers, the code actions there include a
quick fix whose edit resolves, and the server shuts down and exits with code 0. Each check prints one line;
the script exits 1 at the first failure, naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any

TIMEOUT_S = 60.0


class Client:
    """A minimal LSP client over a child process's stdin/stdout (Content-Length framing)."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr)
        self.inbox: Queue[dict[str, Any]] = Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            self.inbox.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC message."""
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        """Send a request and return its result, answering the server's own requests meanwhile."""
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, f"the answer to {method}")
        if "error" in msg:
            raise SystemExit(f"FAIL {method}: the server answered an error: {msg['error']}")
        return msg.get("result")

    def wait(self, found: Any, what: str) -> dict[str, Any]:
        """Return the first message for which `found(message)` holds."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"FAIL: no {what} within {TIMEOUT_S:.0f} s")
            try:
                msg = self.inbox.get(timeout=left)
            except Empty:
                continue
            if "method" in msg and "id" in msg:
                # A request from the server (configuration, progress, registration): answer it plainly.
                result: Any = (
                    [{}] * len(msg["params"].get("items", [])) if msg["method"] == "workspace/configuration" else None
                )
                self.send({"id": msg["id"], "result": result})
                continue
            if found(msg):
                return msg


CAPABILITIES = {
    "textDocument": {
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "codeAction": {
            "codeActionLiteralSupport": {
                "codeActionKind": {"valueSet": ["quickfix", "refactor", "source", "source.fixAll"]}
            },
            "resolveSupport": {"properties": ["edit"]},
            "dataSupport": True,
        },
        "publishDiagnostics": {"relatedInformation": True},
        "synchronization": {"didSave": True},
    },
    "workspace": {"configuration": True, "workspaceEdit": {"documentChanges": True}},
    "window": {"workDoneProgress": True},
}


def main(argv: list[str]) -> int:
    """Run the smoke test; return 0 when every check passed."""
    if "--" not in argv or argv.index("--") != 1:
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(argv[0]).resolve()
    server = argv[2:]
    client = Client(server)
    root = source.parent.as_uri()
    init = client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": source.parent.name}],
            "capabilities": CAPABILITIES,
        },
    )
    name = (init.get("serverInfo") or {}).get("name")
    print(f"ok   initialize: {name} {(init.get('serverInfo') or {}).get('version', '')}")
    client.notify("initialized", {})
    uri = source.as_uri()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "cuda-cpp", "version": 1, "text": source.read_text()}},
    )
    pushed = client.wait(
        lambda m: (
            m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and any(d.get("source") == "warpwise" for d in m["params"]["diagnostics"])
        ),
        f"warpwise diagnostics for {source.name}",
    )
    diags = [d for d in pushed["params"]["diagnostics"] if d.get("source") == "warpwise"]
    print(f"ok   diagnostics: {len(diags)} ({', '.join(sorted({str(d.get('code')) for d in diags}))})")
    first = diags[0]
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": first["range"]["start"]})
    if not hover or not hover.get("contents"):
        raise SystemExit(f"FAIL hover: nothing at {first['range']['start']} (the `{first.get('code')}` finding)")
    print("ok   hover")
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": first["range"], "context": {"diagnostics": [first]}},
    )
    fixes = [a for a in actions or [] if a.get("kind") == "quickfix"]
    if not fixes:
        raise SystemExit(f"FAIL code actions: no quick fix for the `{first.get('code')}` finding")
    action = fixes[0] if fixes[0].get("edit") else client.request("codeAction/resolve", fixes[0])
    if not action.get("edit"):
        raise SystemExit(f"FAIL code action resolve: {action.get('title')!r} has no edit")
    print(f"ok   quick fix: {action['title']}")
    client.request("shutdown", None)
    client.notify("exit", None)
    try:
        code = client.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        client.proc.kill()
        raise SystemExit("FAIL exit: the server did not exit within 15 s of `exit`") from None
    if code != 0:
        raise SystemExit(f"FAIL exit: the server exited with code {code}")
    print("ok   shutdown and exit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
