"""Plain values shared by the verification gate and its worker processes.

The worker process (see `warpwise.verify.worker`) imports this module and nothing else of warpwise, so that a
crash, a hang or a sticky CUDA error in user code can only take down a process that holds no editor state. For
the same reason everything here is a frozen dataclass made of strings, numbers, tuples and bytes, and every value
converts to and from a JSON-safe dictionary (`to_dict` / `from_dict`): jobs and results cross a pipe to the local
worker, the network to a Dask worker, and the SQLite cache, always in that form.

`Status` is the one place where the word "verified" is produced, and only `decide_status` produces it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

PROTOCOL_VERSION = 1


class Status(StrEnum):
    """The outcome of one verification job."""

    VERIFIED = "verified"
    NOT_FASTER = "not_faster"
    INCORRECT = "incorrect"
    COMPILE_FAILED = "compile_failed"
    LAUNCH_FAILED = "launch_failed"
    TIMED_OUT = "timed_out"
    CRASHED = "crashed"
    NO_GPU = "no_gpu"
    SPEC_MISSING = "spec_missing"
    REPORTED = "reported"
    """Another machine claims a result that no trusted key vouches for (`reported_status` holds the claim)."""


class Role(StrEnum):
    """What a kernel does with a buffer: reads it, writes it, or both."""

    IN = "in"
    OUT = "out"
    INOUT = "inout"


class Side(StrEnum):
    """Which kernel of a pair a value belongs to."""

    ORIGINAL = "original"
    CANDIDATE = "candidate"


DTYPE_BYTES: dict[str, int] = {
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
    "i8": 1,
    "u8": 1,
    "i16": 2,
    "u16": 2,
    "i32": 4,
    "u32": 4,
    "i64": 8,
    "u64": 8,
}
"""Element types a buffer can hold, with their size in bytes."""

FLOAT_DTYPES = frozenset({"f16", "bf16", "f32", "f64"})

TOLERANCES: dict[str, tuple[float, float]] = {
    "f64": (1e-9, 1e-12),
    "f32": (1e-4, 1e-5),
    "f16": (1e-2, 1e-3),
    "bf16": (2e-2, 1e-2),
}
"""Default (rtol, atol) per float dtype: an element passes when |got - want| <= atol + rtol * |want|.

float32 allows for reassociated sums (a tiled reduction adds in another order than a naive loop) and for fused
multiply-adds; float16 and bfloat16 allow for their 11 and 8 significant bits. Integer outputs must match exactly.
"""


def tolerances_for(
    options: Options, spec_tolerances: tuple[tuple[str, float, float], ...] = ()
) -> dict[str, tuple[float, float]]:
    """Return (rtol, atol) per float dtype for one job: defaults, the options' float32 tolerance, then the spec's.

    `options.tolerance` sets float32 and loosens float16 and bfloat16 where it is wider than their defaults (they
    never get stricter than their precision allows); float64 keeps its default. A problem file's tolerances win.
    """
    table = dict(TOLERANCES)
    if options.tolerance is not None:
        rtol, atol = options.tolerance
        table["f32"] = (rtol, atol)
        for dtype in ("f16", "bf16"):
            r, a = TOLERANCES[dtype]
            table[dtype] = (max(r, rtol), max(a, atol))
    table.update({d: (r, a) for d, r, a in spec_tolerances})
    return table


SCALAR_CTYPES = frozenset(
    {"int", "unsigned", "unsigned int", "long", "long long", "unsigned long", "unsigned long long", "size_t"}
    | {"int32_t", "uint32_t", "int64_t", "uint64_t", "short", "unsigned short", "char", "unsigned char", "bool"}
    | {"float", "double"}
)


def _to_jsonable(value: Any) -> Any:
    """Return a JSON-safe form of a dataclass field value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, bytes):
        return {"__b64__": base64.b64encode(value).decode("ascii")}
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, tuple | list):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    return value


