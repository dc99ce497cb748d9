"""Drop `__restrict__` and the read-only path; drop cache hints.

Two candidates, each exact (the inputs of a kernel never alias its outputs in the problems we walk, and a load
through the read-only path or with a cache hint returns the same value as a plain load):
- `restrict`: every `__restrict__` qualifier is removed and every `__ldg(p)` becomes `*(p)`. The forward
  rewrite is the card `readonly-data-without-restrict` (`const T* __restrict__`, which lets the compiler use the
  read-only path itself).
- `cache-hints`: the streaming loads and stores (`__ldcs`, `__ldcg`, `__ldlu`, `__ldcv`, `__stcs`, `__stcg`,
  `__stwt`, `__stwb`) become plain accesses. No card explains this step: it proposes one.
"""

from __future__ import annotations

from warpwise.lineages.deopt.base import Deopt, KernelSource, ProposedCard
from warpwise.skills.rewrite import Edit

RESTRICT = ("__restrict__", "__restrict", "restrict")
READ_ONLY_LOADS = ("__ldg",)
HINT_LOADS = ("__ldcs", "__ldcg", "__ldca", "__ldlu", "__ldcv")
HINT_STORES = ("__stcs", "__stcg", "__stwb", "__stwt")

CACHE_HINT_CARD = ProposedCard(
    "streamed-data-without-cache-hint",
    "Mark data read or written once as streaming",
    "Load data that every thread reads exactly once with a streaming cache hint (`__ldcs`), so that it does not "
    "evict data that is reused (such as a vector every warp reads) from L1 and L2.",
)


def _qualifier_edits(src: KernelSource) -> list[Edit]:
    """Return edits that remove every `__restrict__` qualifier together with the space after it."""
    edits = []
    for n in src.nodes(None, ("type_qualifier", "ms_pointer_modifier")):
        if src.text_of(n) not in RESTRICT or not src.in_code(n.start_byte):
            continue
        end = n.end_byte
        while end < len(src.data) and src.data[end : end + 1] in (b" ", b"\t"):
            end += 1
        edits.append(Edit(n.start_byte, end, ""))
    return edits


def _plain_load_edits(src: KernelSource, names: tuple[str, ...]) -> list[Edit]:
    """Return edits that turn `__ldg(p)` (and the like) into `(*(p))`."""
    edits = []
    for call in src.calls(None, names):
        args = call.child_by_field_name("arguments")
        if args is None or args.named_child_count != 1:
            continue
        callee = call.child_by_field_name("function")
        edits.append(Edit(callee.start_byte, args.start_byte, ""))
        edits.append(Edit(args.start_byte, args.start_byte + 1, "(*("))
        edits.append(Edit(args.end_byte - 1, args.end_byte, "))"))
    return edits


def _plain_store_edits(src: KernelSource, names: tuple[str, ...]) -> list[Edit] | None:
    """Return edits that turn `__stcs(p, v)` into `(*(p) = (v))`, or None when a call has another shape."""
    edits = []
    for call in src.calls(None, names):
        args = call.child_by_field_name("arguments")
        if args is None or args.named_child_count != 2:
            return None
        ptr, val = args.named_children
        edits.append(Edit(call.start_byte, call.end_byte, f"(*({src.text_of(ptr)}) = ({src.text_of(val)}))"))
    return edits


def drop_read_only(src: KernelSource) -> list[Deopt]:
    """Return the candidates that drop `__restrict__`/`__ldg`, and cache hints."""
    out = []
    restrict = _qualifier_edits(src) + _plain_load_edits(src, READ_ONLY_LOADS)
    if restrict:
        out.append(
            Deopt(
                "read-only",
                "restrict",
                "drop `__restrict__` and the read-only path (`__ldg` becomes a plain load)",
                tuple(restrict),
                "readonly-data-without-restrict",
            )
        )
    stores = _plain_store_edits(src, HINT_STORES)
    hints = _plain_load_edits(src, HINT_LOADS) + (stores or [])
    if hints and stores is not None:
        out.append(
            Deopt(
                "read-only",
                "cache-hints",
                "drop the cache hints (`__ldcs` and the like become plain loads and stores)",
                tuple(hints),
                None,
                CACHE_HINT_CARD,
            )
        )
    return out
