"""The language-server fixtures of `tests/server` (a real `warpwise serve` driven by pytest-lsp)."""

from tests.server.conftest import initialized_client, session, sessions

__all__ = ["initialized_client", "session", "sessions"]
