"""warpwise.verify: the verification gate.

Nothing in warpwise is called "verified" unless this package measured it: the original and a candidate kernel
are built (NVRTC), run on the same seeded random inputs in an isolated worker process, compared, and timed with
the L2 flushed; the verdict is a `VerificationResult` kept in a SQLite cache. See docs/verification.md.

The public names below are imported lazily, so that the worker process, which imports
`warpwise.verify.types`, does not pull in the analyzers or tree-sitter by importing this package.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Candidate": "warpwise.verify.gate",
    "Gate": "warpwise.verify.gate",
    "PreparedJob": "warpwise.verify.gate",
    "prepare": "warpwise.verify.gate",
    "VerificationQueue": "warpwise.verify.jobqueue",
    "JobEvent": "warpwise.verify.jobqueue",
    "JobHandle": "warpwise.verify.jobqueue",
    "JobState": "warpwise.verify.jobqueue",
    "Backend": "warpwise.verify.backends",
    "LocalBackend": "warpwise.verify.backends",
    "CompileOnlyBackend": "warpwise.verify.backends",
    "ClusterBackend": "warpwise.verify.backends",
    "make_backend": "warpwise.verify.backends",
    "ResultCache": "warpwise.verify.cache",
    "CacheKey": "warpwise.verify.cache",
    "resolve_spec": "warpwise.verify.spec",
    "ProblemSpec": "warpwise.verify.spec",
    "SpecMissing": "warpwise.verify.spec",
    "AnnotationError": "warpwise.verify.spec",
    "VerificationResult": "warpwise.verify.types",
    "Status": "warpwise.verify.types",
    "Options": "warpwise.verify.types",
    "DeviceIdentity": "warpwise.verify.types",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'warpwise.verify' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
