"""A local OpenAI-compatible HTTP server on loopback that replays recorded chat completions.

A recording (`recordings/*.json`) is a list of exchanges. Each request to `/v1/chat/completions` takes the first
unused exchange whose `match` text occurs in the request's messages (an exchange without `match` takes any
request). An exchange answers with `content` (a normal completion), or with `status` and an error body, or with
`raw` bytes (a malformed body), after `delay_s` seconds. Every request is kept (path, headers, JSON body) so that
tests can check the prompts that were really sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).resolve().parent / "recordings"


def load(name: str) -> list[dict[str, Any]]:
    """Return the exchanges of a recording."""
    doc = json.loads((RECORDINGS / f"{name}.json").read_text(encoding="utf-8"))
    return list(doc["exchanges"])


class ReplayServer:
    """Serves recorded answers on 127.0.0.1 (an ephemeral port) until closed."""

    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        self.exchanges = [dict(e, used=False) for e in exchanges]
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                exchange = server.take(body)
                if exchange is None:
                    self._send(500, {"error": {"message": "no recorded response left", "type": "server_error"}})
                    return
                time.sleep(float(exchange.get("delay_s", 0)))
                if "raw" in exchange:
                    data = str(exchange["raw"]).encode()
                    self.send_response(int(exchange.get("status", 200)))
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                status = int(exchange.get("status", 200))
                if status != 200:
                    self._send(status, {"error": {"message": exchange.get("error", "recorded error"), "type": "x"}})
                    return
                self._send(
                    200,
                    {
                        "id": "chatcmpl-recorded",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": exchange["content"]},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

            def _send(self, status: int, doc: dict[str, Any]) -> None:
                data = json.dumps(doc).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="llm-replay")

    def take(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Return the first unused exchange that matches a request."""
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        with self._lock:
            for e in self.exchanges:
                if not e["used"] and str(e.get("match", "")) in text:
                    e["used"] = True
                    return e
        return None

    @property
    def url(self) -> str:
        """Return the base URL clients use."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def unused(self) -> list[dict[str, Any]]:
        """Return the exchanges no request took."""
        return [e for e in self.exchanges if not e["used"]]
