"""The resource guard of safe fixes: a fix that changes code generation is safe only if its build adds no spills.

Cards whose rewrite changes what the compiler emits without changing what the code computes (unrolling, register
blocking) declare `resource_guard: true`. Such a fix is `safe` in the sense that results do not change, but issue
18 saw `constant-trip-loop-without-unroll`'s fix-all add 180-340 bytes of register spills to tensor-core kernels.
So before a guarded fix is applied in bulk (`warpwise check --fix`, the editor's fix-all), the kernel is built as
written and as rewritten (compile-only, cached: `warpwise.verify.resources`); a fix whose build adds spills or
stack frame, or that no build can confirm, is treated as unsafe there.
"""

from __future__ import annotations

from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.model import FileModel
from warpwise.analyzers.parse import CudaDocument
from warpwise.skills.engine import Match
from warpwise.skills.model import Applicability
from warpwise.skills.rewrite import Fix, apply_edits
from warpwise.verify.resources import resource_regression


def unsafe_for_resources(model: FileModel, match: Match, fix: Fix) -> str | None:
    """Return why a safe fix of a guarded card may not be applied in bulk (None when it may)."""
    if fix.applicability is not Applicability.SAFE or not match.card.header.resource_guard:
        return None
    fn = model.function(match.function)
    if fn is None or not fn.is_kernel:
        return "unconfirmed: the fix is in a device function, which has no build of its own"
    after = analyze_document(CudaDocument(model.path, apply_edits(model.text, list(fix.edits))))
    return resource_regression(model, after, match.function)
