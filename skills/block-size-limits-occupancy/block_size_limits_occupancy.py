"""Rules of the `block-size-limits-occupancy` card (Choose a block size and shared memory that fill the SM): what
only this card uses.

Registered here: matcher `occupancy_limited_by_block`. The card's rewrite and the recognisers only it needs live
here too; what several cards share stays in the engine modules (`warpwise.skills.matchers`, `.checks`, `.rewrites`,
`.facts*`). The library imports this file by path as `warpwise.skills.cards.block_size_limits_occupancy`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.facts_memory import launches_of
from warpwise.analyzers.findings import Related
from warpwise.analyzers.model import Function, FunctionKind
from warpwise.skills.model import AnchorKind
from warpwise.skills.regions import MatchContext, Region, matcher
from warpwise.skills.spec_launch import is_spec_launch


@dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of one compute capability (CUDA C++ Programming Guide, technical specifications)."""

    max_warps: int
    max_blocks: int
    smem_per_sm: int
    smem_per_block: int
    reserved_per_block: int
    registers: int = 65536


SM_LIMITS = {
    70: SmLimits(64, 32, 96 * 1024, 96 * 1024, 0),
    75: SmLimits(32, 16, 64 * 1024, 64 * 1024, 0),
    80: SmLimits(64, 32, 164 * 1024, 163 * 1024, 1024),
    86: SmLimits(48, 16, 100 * 1024, 99 * 1024, 1024),
    87: SmLimits(48, 16, 164 * 1024, 163 * 1024, 1024),
    89: SmLimits(48, 24, 100 * 1024, 99 * 1024, 1024),
    90: SmLimits(64, 32, 228 * 1024, 227 * 1024, 1024),
}


def sm_limits(sm: int) -> tuple[int, SmLimits]:
    """Return the limits of the closest known architecture at or below `sm`."""
    known = sorted(k for k in SM_LIMITS if k <= sm) or [min(SM_LIMITS)]
    return known[-1], SM_LIMITS[known[-1]]


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM for one block size, and what limits them."""

    threads: int
    warps_per_block: int
    blocks: int
    warps: int
    max_warps: int
    limiter: str
    detail: str
    smem: int | None

    @property
    def fraction(self) -> float:
        """Return the theoretical occupancy (resident warps over the maximum)."""
        return self.warps / self.max_warps


def occupancy(
    sm: int, threads: int, static_smem: int | None, dynamic_smem: int | None, min_blocks: int | None
) -> Occupancy:
    """Return the theoretical occupancy of a block size on an architecture (registers aside)."""
    arch, lim = sm_limits(sm)
    warps = math.ceil(threads / 32)
    by_threads = lim.max_warps // warps if warps else 0
    limits = [(by_threads, "threads"), (lim.max_blocks, "blocks")]
    smem = None
    if static_smem is not None and dynamic_smem is not None:
        smem = static_smem + dynamic_smem
        if smem > 0:
            limits.append((lim.smem_per_sm // (smem + lim.reserved_per_block), "shared"))
    blocks, limiter = min(limits, key=lambda t: t[0])
    resident = blocks * warps
    if limiter == "threads":
        detail = (
            f"{threads}-thread blocks are {warps} warps each; {blocks} of them fit the {lim.max_warps} warps "
            f"an sm_{arch} SM holds"
        )
    elif limiter == "blocks":
        detail = (
            f"an sm_{arch} SM holds at most {lim.max_blocks} blocks, and {lim.max_blocks} blocks of {threads} "
            f"threads are only {resident} warps"
        )
    else:
        detail = (
            f"each block needs {smem} bytes of shared memory plus {lim.reserved_per_block} reserved, so only "
            f"{blocks} fit the {lim.smem_per_sm // 1024} KB of an sm_{arch} SM"
        )
    if min_blocks:
        detail += f"; `__launch_bounds__` asks for {min_blocks} resident blocks"
    return Occupancy(threads, warps, blocks, resident, lim.max_warps, limiter, detail, smem)


def static_shared_bytes(fn: Function) -> int | None:
    """Return the kernel's static shared memory in bytes (None when a size is not known)."""
    total = 0
    for s in fn.shared:
        if s.is_extern:
            continue
        if s.size_bytes is None:
            return None
        total += s.size_bytes
    return total


@matcher("occupancy_limited_by_block")
def occupancy_limited_by_block(ctx: MatchContext, threshold: float = 0.5) -> Iterator[Region]:
    """Find kernels whose launch block size and shared memory keep theoretical occupancy low."""
    fn = ctx.function
    if fn.kind is not FunctionKind.KERNEL:
        return
    static = static_shared_bytes(fn)
    bounds = fn.launch_bounds
    min_blocks = None
    if bounds and len(bounds) > 1 and bounds[1].strip().isdigit():
        min_blocks = int(bounds[1])
    sizes: dict[tuple[int, int | None], list[Any]] = {}
    for host, launch in launches_of(ctx.model, fn.name):
        if launch.block_value is None:
            continue
        threads = math.prod(launch.block_value)
        sizes.setdefault((threads, launch.smem_value), []).append((host, launch))
    if not sizes and bounds and bounds[0].strip().isdigit():
        sizes[(int(bounds[0]), 0)] = []
    worst = None
    for (threads, dyn), sites in sizes.items():
        if threads <= 0 or threads > 1024:
            continue
        occ = occupancy(ctx.target_sm, threads, static, dyn, min_blocks)
        granular = occ.limiter in ("threads", "blocks") and occ.fraction < 1
        flagged = occ.fraction <= threshold or granular or threads % 32
        if flagged and (worst is None or occ.fraction < worst[0].fraction):
            worst = (occ, sites)
    if worst is None:
        return
    occ, sites = worst
    partial = f"; the last warp of each block has only {occ.threads % 32} active threads" if occ.threads % 32 else ""
    yield Region(
        AnchorKind.KERNEL,
        fn,
        fn.name_span,
        f"occupancy:{fn.name}:{occ.threads}",
        {
            "kernel": fn.name,
            "occupancy": occ,
            "threads": occ.threads,
            "blocks": occ.blocks,
            "warps": occ.warps,
            "max_warps": occ.max_warps,
            "percent": round(100 * occ.fraction),
            "detail": occ.detail + partial,
            "sm": sm_limits(ctx.target_sm)[0],
            "_related": tuple(
                Related(f"launched with {occ.threads} threads per block here", host.span(launch.span))
                for host, launch in sites[:5]
                if not is_spec_launch(launch)
            ),
        },
    )
