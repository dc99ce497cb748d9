"""Features of a (card, region) pair: what the card is, where it binds, the kernel around it, and the GPU.

Everything here is re-derived from source text by the analyzers (`warpwise.analyzers`) and the card engine
(`warpwise.skills.engine`), so a training example and a prediction in the editor see the same numbers. Features
that need more than the source (the compiler's register count, the launch geometry a problem file uses) are
passed in as `extra` when a report exists and are `nan` otherwise; the model fills a missing value with its
training median and says so in its explanation.

Every feature has a phrase (`WORDS`) used to explain predictions, so that the top reasons behind a prediction read
as sentences: "the kernel's global accesses are mostly strided", not `k_frac_strided`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from warpwise.analyzers.model import AccessKind, AccessPattern, FileModel, Function, MemorySpace
from warpwise.skills.regions import VerdictStatus

NAN = float("nan")

# A loop whose trip count the analyzers cannot read is counted as this many iterations when weighting work.
UNKNOWN_TRIP = 16
# A math library call (`expf`, `sqrtf`, ...) is counted as this many arithmetic operations.
MATH_CALL_OPS = 4

_DTYPES = {
    "float": "f32",
    "double": "f64",
    "__half": "f16",
    "half": "f16",
    "__nv_bfloat16": "f16",
    "int": "int",
    "unsigned": "int",
    "unsigned int": "int",
    "long long": "int",
    "int64_t": "int",
    "char": "u8",
    "unsigned char": "u8",
    "uint8_t": "u8",
}
DTYPES = ("f32", "f16", "f64", "int", "u8")

# The GPU features. `arch` is the SM version as a number (90 for sm_90).
GPU_FEATURES = ("g_arch", "g_copy_tbps", "g_fp32_tflops", "g_sm_count", "g_l2_mib")

KERNEL_FEATURES = (
    "k_global_accesses",
    "k_frac_contiguous",
    "k_frac_strided",
    "k_frac_uniform",
    "k_frac_indirect",
    "k_min_width",
    "k_mean_width",
    "k_vector_access",
    "k_atomics",
    "k_loops",
    "k_max_loop_depth",
    "k_thread_loop",
    "k_const_trip_loop",
    "k_math_calls",
    "k_syncs",
    "k_warp_ops",
    "k_shared_log2",
    "k_flops_per_byte_log2",
    "k_balance_log2",
    "k_traffic_factor_log2",
    "k_untiled_loop_reads",
    "k_restrict_frac",
    *(f"k_dtype_{d}" for d in DTYPES),
    "k_block_log2",
    "k_threads_log2",
    "k_registers",
    "k_spills",
)

REGION_FEATURES = (
    "r_regions",
    "r_frac_holds",
    "r_unknown_soundness",
    "r_unknown_benefit",
    "r_benefit_holds",
    "r_in_loop",
    "r_safe",
)

NUMERIC_FEATURES = (*REGION_FEATURES, *KERNEL_FEATURES, *GPU_FEATURES)

WORDS: dict[str, str] = {
    "k_global_accesses": "the number of global-memory accesses in the kernel",
    "k_frac_contiguous": "the share of global accesses that are contiguous across a warp",
    "k_frac_strided": "the share of global accesses that are strided across a warp",
    "k_frac_uniform": "the share of global accesses that are uniform (the same address for every lane)",
    "k_frac_indirect": "the share of global accesses that are indirect (data-dependent addresses)",
    "k_min_width": "the narrowest global access width in bytes",
    "k_mean_width": "the mean global access width in bytes",
    "k_vector_access": "the kernel already uses vector loads or stores",
    "k_atomics": "the number of atomic operations in the kernel",
    "k_loops": "the number of loops in the kernel",
    "k_max_loop_depth": "the deepest loop nesting",
    "k_thread_loop": "a loop whose bounds depend on the thread (a per-thread walk over data)",
    "k_const_trip_loop": "a loop with a constant trip count",
    "k_math_calls": "the number of math library calls",
    "k_syncs": "the number of `__syncthreads()` barriers",
    "k_warp_ops": "the number of warp-level operations (shuffles, votes)",
    "k_shared_log2": "the static shared memory the kernel declares",
    "k_flops_per_byte_log2": "the estimated arithmetic per byte of global traffic",
    "k_balance_log2": "the arithmetic per byte relative to the GPU's FLOP-rate-to-bandwidth balance",
    "k_traffic_factor_log2": "how many times the DRAM sectors of a coalesced layout the worst strided access moves",
    "k_untiled_loop_reads": "global data re-read in a loop with no shared-memory tile (an untiled kernel)",
    "k_restrict_frac": "the share of pointer parameters already `__restrict__`",
    "k_dtype_f32": "the data are 32-bit floats",
    "k_dtype_f16": "the data are 16-bit floats",
    "k_dtype_f64": "the data are 64-bit floats",
    "k_dtype_int": "the data are integers",
    "k_dtype_u8": "the data are bytes",
    "k_block_log2": "the block size of the launch",
    "k_threads_log2": "the total number of threads launched",
    "k_registers": "the registers per thread in the compiler's report",
    "k_spills": "the register spills in the compiler's report",
    "r_regions": "how many places in the kernel the card binds to",
    "r_frac_holds": "the share of the card's preconditions proven to hold here",
    "r_unknown_soundness": "soundness preconditions that could not be proven",
    "r_unknown_benefit": "benefit preconditions that could not be decided",
    "r_benefit_holds": "benefit preconditions proven to hold",
    "r_in_loop": "the region lies inside a loop",
    "r_safe": "the fix is safe (never changes results)",
    "g_arch": "the GPU architecture",
    "g_copy_tbps": "the GPU's measured copy bandwidth",
    "g_fp32_tflops": "the GPU's measured FP32 rate",
    "g_sm_count": "the GPU's number of SMs",
    "g_l2_mib": "the GPU's L2 size",
}


@dataclass(frozen=True, slots=True)
class GpuProfile:
    """What the ranking knows about a GPU: its architecture and its measured peaks."""

    name: str
    arch: str
    copy_gbps: float
    fp32_tflops: float
    sm_count: int
    l2_bytes: int
    source: str = ""

    def features(self) -> dict[str, float]:
        """Return the GPU features."""
        m = re.search(r"(\d+)", self.arch)
        return {
            "g_arch": float(m.group(1)) if m else NAN,
            "g_copy_tbps": self.copy_gbps / 1000.0,
            "g_fp32_tflops": self.fp32_tflops,
            "g_sm_count": float(self.sm_count),
            "g_l2_mib": self.l2_bytes / 2**20,
        }

    @property
    def balance(self) -> float:
        """Return the FLOPs per byte at which the GPU turns from bandwidth- to compute-bound."""
        return self.fp32_tflops * 1e12 / (self.copy_gbps * 1e9)

    def to_dict(self) -> dict[str, Any]:
        """Return the profile as JSON data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GpuProfile:
        """Return a profile from JSON data."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _dtype(type_name: str | None) -> str | None:
    if not type_name:
        return None
    t = type_name.replace("const", "").replace("*", "").replace("__restrict__", "").strip()
    t = re.sub(r"\s+", " ", t)
    return _DTYPES.get(t)


def _loop_weight(fn: Function, loops: Iterable[int]) -> float:
    w = 1.0
    for lid in loops:
        if 0 <= lid < len(fn.loops):
            trip = fn.loops[lid].trip_count
            w *= trip if trip and trip > 0 else UNKNOWN_TRIP
    return w


def _loops_at(fn: Function, rel: int) -> list[int]:
    """Return the ids of the loops whose body holds a function-relative offset."""
    return [lp.id for lp in fn.loops if lp.body_span[0] <= rel < lp.body_span[1]]


_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)
_OPERATOR = re.compile(rb"(?<![+\-*/<>=!&|^%])([+\-*/])(?![+\-*/>=])")


def _arithmetic_ops(model: FileModel, fn: Function) -> float:
    """Return the loop-weighted count of arithmetic operators outside index expressions, plus math calls."""
    if fn.body_span is None:
        return 0.0
    start, end = fn.span(fn.body_span)
    body = model.text[start:end]
    # Blank out comments and index expressions (they are address arithmetic, not work on data), keeping offsets.
    buf = bytearray(_COMMENT.sub(lambda m: b" " * len(m.group(0)), body))
    for a in fn.accesses:
        lo, hi = fn.span(a.index_span)
        lo, hi = max(lo - start, 0), min(hi - start, len(buf))
        if lo < hi:
            buf[lo:hi] = b" " * (hi - lo)
    ops = 0.0
    offset = fn.body_span[0]
    for m in _OPERATOR.finditer(bytes(buf)):
        ops += _loop_weight(fn, _loops_at(fn, offset + m.start()))
    for c in fn.calls:
        if c.category == "math":
            ops += MATH_CALL_OPS * _loop_weight(fn, c.loops)
    return ops


def _global_bytes(fn: Function) -> float:
    """Return the loop-weighted bytes of global traffic per thread (an atomic counts as a read and a write)."""
    total = 0.0
    for a in fn.accesses:
        if a.space is not MemorySpace.GLOBAL or a.kind is AccessKind.ADDRESS:
            continue
        width = a.width or 4
        times = 2 if a.kind in (AccessKind.ATOMIC, AccessKind.READ_WRITE) else 1
        total += width * times * _loop_weight(fn, a.loops)
    return total


def flops_per_byte(model: FileModel, fn: Function) -> float:
    """Return the estimated arithmetic per byte of global traffic of a kernel (per thread, loop-weighted)."""
    nbytes = _global_bytes(fn)
    return _arithmetic_ops(model, fn) / nbytes if nbytes > 0 else NAN


def traffic_factor(model: FileModel, fn: Function) -> float:
    """Return the largest factor by which one of the kernel's strided global accesses multiplies the DRAM sectors a
    coalesced layout would move (1 when no access is strided), from `warpwise.skills.traffic`."""
    from warpwise.skills.traffic import access_traffic

    worst = 1.0
    for a in fn.accesses:
        if a.space is not MemorySpace.GLOBAL or a.pattern is not AccessPattern.STRIDED:
            continue
        t = access_traffic(model, fn.name, fn.base + a.span[0])
        if t is not None and math.isfinite(t.factor):
            worst = max(worst, t.factor)
    return worst


def untiled_loop_reads(fn: Function) -> bool:
    """Return whether the kernel reads global memory at the index of a loop that walks data the same way in every
    thread (not a grid- or block-stride loop), and stages nothing in shared memory: each thread re-reads what its
    neighbours read too, the shape of a naive matrix product or a row per thread."""
    if fn.shared:
        return False
    # What a loop advances: its header's variable, or whatever its body assigns (a `while` loop's counter).
    walks = {
        lp.id: ({lp.var} if lp.var else set(lp.assigned))
        for lp in fn.loops
        if not lp.thread_dependent and (lp.trip_count or 0) != 1
    }
    for a in fn.accesses:
        if a.space is not MemorySpace.GLOBAL or a.kind is AccessKind.WRITE or a.kind is AccessKind.ADDRESS:
            continue
        if any(lid in walks and walks[lid] & a.index_names for lid in a.loops):
            return True
    return False


def _log2(x: float | None) -> float:
    return math.log2(x) if x is not None and x > 0 and math.isfinite(x) else NAN


def _launch(model: FileModel, fn: Function) -> tuple[float, float]:
    """Return (block threads, total threads) of the first launch in the file with known numbers."""
    for _, launch in model.launches_of(fn.name):
        if launch.block_value:
            block = math.prod(launch.block_value)
            grid = math.prod(launch.grid_value) if launch.grid_value else None
            return float(block), float(block * grid) if grid else NAN
    return NAN, NAN


def kernel_features(
    model: FileModel, fn: Function, gpu: GpuProfile | None = None, extra: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Return the features of one kernel: accesses, loops, calls, shared memory, data types, launch, compiler."""
    glob = [a for a in fn.accesses if a.space is MemorySpace.GLOBAL and a.kind is not AccessKind.ADDRESS]
    n = len(glob)

    def frac(pattern: AccessPattern) -> float:
        return sum(a.pattern is pattern for a in glob) / n if n else 0.0

    widths = [a.width for a in glob if a.width]
    dtypes: dict[str, int] = {}
    for a in glob:
        d = _dtype(a.element_type)
        if d is not None:
            dtypes[d] = dtypes.get(d, 0) + 1
    main = max(sorted(dtypes), key=lambda d: dtypes[d]) if dtypes else None
    pointers = [p for p in fn.params if p.pointer_depth > 0]
    smem = 0
    for s in fn.shared:
        if s.element_bytes and s.dim_values and all(v for v in s.dim_values):
            smem += s.element_bytes * math.prod(v for v in s.dim_values if v)
    fpb = flops_per_byte(model, fn)
    block, threads = _launch(model, fn)
    out = {
        "k_global_accesses": float(n),
        "k_frac_contiguous": frac(AccessPattern.CONTIGUOUS),
        "k_frac_strided": frac(AccessPattern.STRIDED),
        "k_frac_uniform": frac(AccessPattern.UNIFORM),
        "k_frac_indirect": frac(AccessPattern.INDIRECT),
        "k_min_width": float(min(widths)) if widths else NAN,
        "k_mean_width": sum(widths) / len(widths) if widths else NAN,
        "k_vector_access": float(any(a.vector_cast for a in glob)),
        "k_atomics": float(sum(a.kind is AccessKind.ATOMIC for a in fn.accesses) + len(fn.calls_of("atomic"))),
        "k_loops": float(len(fn.loops)),
        "k_max_loop_depth": float(max((lp.depth for lp in fn.loops), default=-1) + 1),
        "k_thread_loop": float(any(lp.thread_dependent for lp in fn.loops)),
        "k_const_trip_loop": float(any(lp.trip_count for lp in fn.loops)),
        "k_math_calls": float(len(fn.calls_of("math"))),
        "k_syncs": float(len(fn.calls_of("sync"))),
        "k_warp_ops": float(len(fn.calls_of("warp"))),
        "k_shared_log2": math.log2(1 + smem),
        "k_flops_per_byte_log2": _log2(fpb + 1 / 64) if math.isfinite(fpb) else NAN,
        "k_balance_log2": _log2((fpb + 1 / 64) / gpu.balance) if gpu is not None and math.isfinite(fpb) else NAN,
        "k_traffic_factor_log2": math.log2(traffic_factor(model, fn)),
        "k_untiled_loop_reads": float(untiled_loop_reads(fn)),
        "k_restrict_frac": sum(p.is_restrict for p in pointers) / len(pointers) if pointers else 0.0,
        **{f"k_dtype_{d}": float(main == d) for d in DTYPES},
        "k_block_log2": _log2(block),
        "k_threads_log2": _log2(threads),
        "k_registers": NAN,
        "k_spills": NAN,
    }
    for k, v in (extra or {}).items():
        if k in out and v is not None and (math.isnan(out[k]) or k in ("k_registers", "k_spills")):
            out[k] = float(v)
    return out


