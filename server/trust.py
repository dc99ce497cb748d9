"""Trust: in an untrusted workspace nothing is compiled or run by the server (see `verification.py`)."""

from __future__ import annotations

UNTRUSTED = (
    "this workspace is not trusted to run code (`warpwise.verification.trustedWorkspace` is false): nothing is "
    "compiled or run"
)


class UntrustedWorkspace(RuntimeError):
    """Raised where code would be compiled or run in an untrusted workspace."""
