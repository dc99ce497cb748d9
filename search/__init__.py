"""warpwise.search: tree search over verified edits (OptiML-X) and LLM generation and judging (OptiML-G).

`optimize(path, kernel, OptimizeOptions(...))` searches for a faster version of one kernel: states are versions
of the file, actions are card rewrites, exact parameter choices, lineage-guided steps and (when configured) LLM
edits, and every version is measured by the verification gate against the starting kernel. The result is a
`SearchReport`: one edit, the path that led to it, and every rejected branch with its status. See docs/search.md.

Public names are imported lazily, so that importing the package stays cheap for the server and the CLI.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "optimize": "warpwise.search.optimize",
    "OptimizeOptions": "warpwise.search.optimize",
    "OptimizeError": "warpwise.search.optimize",
    "SearchReport": "warpwise.search.report",
    "FileEdit": "warpwise.search.report",
    "Progress": "warpwise.search.tree",
    "LLMConfig": "warpwise.search.llm",
    "generate": "warpwise.search.generate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'warpwise.search' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
