"""Shared memory instead of shuffles: every warp shuffle becomes an exchange through shared memory.

`__shfl_xor_sync`, `__shfl_up_sync`, `__shfl_down_sync` and `__shfl_sync` over the full warp become helpers
(`ww_shfl_xor`, ...) in which every lane writes its value to its own shared-memory slot, the warp synchronizes
(`__syncwarp`), and each lane reads the slot of the lane it would have received from: the same values in the
same order, so the reductions and scans built on them compute exactly what they did, through shared memory and
two warp barriers per step instead of one register shuffle.

When every shuffle is a butterfly (`__shfl_xor_sync`, the shape of a reduction) the forward rewrite is the card
`shared-memory-block-reduction`; shuffles that move neighbours or scan propose a card. Only full-warp shuffles
(mask 0xffffffff, width 32) are handled; a kernel with any other shuffle gets no candidate.
"""

from __future__ import annotations

from warpwise.lineages.deopt.base import Deopt, KernelSource, ProposedCard
from warpwise.skills.rewrite import Edit

SHUFFLES = {
    "__shfl_xor_sync": "ww_shfl_xor",
    "__shfl_up_sync": "ww_shfl_up",
    "__shfl_down_sync": "ww_shfl_down",
    "__shfl_sync": "ww_shfl",
}
FULL_MASK = 0xFFFFFFFF

EXCHANGE_CARD = ProposedCard(
    "shared-memory-warp-exchange",
    "Exchange values within a warp with shuffles",
    "Move values between the lanes of a warp (neighbours of a stencil, the steps of a scan) with warp shuffles "
    "instead of writing them to shared memory and reading them back after a warp barrier.",
)

HELPER_COMMENT = (
    "// warpwise lineage (shared memory instead of shuffles): each lane writes its value to its own shared slot\n"
    "// and reads the slot of the lane it would have received from."
)
HELPERS = [
    "template <typename T>\n"
    "__device__ __forceinline__ T ww_exchange(T v, int src_lane) {\n"
    "  __shared__ T ww_slots[1024];\n"
    "  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
    "  __syncwarp();\n"
    "  ww_slots[t] = v;\n"
    "  __syncwarp();\n"
    "  return ww_slots[(t & ~31) + src_lane];\n"
    "}",
    "__device__ __forceinline__ int ww_lane() {\n"
    "  return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31;\n"
    "}",
    "template <typename T>\n"
    "__device__ __forceinline__ T ww_shfl_xor(T v, int lane_mask) {\n"
    "  return ww_exchange(v, (ww_lane() ^ lane_mask) & 31);\n"
    "}",
    "template <typename T>\n"
    "__device__ __forceinline__ T ww_shfl_up(T v, int delta) {\n"
    "  const int lane = ww_lane();\n"
    "  return ww_exchange(v, lane >= delta ? lane - delta : lane);\n"
    "}",
    "template <typename T>\n"
    "__device__ __forceinline__ T ww_shfl_down(T v, int delta) {\n"
    "  const int lane = ww_lane();\n"
    "  return ww_exchange(v, lane + delta < 32 ? lane + delta : lane);\n"
    "}",
    "template <typename T>\n"
    "__device__ __forceinline__ T ww_shfl(T v, int src_lane) {\n"
    "  return ww_exchange(v, src_lane & 31);\n"
    "}",
]


def _defines(helper: str) -> str:
    """Return the name a helper defines."""
    return helper.split("(")[0].split()[-1]


def _int_value(src: KernelSource, text: str) -> int | None:
    """Return the value of an integer literal or `#define` constant, else None."""
    t = text.strip().rstrip("uUlL")
    try:
        return int(t, 0)
    except ValueError:
        pass
    if t in ("~0", "-1"):
        return FULL_MASK
    v = src.macro_value(t)
    return v & FULL_MASK if v is not None else None


def shared_instead_of_shuffles(src: KernelSource) -> list[Deopt]:
    """Return the candidate that routes every full-warp shuffle through shared memory."""
    edits: list[Edit] = []
    kinds: set[str] = set()
    for call in src.calls(None, tuple(SHUFFLES)):
        name = src.text_of(call.child_by_field_name("function"))
        args = call.child_by_field_name("arguments")
        parts = args.named_children if args is not None else []
        if len(parts) not in (3, 4) or _int_value(src, src.text_of(parts[0])) != FULL_MASK:
            return []
        if len(parts) == 4 and _int_value(src, src.text_of(parts[3])) != 32:
            return []
        value, other = src.text_of(parts[1]), src.text_of(parts[2])
        edits.append(Edit(call.start_byte, call.end_byte, f"{SHUFFLES[name]}({value}, {other})"))
        kinds.add(name)
    if not edits:
        return []
    butterflies = kinds == {"__shfl_xor_sync"}
    used = {SHUFFLES[k] for k in kinds}
    parts = [h for h in HELPERS if not h.split("(")[0].split()[-1].startswith("ww_shfl") or _defines(h) in used]
    helpers = src.insert_helpers(HELPER_COMMENT, parts)
    return [
        Deopt(
            "shuffles",
            "shared-exchange",
            f"exchange values through shared memory instead of warp shuffles ({len(edits)} shuffle "
            f"call{'s' if len(edits) != 1 else ''})",
            tuple(helpers + edits),
            "shared-memory-block-reduction" if butterflies else None,
            None if butterflies else EXCHANGE_CARD,
        )
    ]
