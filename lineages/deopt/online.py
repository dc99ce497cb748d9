"""Two-pass instead of online: a block-wide merge of (max, sum) pairs becomes a max pass, then a sum pass.

The online softmax keeps, per thread, a running maximum `m` and the sum `s` of exponentials relative to it, and
merges the pairs across the block in one reduction (each merge rescales the smaller side's sum). The two-pass
form reduces the block's maximum first, rescales each thread's sum to it (`s * exp(m - max)`, exact up to
rounding), then reduces the sums: two block-wide reductions and two barriers instead of one.

Recognized shape, where the rewrite is exact: a device function `void F(float& m, float& s)` that merges the
pairs of a one-dimensional block with full-warp xor shuffles (`__shfl_xor_sync`, or the `ww_shfl_xor` of an
earlier step) on both values, through two `__shared__ float` arrays of one slot per warp, calling a four-argument
merge function. Its body is replaced; its callers are unchanged. The forward rewrite is the card
`two-pass-softmax`. Other online algorithms (Welford or Chan statistics) are not handled: the pass returns
nothing for them.
"""

from __future__ import annotations

import re

from warpwise.lineages.deopt.base import Deopt, KernelSource
from warpwise.skills.rewrite import Edit

_REF_PARAM = re.compile(r"^float\s*&$")


def _shared_slots(src: KernelSource, body_text: str) -> list[tuple[str, str]]:
    """Return the `__shared__ float NAME[W]` declarations of a body as (name, W)."""
    return re.findall(r"__shared__\s+float\s+(\w+)\s*\[\s*([\w\s()*/+-]+?)\s*\]\s*;", body_text)


def two_pass_instead_of_online(src: KernelSource) -> list[Deopt]:
    """Return the candidate that splits an online (max, sum) block merge into two passes."""
    for fn in src.device_functions():
        if fn.is_kernel or len(fn.params) != 2:
            continue
        if not all(_REF_PARAM.match(" ".join(p.type.split())) for p in fn.params):
            continue
        m, s = fn.params[0].name, fn.params[1].name
        node = src.function_node(fn)
        body = node.child_by_field_name("body") if node is not None else None
        if body is None:
            continue
        text = src.text_of(body)
        slots = _shared_slots(src, text)
        if len(slots) != 2 or slots[0][1] != slots[1][1] or "__syncthreads()" not in text:
            continue
        if "threadIdx.y" in text or "threadIdx.z" in text:
            continue
        native = all(re.search(rf"__shfl_xor_sync\(\s*0x[fF]{{8}}[uU]?\s*,\s*{v}\s*,", text) for v in (m, s))
        emulated = all(re.search(rf"\bww_shfl_xor\(\s*{v}\s*,", text) for v in (m, s))
        if not (native or emulated):
            continue
        if not re.search(rf"\b\w+\(\s*{m}\s*,\s*{s}\s*,\s*[^,()]+,\s*[^,()]+\)", text):
            continue
        shfl = "ww_shfl_xor({v}, ww_o)" if emulated and not native else "__shfl_xor_sync(0xffffffffu, {v}, ww_o)"
        (red_m, warps), (red_s, _) = slots
        new_body = _body(m, s, red_m, red_s, warps, shfl)
        return [
            Deopt(
                "two-pass",
                "softmax-merge",
                f"reduce the block's maximum first, then the rescaled sums, in `{fn.name}` (two block-wide passes "
                f"instead of one online merge of (max, sum) pairs)",
                (Edit(body.start_byte, body.end_byte, new_body),),
                "two-pass-softmax",
            )
        ]
    return []


def _body(m: str, s: str, red_m: str, red_s: str, warps: str, shfl: str) -> str:
    """Return the two-pass body of the merge function."""
    mx = shfl.format(v="ww_max")
    sm = shfl.format(v="ww_sum")
    return (
        "{\n"
        "  // warpwise lineage (two-pass instead of online): the block's maximum first, then the sums rescaled to it.\n"
        f"  __shared__ float {red_m}[{warps}];\n"
        f"  __shared__ float {red_s}[{warps}];\n"
        "  const int ww_lane = threadIdx.x & 31;\n"
        "  const int ww_warp = threadIdx.x >> 5;\n"
        f"  float ww_max = {m};\n"
        "#pragma unroll\n"
        f"  for (int ww_o = 16; ww_o > 0; ww_o >>= 1) ww_max = fmaxf(ww_max, {mx});\n"
        f"  if (ww_lane == 0) {red_m}[ww_warp] = ww_max;\n"
        "  __syncthreads();\n"
        f"  ww_max = {red_m}[0];\n"
        "#pragma unroll\n"
        f"  for (int ww_w = 1; ww_w < {warps}; ++ww_w) ww_max = fmaxf(ww_max, {red_m}[ww_w]);\n"
        f"  float ww_sum = {m} == ww_max ? {s} : {s} * expf({m} - ww_max);\n"
        "#pragma unroll\n"
        f"  for (int ww_o = 16; ww_o > 0; ww_o >>= 1) ww_sum += {sm};\n"
        f"  if (ww_lane == 0) {red_s}[ww_warp] = ww_sum;\n"
        "  __syncthreads();\n"
        f"  ww_sum = {red_s}[0];\n"
        "#pragma unroll\n"
        f"  for (int ww_w = 1; ww_w < {warps}; ++ww_w) ww_sum += {red_s}[ww_w];\n"
        f"  {m} = ww_max;\n"
        f"  {s} = ww_sum;\n"
        "}"
    )
