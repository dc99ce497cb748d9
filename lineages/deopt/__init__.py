"""The deoptimizers: inverse passes that each remove one optimization from a kernel (issue 7).

`PASSES` lists them in the order a lineage walk tries them (the optimizations usually applied last, going
forward, are removed first). `candidates(src)` runs every pass over a kernel and keeps the candidates whose
edits apply and whose result still parses; a pass that fails is logged and skipped, never hiding the others.
Each pass module says which shapes it handles exactly and which card its candidates map to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from warpwise.lineages.deopt.async_copy import remove_async_copies
from warpwise.lineages.deopt.atomics import per_thread_atomics
from warpwise.lineages.deopt.base import Deopt, KernelSource, ProposedCard, reparses
from warpwise.lineages.deopt.coarsening import one_element_per_thread
from warpwise.lineages.deopt.devectorize import devectorize
from warpwise.lineages.deopt.online import two_pass_instead_of_online
from warpwise.lineages.deopt.padding import remove_padding
from warpwise.lineages.deopt.read_only import drop_read_only
from warpwise.lineages.deopt.shuffles import shared_instead_of_shuffles
from warpwise.lineages.deopt.unroll import remove_unrolling
from warpwise.lineages.deopt.unstage import unstage_shared
from warpwise.lineages.deopt.untile import untile
from warpwise.skills.rewrite import EditConflict

log = logging.getLogger(__name__)

__all__ = [
    "PASSES",
    "Deopt",
    "DeoptPass",
    "KernelSource",
    "ProposedCard",
    "candidates",
    "pass_by_id",
]


@dataclass(frozen=True)
class DeoptPass:
    """One deoptimizer: an id, what it removes, and the function that finds its candidates."""

    id: str
    removes: str
    run: Callable[[KernelSource], list[Deopt]]


PASSES: tuple[DeoptPass, ...] = (
    DeoptPass("read-only", "`__restrict__`, the read-only path and cache hints", drop_read_only),
    DeoptPass("unroll", "unrolling and independent loads in flight", remove_unrolling),
    DeoptPass("devectorize", "16-byte vector accesses", devectorize),
    DeoptPass("padding", "padding of shared-memory rows", remove_padding),
    DeoptPass("async-copy", "asynchronous global-to-shared copies (cp.async)", remove_async_copies),
    DeoptPass("shuffles", "warp shuffles (exchanges go through shared memory)", shared_instead_of_shuffles),
    DeoptPass("two-pass", "the online (max, sum) merge of softmax", two_pass_instead_of_online),
    DeoptPass("atomics", "aggregation of atomics (shared privatization, one atomic per block)", per_thread_atomics),
    DeoptPass("untile", "warp tiling, then register tiling (a thread's tile of outputs, halved per step)", untile),
    DeoptPass("unstage", "shared-memory staging of global data (reads go to global memory)", unstage_shared),
    DeoptPass("coarsening", "thread coarsening (grid-stride loops, several pieces per thread)", one_element_per_thread),
)


def pass_by_id(pass_id: str) -> DeoptPass | None:
    """Return a pass by its id."""
    return next((p for p in PASSES if p.id == pass_id), None)


def candidates(src: KernelSource, passes: Iterable[DeoptPass] = PASSES) -> list[Deopt]:
    """Return every pass's candidates for a kernel, keeping those that apply cleanly and still parse."""
    out: list[Deopt] = []
    for p in passes:
        try:
            found = p.run(src)
        except Exception:  # One failing pass is logged and skipped; it never hides the others.
            log.exception("deoptimizer %s failed on %s", p.id, src.path)
            continue
        for d in found:
            try:
                text = d.apply(src.text)
            except EditConflict:
                log.warning("deoptimizer %s produced overlapping edits on %s; skipped", d.key, src.path)
                continue
            if text == src.text and not d.launch:
                continue
            if not reparses(text):
                log.warning("deoptimizer %s produced text that does not parse on %s; skipped", d.key, src.path)
                continue
            out.append(d)
    return out
