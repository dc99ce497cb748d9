"""Compile-only resource reports: what `ptxas -v` says about each kernel, and the occupancy that follows.

This is the profile the server can give without a GPU (and the fallback until the verification gate,
`warpwise.verify`, offers its own compile-only build): registers per thread, spill stores and loads, stack frame,
static shared and constant memory, barriers, and the theoretical occupancy at the block size the file's launch
sites use, computed with the CUDA occupancy calculator's rules for the target architecture.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")
_NVCC_MESSAGE = re.compile(r"^(?P<file>.*?)\((?P<line>\d+)\): (?P<kind>error|warning)(?: #\w+(?:-\w)?)?: (?P<msg>.*)$")


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Theoretical occupancy of one kernel at one block size."""

    block_size: int
    dynamic_smem: int
    active_blocks: int
    active_warps: int
    max_warps: int
    limiter: str

    @property
    def fraction(self) -> float:
        """Return active warps over the SM's maximum."""
        return self.active_warps / self.max_warps if self.max_warps else 0.0


@dataclass(frozen=True, slots=True)
class KernelResources:
    """What the compiler reports for one kernel (one instantiation of a template kernel)."""

    kernel: str
    symbol: str
    arch: str
    registers: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    shared_bytes: int
    constant_bytes: int
    barriers: int

    @property
    def spills(self) -> int:
        """Return bytes spilled (stores plus loads)."""
        return self.spill_stores + self.spill_loads


@dataclass(frozen=True, slots=True)
class CompilerMessage:
    """An error or warning `nvcc` printed for a line of the file."""

    line: int  # zero-based
    severity: str
    message: str


def demangle_kernel_name(symbol: str) -> str:
    """Return the unqualified function name of an Itanium-mangled symbol (or the symbol when not mangled)."""
    if not symbol.startswith("_Z"):
        return symbol
    i = 2
    nested = symbol.startswith("_ZN")
    if nested:
        i = 3
        while i < len(symbol) and symbol[i] in "rVKRO":
            i += 1
    name = symbol
    while i < len(symbol):
        m = re.match(r"\d+", symbol[i:])
        if not m:
            break
        n = int(m.group())
        i += len(m.group())
        name = symbol[i : i + n]
        i += n
        if not nested or i >= len(symbol) or symbol[i] in "IE":
            break
    return name


def parse_ptxas(output: str) -> list[KernelResources]:
    """Return one record per entry function in `ptxas -v` output."""
    out: list[KernelResources] = []
    current: dict | None = None

    def flush() -> None:
        if current is not None and "registers" in current:
            out.append(
                KernelResources(
                    kernel=demangle_kernel_name(current["symbol"]),
                    symbol=current["symbol"],
                    arch=current["arch"],
                    registers=current["registers"],
                    stack_frame=current.get("stack", 0),
                    spill_stores=current.get("spill_stores", 0),
                    spill_loads=current.get("spill_loads", 0),
                    shared_bytes=current.get("smem", 0),
                    constant_bytes=current.get("cmem", 0),
                    barriers=current.get("barriers", 0),
                )
            )

    for line in output.splitlines():
        m = _ENTRY.search(line)
        if m:
            flush()
            current = {"symbol": m.group(1), "arch": m.group(2)}
            continue
        if current is None:
            continue
        m = _PROPS.search(line)
        if m:
            current["stack"], current["spill_stores"], current["spill_loads"] = map(int, m.groups())
            continue
        m = _USED.search(line)
        if m:
            current["registers"] = int(m.group(1))
            if b := _BARRIERS.search(line):
                current["barriers"] = int(b.group(1))
            if s := _SMEM.search(line):
                current["smem"] = int(s.group(1))
            if c := _CMEM.search(line):
                current["cmem"] = int(c.group(1))
    flush()
    return out


def parse_nvcc_messages(output: str, source_name: str) -> list[CompilerMessage]:
    """Return the errors and warnings `nvcc` printed for lines of the compiled file."""
    out = []
    for line in output.splitlines():
        m = _NVCC_MESSAGE.match(line.strip())
        if m and m.group("file").endswith(source_name):
            out.append(CompilerMessage(int(m.group("line")) - 1, m.group("kind"), m.group("msg").strip()))
    return out


@dataclass(frozen=True, slots=True)
class _SmLimits:
    max_warps: int
    max_blocks: int
    regs: int
    smem: int
    reserved_smem: int
    reg_unit: int = 256
    smem_unit: int = 128
    max_threads_per_block: int = 1024


# From the CUDA Occupancy Calculator (compute capability tables of the CUDA C++ Programming Guide).
_LIMITS = {
    70: _SmLimits(64, 32, 65536, 98304, 0),
    75: _SmLimits(32, 16, 65536, 65536, 0),
    80: _SmLimits(64, 32, 65536, 167936, 1024),
    86: _SmLimits(48, 16, 65536, 102400, 1024),
    87: _SmLimits(48, 16, 65536, 167936, 1024),
    89: _SmLimits(48, 24, 65536, 102400, 1024),
    90: _SmLimits(64, 32, 65536, 233472, 1024),
}


def occupancy(res: KernelResources, block_size: int, dynamic_smem: int = 0) -> Occupancy | None:
    """Return the theoretical occupancy of a kernel at a block size (None for an unknown architecture)."""
    m = re.fullmatch(r"sm_(\d+)[a-z]?", res.arch)
    limits = _LIMITS.get(int(m.group(1))) if m else None
    if limits is None or block_size <= 0 or block_size > limits.max_threads_per_block:
        return None
    warps = math.ceil(block_size / 32)
    by_warps = limits.max_warps // warps
    by_blocks = limits.max_blocks
    if res.registers:
        regs_per_warp = math.ceil(res.registers * 32 / limits.reg_unit) * limits.reg_unit
        by_regs = (limits.regs // regs_per_warp) // warps
    else:
        by_regs = by_blocks
    smem = res.shared_bytes + dynamic_smem
    if smem:
        per_block = math.ceil((smem + limits.reserved_smem) / limits.smem_unit) * limits.smem_unit
        by_smem = limits.smem // per_block
    else:
        by_smem = by_blocks
    candidates = {"warps per SM": by_warps, "blocks per SM": by_blocks, "registers": by_regs, "shared memory": by_smem}
    blocks = min(candidates.values())
    order = list(candidates)
    limiter = min(order, key=lambda k: (candidates[k], order.index(k)))
    return Occupancy(block_size, dynamic_smem, blocks, blocks * warps, limits.max_warps, limiter)
