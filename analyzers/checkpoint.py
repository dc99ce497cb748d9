"""Cooperative checkpoints: the cheap places where a long analysis lets more urgent work run first.

The language server analyses on one thread (Python's GIL would make a second analysis thread share the same core
anyway). So that one document's long analysis never delays another document's first diagnostics, the analysis
calls `checkpoint()` at places where stopping costs nothing: during parsing (tree-sitter's progress callback),
between the functions of a file, between the cards matched against one function, between the model-level rules.
Outside the server nothing is installed and a checkpoint is one attribute read; inside, the analysis lane installs
a hook (`checkpoints(hook)`) that may run another document's analysis to completion before returning, or raise
`Superseded` to abandon a version the editor has already replaced.

`Superseded` derives from `BaseException`, not `Exception`, so that the "one failing card or rule is logged and
skipped" guards of the analysis let it through, the way `asyncio.CancelledError` passes `except Exception`. It is
raised only from checkpoints that say they may be abandoned (`abortable=True`); the parse's checkpoints never are,
because tree-sitter is in the middle of building a tree there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Hook = Callable[[bool], None]
"""Called with whether the analysis may be abandoned at this checkpoint."""

_local = threading.local()


class Superseded(BaseException):
    """Raised at a checkpoint to abandon the analysis of a version the editor has already replaced."""


def checkpoint(abortable: bool = True) -> None:
    """Let the installed hook run more urgent work (or abandon this analysis, where `abortable`)."""
    hook: Hook | None = getattr(_local, "hook", None)
    if hook is not None:
        hook(abortable)


def installed() -> bool:
    """Return whether a hook is installed on this thread (so callers can skip the cost of offering checkpoints)."""
    return getattr(_local, "hook", None) is not None


@contextmanager
def checkpoints(hook: Hook | None) -> Iterator[None]:
    """Install a hook on this thread for the duration of a block (None: no checkpoints inside the block)."""
    previous = getattr(_local, "hook", None)
    _local.hook = hook
    try:
        yield
    finally:
        _local.hook = previous