def region_features(matches: Iterable[Any]) -> dict[str, float]:
    """Return the features of the regions one card binds to in one kernel (engine `Match`es)."""
    ms = list(matches)
    verdicts = [v for m in ms for v in m.verdicts]
    holds = sum(v.status is VerdictStatus.HOLDS for v in verdicts)
    in_loop = False
    for m in ms:
        fn = m.region.function
        lo = m.region.span[0]
        if _loops_at(fn, lo) or m.region.facts.get("in_loop") or m.region.kind.value == "loop":
            in_loop = True
    return {
        "r_regions": float(len(ms)),
        "r_frac_holds": holds / len(verdicts) if verdicts else 1.0,
        "r_unknown_soundness": float(
            sum(v.status is VerdictStatus.UNKNOWN and v.kind == "soundness" for v in verdicts)
        ),
        "r_unknown_benefit": float(sum(v.status is VerdictStatus.UNKNOWN and v.kind == "benefit" for v in verdicts)),
        "r_benefit_holds": float(sum(v.status is VerdictStatus.HOLDS and v.kind == "benefit" for v in verdicts)),
        "r_in_loop": float(in_loop),
        "r_safe": float(all(m.applicability.value == "safe" for m in ms)) if ms else 0.0,
    }


@dataclass(frozen=True, slots=True)
class PairFeatures:
    """The features of one (card, kernel) pair: the card's identity and the numbers the model reads."""

    card: str
    anchor: str
    numeric: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """Return JSON data (`nan` becomes None)."""
        return {
            "card": self.card,
            "anchor": self.anchor,
            "numeric": {k: (None if math.isnan(v) else round(v, 6)) for k, v in self.numeric.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PairFeatures:
        """Return features from JSON data."""
        numeric = {k: (NAN if v is None else float(v)) for k, v in d["numeric"].items()}
        return cls(str(d["card"]), str(d["anchor"]), numeric)


def pair_features(
    model: FileModel,
    fn: Function,
    matches: Iterable[Any],
    gpu: GpuProfile | None = None,
    extra: Mapping[str, float] | None = None,
    kernel: Mapping[str, float] | None = None,
) -> PairFeatures:
    """Return the features of one card's matches in one kernel (`kernel`: its `kernel_features`, if computed)."""
    ms = list(matches)
    if not ms:
        raise ValueError("pair_features needs at least one match of the card")
    card = ms[0].card
    numeric = {
        **region_features(ms),
        **(kernel if kernel is not None else kernel_features(model, fn, gpu, extra)),
        **(gpu.features() if gpu is not None else dict.fromkeys(GPU_FEATURES, NAN)),
    }
    # Rounded as the training set file stores them, so a model trained on a fresh build and one trained on the
    # file are the same model.
    numeric = {k: (v if math.isnan(v) else round(v, 6)) for k, v in numeric.items()}
    return PairFeatures(card.skill_id, card.header.anchor.kind.value, numeric)