class Plain:
    """Mixin: conversion of a frozen dataclass to and from JSON-safe dictionaries."""

    def to_dict(self) -> dict[str, Any]:
        """Return this value as a JSON-safe dictionary."""
        return _to_jsonable(self)

    def to_json(self) -> str:
        """Return this value as canonical JSON (sorted keys), suitable for hashing."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Rebuild a value from `to_dict`'s output (unknown keys are ignored)."""
        return _from_jsonable(cls, data)


def _from_jsonable(cls: Any, data: Any) -> Any:
    """Rebuild a dataclass (recursively) from a JSON-safe dictionary."""
    kwargs: dict[str, Any] = {}
    hints = _field_types(cls)
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        kwargs[f.name] = _convert(hints[f.name], data[f.name])
    return cls(**kwargs)


def _field_types(cls: Any) -> dict[str, Any]:
    """Return the resolved field types of a dataclass defined in this module."""
    import typing

    return typing.get_type_hints(cls, globals())


def _convert(tp: Any, value: Any) -> Any:
    """Convert one JSON value to the annotated type."""
    import types as _types
    import typing

    if value is None:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, _types.UnionType):
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(a, value)
            except (TypeError, ValueError, KeyError):
                continue
        return value
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v) for v in value)
        return tuple(_convert(a, v) for a, v in zip(args, value, strict=False))
    if origin is dict:
        return {k: _convert(args[1], v) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _from_jsonable(tp, value)
    if isinstance(tp, type) and issubclass(tp, StrEnum):
        return tp(value)
    if tp is bytes:
        if isinstance(value, dict) and "__b64__" in value:
            return base64.b64decode(value["__b64__"])
        raise TypeError("expected base64 bytes")
    if tp is float and isinstance(value, int | float):
        return float(value)
    if tp is int and isinstance(value, bool):
        return int(value)
    return value


@dataclass(frozen=True, slots=True)
class BufferSpec(Plain):
    """A device buffer the gate allocates: element type, element count, role, and the range of random values."""

    name: str
    dtype: str
    count: int
    role: Role
    low: float = -1.0
    high: float = 1.0


@dataclass(frozen=True, slots=True)
class ArgSpec(Plain):
    """One kernel argument: a buffer (by name) or a scalar value with its C type."""

    param: str
    ctype: str
    buffer: str | None = None
    value: float | int | None = None


@dataclass(frozen=True, slots=True)
class Geometry(Plain):
    """Launch geometry: grid and block in three dimensions, and dynamic shared memory in bytes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int = 0


@dataclass(frozen=True, slots=True)
class RunSpec(Plain):
    """Everything the worker needs to run both kernels on the same inputs (a resolved `ProblemSpec`)."""

    buffers: tuple[BufferSpec, ...]
    args: tuple[ArgSpec, ...]
    original_geometry: Geometry
    candidate_geometry: Geometry
    problem_source: str | None = None
    problem_name: str | None = None
    tolerances: tuple[tuple[str, float, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Source(Plain):
    """A translation unit ready for NVRTC, the name expression of the kernel in it, and how to build it.

    `flags` are the project's `-I`/`-D`/`--std` options (both compilers take them), `host_text` the whole file
    with its project headers inlined, which nvcc builds when NVRTC cannot build `text`; `host_origin` names the
    file that `host_text` was completed with, if any (a header's includer, whose instantiations it carries), as the
    build reason shows it.
    """

    text: str
    name_expression: str
    filename: str = "kernel.cu"
    flags: tuple[str, ...] = ()
    nvrtc_flags: tuple[str, ...] = ()
    nvcc_flags: tuple[str, ...] = ()
    host_text: str = ""
    host_origin: str = ""


@dataclass(frozen=True, slots=True)
class Options(Plain):
    """Knobs of one verification job (every one has a default)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    min_reps: int = 10
    max_reps: int = 2000
    time_limit_s: float = 120.0
    sanitizer: bool = False
    profile: bool = False
    compile_only: bool = False
    arch: str | None = None
    tolerance: tuple[float, float] | None = None
    """(rtol, atol) for float32 outputs (the editor's `verification.rtol` / `atol`); None keeps `TOLERANCES`."""
    stop_below: float | None = None
    """Stop timing once the candidate is clearly slower than this speedup over the original (a search's best so
    far; the sequential sign test of `verify/worker/early_stop.py`). A result stopped early is never verified."""


@dataclass(frozen=True, slots=True)
class WorkerJob(Plain):
    """One unit of work for a worker process: build both sources, then check and time them on a spec."""

    job_id: str
    key: str
    original: Source
    candidate: Source
    spec: RunSpec | None
    options: Options = field(default_factory=Options)


@dataclass(frozen=True, slots=True)
class DeviceIdentity(Plain):
    """What a result was measured on: GPU name, driver, compiler, architecture (or compile-only)."""

    gpu: str
    driver: str
    toolkit: str
    arch: str
    compile_only: bool = False
    l2_bytes: int = 0
    sm_count: int = 0
    uuid: str = ""

    @property
    def label(self) -> str:
        """Return a short human label such as `NVIDIA H200 (sm_90, driver 13000, NVRTC 13.0)`."""
        if self.compile_only:
            return f"compile-only ({self.arch}, {self.toolkit})"
        return f"{self.gpu} ({self.arch}, driver {self.driver}, {self.toolkit})"


@dataclass(frozen=True, slots=True)
class BuildInfo(Plain):
    """The build of one kernel: success, compiler, time, resource usage and the compiler's log."""

    ok: bool
    compiler: str
    seconds: float
    log: str
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    shared_bytes: int | None = None
    stack_bytes: int | None = None
    lowered_name: str | None = None
    cached: bool = False
    builder: str = ""
    builder_reason: str = ""


@dataclass(frozen=True, slots=True)
class Mismatch(Plain):
    """The worst disagreement between the reference and the candidate on one output."""

    buffer: str
    seed: int
    max_abs_error: float
    max_rel_error: float
    bad_elements: int
    total_elements: int
    first_bad_index: int
    expected: float
    got: float
    reason: str


@dataclass(frozen=True, slots=True)
class Timing(Plain):
    """Kernel times in milliseconds from one interleaved measurement run (L2 flushed before each run)."""

    median_ms: float
    q1_ms: float
    q3_ms: float
    reps: int

    @property
    def iqr_ms(self) -> float:
        """Return the interquartile range."""
        return self.q3_ms - self.q1_ms


@dataclass(frozen=True, slots=True)
class TimingConditions(Plain):
    """The GPU's state during the kept measurement: SM clock and temperature readings, other processes, retries.

    `source` is where the readings came from (`nvml`, `nvidia-smi`, or `none` when nothing could be read);
    `other_processes` is -1 when unknown; `retried_because` names why earlier attempts were measured again.
    """

    source: str
    sm_mhz_before: float = 0.0
    sm_mhz_after: float = 0.0
    sm_mhz_min: float = 0.0
    sm_mhz_max: float = 0.0
    temp_c_before: float = 0.0
    temp_c_after: float = 0.0
    temp_c_max: float = 0.0
    other_processes: int = -1
    samples: int = 0
    attempts: int = 1
    retried_because: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True, slots=True)
class Speedup(Plain):
    """Original over candidate time, the range the two interquartile ranges allow, and the A/A noise floor.

    `noise` is how far apart two timings of the *same* original kernel came out in the same run (0.01 = 1%).
    """

    median: float
    low: float
    high: float
    noise: float = 0.0

    @property
    def clears_spread(self) -> bool:
        """Return whether the least favourable pairing of quartiles still beats the A/A noise floor."""
        return self.low > 1.0 + self.noise


def speedup_of(original: Timing, candidate: Timing, control: Timing | None = None) -> Speedup:
    """Return the speedup of the candidate over the original with its spread and noise floor."""
    noise = 0.0
    if control is not None:
        ratio = original.median_ms / control.median_ms
        noise = max(ratio, 1 / ratio) - 1.0
    return Speedup(
        median=original.median_ms / candidate.median_ms,
        low=original.q1_ms / candidate.q3_ms,
        high=original.q3_ms / candidate.q1_ms,
        noise=noise,
    )


@dataclass(frozen=True, slots=True)
class ProfileReport(Plain):
    """Nsight Compute metrics of one kernel and the bottleneck they point to."""

    duration_ms: float | None
    dram_pct: float | None
    sm_pct: float | None
    occupancy_pct: float | None
    registers: int | None
    dram_gbps: float | None
    gflops: float | None
    bottleneck: str
    explanation: str
    metrics: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Durations(Plain):
    """Wall-clock seconds of each stage, kept apart."""

    build_s: float = 0.0
    check_s: float = 0.0
    time_s: float = 0.0
    profile_s: float = 0.0
    total_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Provenance(Plain):
    """Where and when a result was measured: machine, GPU, driver, toolkit, warpwise version, time.

    `machine_id` is a hash of the machine's id (never the raw id); `key_id` names the team key that signed the
    result (a hash of the key, never the key), empty when the worker had none.
    """

    machine_id: str
    host: str
    gpu_uuid: str
    gpu_name: str
    driver: str
    toolkit: str
    warpwise_version: str
    measured_at: float
    key_id: str = ""


@dataclass(frozen=True, slots=True)
class VerificationResult(Plain):
    """The gate's verdict on one (original, candidate, spec) on one device, with the evidence behind it."""

    status: Status
    message: str
    key: str = ""
    device: DeviceIdentity | None = None
    original_build: BuildInfo | None = None
    candidate_build: BuildInfo | None = None
    mismatch: Mismatch | None = None
    seeds_checked: tuple[int, ...] = ()
    original_timing: Timing | None = None
    candidate_timing: Timing | None = None
    control_timing: Timing | None = None
    speedup: Speedup | None = None
    conditions: TimingConditions | None = None
    original_profile: ProfileReport | None = None
    candidate_profile: ProfileReport | None = None
    sanitizer_log: str = ""
    durations: Durations = field(default_factory=Durations)
    missing: tuple[str, ...] = ()
    annotation: str = ""
    worker: str = ""
    cached: bool = False
    created: float = 0.0
    provenance: Provenance | None = None
    signature: str = ""
    reported_status: str = ""
    reported_by: str = ""
    stopped_after: int = 0
    """Timed rounds after which timing stopped because the candidate was clearly below `Options.stop_below`."""

    @property
    def verified(self) -> bool:
        """Return whether the gate measured the candidate correct and faster."""
        return self.status is Status.VERIFIED

    def with_(self, **changes: Any) -> VerificationResult:
        """Return a copy with some fields replaced."""
        return dataclasses.replace(self, **changes)


def decide_status(
    original: Timing, candidate: Timing, control: Timing | None = None, *, min_speedup: float = 1.0
) -> tuple[Status, Speedup, str]:
    """Return `verified` when the candidate is faster by more than the measured spread, else `not_faster`.

    "Faster" means: even the original's first quartile over the candidate's third quartile exceeds 1 plus the
    noise floor measured by timing the original twice (`control`). Only call this for a pair that compiled and
    matched the reference on every seed: it is the single place that produces the word "verified".
    """
    s = speedup_of(original, candidate, control)
    spread = f"spread {s.low:.2f}x..{s.high:.2f}x, A/A noise {100 * s.noise:.1f}%"
    if s.clears_spread and s.median > min_speedup:
        return Status.VERIFIED, s, f"correct on every seed and {s.median:.2f}x faster ({spread})"
    return Status.NOT_FASTER, s, f"correct, but {s.median:.2f}x ({spread}) does not clear the measured spread"


def to_json_line(obj: dict[str, Any]) -> bytes:
    """Encode one protocol message as a JSON line."""
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8")
