"""Static guardrails for generated kernels: refuse the shapes of a false gain before the gate runs them.

The gate already checks as if every candidate were cheating (poisoned outputs, several seeds, mutation checks,
no device-side launches). Kernels written by an LLM get one more screen first, on the text: new device-global
state that could carry results from one call to the next (`__device__` or `__managed__` variables, `static`
locals), host-runtime calls in device code (streams, graphs, copies, launches: work handed elsewhere), and
inline assembly that exits or traps. A refused version is a rejected branch with the reason; it costs no GPU time.
"""

from __future__ import annotations

import re

from warpwise.search.context import strip_comments

_GLOBAL_STATE = re.compile(r"^[ \t]*(?:static[ \t]+)?(?:__device__|__managed__)[ \t]+(?!.*\()[^;{}]*;", re.M)
_STATIC_LOCAL = re.compile(
    r"\bstatic\s+(?!__device__|__forceinline__|inline)[A-Za-z_][\w:<>, ]*\s+\w+\s*(?:\[[^\]]*\])?\s*[=;]"
)
_RUNTIME = re.compile(
    r"\bcuda(?:Stream\w*|Graph\w*|Launch\w*|Memcpy\w*|Memset\w*|Malloc\w*|DeviceSynchronize|Event\w*)\b|<<<"
)
_ASM_EXIT = re.compile(r"\basm\b[^;]*\b(?:exit|trap)\b")


def _count(pattern: re.Pattern[str], text: str) -> int:
    return len(pattern.findall(text))


def screen_text(start: str, candidate: str) -> str | None:
    """Return why a generated version is refused before verification, or None when it passes."""
    a, b = strip_comments(start), strip_comments(candidate)
    if _count(_GLOBAL_STATE, b) > _count(_GLOBAL_STATE, a):
        return "it adds a `__device__`/`__managed__` variable, which could carry results from one call to the next"
    if _count(_STATIC_LOCAL, b) > _count(_STATIC_LOCAL, a):
        return "it adds a `static` variable, which could carry results from one call to the next"
    if _count(_RUNTIME, b) > _count(_RUNTIME, a):
        return "it calls the CUDA runtime (streams, launches, copies) where the start does not"
    if _count(_ASM_EXIT, b) > _count(_ASM_EXIT, a):
        return "it adds inline assembly that exits or traps"
    return None
