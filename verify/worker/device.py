"""Running, checking and timing kernels on the GPU, inside the worker process.

Kernels are loaded from cubins with the CUDA driver API (`cuModuleLoadData`, `cuLaunchKernel`) in PyTorch's
primary context, and every buffer comes from PyTorch's allocator, so random inputs, poisoning, comparison and
the L2 flush are PyTorch operations on the same stream as the launches.

The check treats the candidate as an adversary:
- each of several seeds draws fresh random inputs; both kernels start from byte-identical copies;
- every output is *poisoned* before every run (a NaN with a distinctive payload for floats, a byte pattern for
  integers; a different poison for the original and the candidate), so an output that a kernel leaves unwritten
  is caught, and a result left in memory by an earlier run cannot be returned;
- every buffer sits between two canary regions that are checked after each run (out-of-bounds writes);
- inputs are compared byte for byte with their pristine copy after each run (mutated inputs);
- outputs are copied out and compared after a synchronisation of the *launch stream* only, then the device is
  synchronised to surface asynchronous faults;
- shapes and element types are compared before values; values use per-dtype tolerances (`types.TOLERANCES`),
  integers must match exactly.

Timing follows triton's `do_bench`: CUDA events around each launch, warm-up and repetitions chosen from a time
budget, the L2 cache flushed (a buffer twice its size is overwritten) before every run, original and candidate
interleaved in one measurement run, median and quartiles.

This module imports only the standard library, numpy, torch, the CUDA bindings and `warpwise.verify.types`.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch
from cuda.bindings import driver

from warpwise.verify.types import (
    DTYPE_BYTES,
    FLOAT_DTYPES,
    TOLERANCES,
    ArgSpec,
    BufferSpec,
    DeviceIdentity,
    Geometry,
    Mismatch,
    Role,
    Side,
    Timing,
)
from warpwise.verify.worker import early_stop

CANARY_BYTES = 64 * 1024
ESTIMATE_LONG_MS = 20.0
"""A kernel whose first timed run takes this long is estimated from that one run (short ones from five)."""
CANARY_BYTE = 0xCB

_TORCH_DTYPES: dict[str, torch.dtype] = {
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
    "i8": torch.int8,
    "u8": torch.uint8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
}
_BITS_DTYPES: dict[int, torch.dtype] = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

# Poison bit patterns: NaNs with distinctive payloads for floats, byte patterns for integers. Index 0 poisons
# the original's outputs, index 1 the candidate's, so "both left it unwritten" can be told from "the candidate did".
# Index 2 is the candidate's second poison: a kernel may legitimately write a value equal to its poison (one byte
# in 256 of a uint8 output does), so an element that holds the poison *and* the expected value is run again
# under the second poison before it is called unwritten (`poison_lookalikes`).
_POISON_FLOAT: dict[str, tuple[int, int, int]] = {
    "f16": (0x7E5A, 0x7E3C, 0x7E1E),
    "bf16": (0x7FDA, 0x7FBC, 0x7F9E),
    "f32": (0x7FC0DEAD, 0x7FA0BEEF, 0x7F90F00D),
    "f64": (0x7FF8DEADDEADDEAD, 0x7FF4BEEFBEEFBEEF, 0x7FF2F00DF00DF00D),
}
_POISON_INT: dict[int, tuple[int, int, int]] = {
    1: (0xA5, 0x5A, 0xC3),
    2: (0xA5A5, 0x5A5A, 0xC3C3),
    4: (0xA5A5A5A5, 0x5A5A5A5A, 0xC3C3C3C3),
    8: (0xA5A5A5A5A5A5A5A5, 0x5A5A5A5A5A5A5A5A, 0xC3C3C3C3C3C3C3C3),
}
# Which poison a side's run uses.
ORIGINAL_POISON = 0
CANDIDATE_POISON = 1
SECOND_CANDIDATE_POISON = 2


def poison_bits(dtype: str, which: int) -> int:
    """Return the poison of one dtype as a signed integer of the element width (0: original, 1: candidate,
    2: the candidate's second poison)."""
    width = DTYPE_BYTES[dtype]
    pattern = _POISON_FLOAT[dtype][which] if dtype in _POISON_FLOAT else _POISON_INT[width][which]
    # One-byte elements are compared as uint8, wider ones as signed integers of their width.
    return pattern if width == 1 else _signed(pattern, width)


_CTYPES: dict[str, Any] = {
    "int": ctypes.c_int32,
    "int32_t": ctypes.c_int32,
    "unsigned": ctypes.c_uint32,
    "unsigned int": ctypes.c_uint32,
    "uint32_t": ctypes.c_uint32,
    "long": ctypes.c_int64,
    "long long": ctypes.c_int64,
    "int64_t": ctypes.c_int64,
    "unsigned long": ctypes.c_uint64,
    "unsigned long long": ctypes.c_uint64,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_uint64,
    "short": ctypes.c_int16,
    "unsigned short": ctypes.c_uint16,
    "char": ctypes.c_int8,
    "unsigned char": ctypes.c_uint8,
    "bool": ctypes.c_bool,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
}

STICKY_ERRORS = frozenset(
    {
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_ECC_UNCORRECTABLE",
        "CUDA_ERROR_UNKNOWN",
    }
)


class CudaFault(Exception):
    """A CUDA error while launching or running a kernel; `sticky` means the context is lost."""

    def __init__(self, side: str, what: str, error: str, detail: str = "") -> None:
        self.side = side
        self.what = what
        self.error = error
        self.sticky = error in STICKY_ERRORS or "illegal" in detail.lower() or "misaligned" in detail.lower()
        super().__init__(f"{side}: {what} failed with {error}{': ' + detail if detail else ''}")


class SpecError(Exception):
    """The problem spec cannot be run as written (wrong sizes, a problem file that raises, ...)."""


def _err_name(err: Any) -> str:
    """Return the symbolic name of a driver error code."""
    try:
        return str(driver.CUresult(int(err)).name)
    except (ValueError, TypeError):
        return f"CUDA error {int(err)}"


def _check(err: Any, side: str, what: str) -> None:
    """Raise `CudaFault` when a driver call did not succeed."""
    if int(err) != 0:
        raise CudaFault(side, what, _err_name(err))


@dataclass
class Kernel:
    """A loaded kernel function and the module that holds it."""

    module: Any
    function: Any
    name: str


class Device:
    """The GPU this worker drives: PyTorch's primary context, loaded modules, an L2 flush buffer."""

    def __init__(self) -> None:
        torch.cuda.init()
        self.torch_device = torch.device("cuda", torch.cuda.current_device())
        torch.empty(1, device=self.torch_device)
        (err,) = driver.cuInit(0)
        _check(err, "device", "cuInit")
        err, self.cu_device = driver.cuCtxGetDevice()
        _check(err, "device", "cuCtxGetDevice")
        props = torch.cuda.get_device_properties(self.torch_device)
        self.name = props.name
        self.uuid = str(getattr(props, "uuid", "") or "")
        self.arch = f"sm_{props.major}{props.minor}"
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
        self.sm_count = int(props.multi_processor_count)
        err, drv = driver.cuDriverGetVersion()
        self.driver_version = str(drv)
        self._modules: OrderedDict[str, Kernel] = OrderedDict()
        self._flush = torch.empty(max(2 * self.l2_bytes, 64 * 2**20), dtype=torch.uint8, device=self.torch_device)

    def identity(self, toolkit: str) -> DeviceIdentity:
        """Return the identity results measured here are tagged with."""
        return DeviceIdentity(
            gpu=self.name,
            driver=self.driver_version,
            toolkit=toolkit,
            arch=self.arch,
            l2_bytes=self.l2_bytes,
            sm_count=self.sm_count,
            uuid=self.uuid,
        )

    @property
    def stream(self) -> Any:
        """Return the driver handle of PyTorch's current stream."""
        return driver.CUstream(torch.cuda.current_stream(self.torch_device).cuda_stream)

    def load(self, cubin: bytes, lowered_name: str, side: str) -> Kernel:
        """Load a cubin (once per distinct cubin) and return its kernel function."""
        key = hashlib.sha256(cubin).hexdigest() + lowered_name
        if key in self._modules:
            self._modules.move_to_end(key)
            return self._modules[key]
        image = ctypes.create_string_buffer(cubin, len(cubin))
        err, module = driver.cuModuleLoadData(ctypes.addressof(image))
        _check(err, side, "cuModuleLoadData")
        err, fn = driver.cuModuleGetFunction(module, lowered_name.encode())
        _check(err, side, "cuModuleGetFunction")
        kernel = Kernel(module, fn, lowered_name)
        self._modules[key] = kernel
        while len(self._modules) > 64:
            _, old = self._modules.popitem(last=False)
            driver.cuModuleUnload(old.module)
        return kernel

    def attributes(self, kernel: Kernel) -> dict[str, int]:
        """Return the driver's record of a loaded kernel: registers per thread, static shared and local bytes."""
        attr = driver.CUfunction_attribute
        out: dict[str, int] = {}
        for key, which in (
            ("registers", attr.CU_FUNC_ATTRIBUTE_NUM_REGS),
            ("shared_bytes", attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            ("stack_bytes", attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        ):
            err, value = driver.cuFuncGetAttribute(which, kernel.function)
            if int(err) == 0:
                out[key] = int(value)
        return out

    def set_smem_limit(self, kernel: Kernel, smem: int, side: str) -> None:
        """Allow more than 48 KiB of dynamic shared memory when a launch asks for it."""
        if smem <= 48 * 1024:
            return
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        (err,) = driver.cuFuncSetAttribute(kernel.function, attr, smem)
        _check(err, side, "cuFuncSetAttribute(max dynamic shared memory)")

    def launch(self, kernel: Kernel, geometry: Geometry, values: list[Any], side: str) -> None:
        """Launch a kernel on the current stream with already-packed ctypes argument values."""
        self.set_smem_limit(kernel, geometry.smem, side)
        ptrs = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
        gx, gy, gz = geometry.grid
        bx, by, bz = geometry.block
        (err,) = driver.cuLaunchKernel(
            kernel.function, gx, gy, gz, bx, by, bz, geometry.smem, self.stream, ctypes.addressof(ptrs), 0
        )
        _check(err, side, "cuLaunchKernel")

    def sync_stream(self, side: str) -> None:
        """Wait for the launch stream and raise the fault it hit, if any."""
        (err,) = driver.cuStreamSynchronize(self.stream)
        _check(err, side, "the kernel")

    def sync_device(self, side: str) -> None:
        """Wait for all work on the device (catches faults of work on other streams)."""
        (err,) = driver.cuCtxSynchronize()
        _check(err, side, "the kernel")

    def flush_l2(self) -> None:
        """Overwrite a buffer twice the L2's size so the next run starts with a cold cache."""
        self._flush.fill_(0)


@dataclass
class Buffer:
    """One device buffer between two canary regions."""

    spec: BufferSpec
    raw: torch.Tensor
    nbytes: int

    @property
    def width(self) -> int:
        """Return the element size in bytes."""
        return DTYPE_BYTES[self.spec.dtype]

    @property
    def data(self) -> torch.Tensor:
        """Return the payload bytes (without canaries)."""
        return self.raw[CANARY_BYTES : CANARY_BYTES + self.nbytes]

    @property
    def bits(self) -> torch.Tensor:
        """Return the payload as signed integers of the element width (for bitwise comparison)."""
        return self.data.view(_BITS_DTYPES[self.width])

    @property
    def address(self) -> int:
        """Return the device address of the first element."""
        return int(self.raw.data_ptr()) + CANARY_BYTES

    def canaries_intact(self) -> bool:
        """Return whether both canary regions still hold the canary byte."""
        head = self.raw[:CANARY_BYTES]
        tail = self.raw[CANARY_BYTES + self.nbytes :]
        return bool((head == CANARY_BYTE).all().item()) and bool((tail == CANARY_BYTE).all().item())

    def poison(self, which: int) -> None:
        """Fill the payload with the poison pattern (0: original, 1: candidate, 2: the candidate's second)."""
        self.bits.fill_(poison_bits(self.spec.dtype, which))


def _signed(value: int, width: int) -> int:
    """Return an unsigned bit pattern as the signed integer of that width."""
    bits = 8 * width
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def allocate(spec: BufferSpec, device: torch.device) -> Buffer:
    """Allocate one buffer with canary regions on both sides."""
    nbytes = spec.count * DTYPE_BYTES[spec.dtype]
    raw = torch.full((CANARY_BYTES * 2 + nbytes,), CANARY_BYTE, dtype=torch.uint8, device=device)
    return Buffer(spec, raw, nbytes)


def fill_random(buf: Buffer, seed: int, device: torch.device) -> None:
    """Fill a buffer's payload with seeded random values in its range."""
    spec = buf.spec
    gen = torch.Generator(device=device)
    gen.manual_seed(seed * 1_000_003 + int(hashlib.sha256(spec.name.encode()).hexdigest()[:8], 16))
    n = spec.count
    if n == 0:
        return
    if spec.dtype in FLOAT_DTYPES:
        vals = torch.rand(n, generator=gen, device=device, dtype=torch.float64)
        vals = vals * (spec.high - spec.low) + spec.low
        buf.data.view(_TORCH_DTYPES[spec.dtype]).copy_(vals.to(_TORCH_DTYPES[spec.dtype]))
        return
    lo, hi = math.ceil(spec.low), math.floor(spec.high)
    vals = torch.randint(lo, hi + 1, (n,), generator=gen, device=device, dtype=torch.int64)
    low_bytes = vals.view(torch.uint8).view(n, 8)[:, : buf.width].contiguous().view(-1)
    buf.data.copy_(low_bytes)


def pack_args(args: tuple[ArgSpec, ...], buffers: dict[str, Buffer], scalars: dict[str, Any]) -> list[Any]:
    """Return ctypes values for the kernel's parameters in order."""
    values: list[Any] = []
    for a in args:
        if a.buffer is not None:
            values.append(ctypes.c_void_p(buffers[a.buffer].address))
            continue
        ctype = _CTYPES.get(a.ctype)
        if ctype is None:
            raise SpecError(f"parameter `{a.param}` has type `{a.ctype}`, which the gate cannot pass")
        value = scalars.get(a.param, a.value)
        if value is None:
            raise SpecError(f"no value for the scalar parameter `{a.param}`")
        values.append(ctype(float(value) if a.ctype in ("float", "double") else int(value)))
    return values


@dataclass
class Outcome:
    """What one run of one kernel left behind, copied off the device for comparison."""

    outputs: dict[str, torch.Tensor]
    problems: list[str]


def run_once(
    device: Device,
    kernel: Kernel,
    geometry: Geometry,
    args: tuple[ArgSpec, ...],
    buffers: dict[str, Buffer],
    pristine: dict[str, torch.Tensor],
    scalars: dict[str, Any],
    side: Side,
    poison: int | None = None,
) -> Outcome:
    """Reset inputs, poison outputs, launch, and collect outputs, canary and input-mutation problems.

    Outputs are poisoned with the side's own poison unless `poison` names another one."""
    which = poison if poison is not None else (ORIGINAL_POISON if side is Side.ORIGINAL else CANDIDATE_POISON)
    for name, buf in buffers.items():
        if buf.spec.role is Role.OUT:
            buf.poison(which)
        else:
            buf.data.copy_(pristine[name])
    values = pack_args(args, buffers, scalars)
    device.launch(kernel, geometry, values, side.value)
    device.sync_stream(side.value)
    outputs = {n: b.data.clone() for n, b in buffers.items() if b.spec.role is not Role.IN}
    device.sync_device(side.value)
    problems: list[str] = []
    for name, buf in buffers.items():
        if not buf.canaries_intact():
            problems.append(f"the {side.value} kernel wrote outside the bounds of `{name}`")
        if buf.spec.role is Role.IN and not torch.equal(buf.data, pristine[name]):
            problems.append(f"the {side.value} kernel modified the input `{name}`, which is not declared an output")
    return Outcome(outputs, problems)


def compare(
    spec: BufferSpec,
    expected: torch.Tensor,
    got: torch.Tensor,
    seed: int,
    tolerances: dict[str, tuple[float, float]],
    expected_poisoned: bool,
    got_poison: int = CANDIDATE_POISON,
    written: torch.Tensor | None = None,
) -> Mismatch | None:
    """Compare one output (raw payload bytes); return the worst disagreement, or None when they match.

    `got_poison` is the poison the compared run started from; `written` marks elements a second run under
    another poison showed to be written (they hold the poison's value because the kernel wrote it)."""
    width = DTYPE_BYTES[spec.dtype]
    if expected.numel() != got.numel():
        return Mismatch(spec.name, seed, math.inf, math.inf, -1, got.numel() // width, -1, 0.0, 0.0, "shape differs")
    eb = expected.view(_BITS_DTYPES[width])
    gb = got.view(_BITS_DTYPES[width])
    total = gb.numel()
    p_orig = poison_bits(spec.dtype, ORIGINAL_POISON)
    p_cand = poison_bits(spec.dtype, got_poison)
    cand_unwritten = gb == p_cand
    if written is not None:
        cand_unwritten &= ~written.reshape(cand_unwritten.shape)
    if expected_poisoned:
        ref_unwritten = eb == p_orig
        both_unwritten = ref_unwritten & cand_unwritten
    else:
        ref_unwritten = torch.zeros_like(cand_unwritten)
        both_unwritten = ref_unwritten
    if spec.dtype in FLOAT_DTYPES:
        tdt = _TORCH_DTYPES[spec.dtype]
        e = eb.view(tdt).to(torch.float64)
        g = gb.view(tdt).to(torch.float64)
        rtol, atol = tolerances.get(spec.dtype, TOLERANCES[spec.dtype])
        diff = (g - e).abs()
        nan_both = torch.isnan(e) & torch.isnan(g) & ~ref_unwritten & ~cand_unwritten
        inf_same = torch.isinf(e) & (e == g)
        ok = (diff <= atol + rtol * e.abs()) | nan_both | inf_same | both_unwritten
        ok &= ~(cand_unwritten & ~both_unwritten)
    else:
        e = eb.to(torch.float64)
        g = gb.to(torch.float64)
        diff = (g - e).abs()
        ok = (eb == gb) & ~(cand_unwritten & ~both_unwritten)
        ok |= both_unwritten
    bad = ~ok
    nbad = int(bad.sum().item())
    if nbad == 0:
        return None
    finite = bad & torch.isfinite(diff)
    max_abs = float(diff[finite].max().item()) if bool(finite.any().item()) else math.inf
    rel = diff / e.abs().clamp_min(1e-30)
    max_rel = float(rel[finite].max().item()) if bool(finite.any().item()) else math.inf
    first = int(torch.nonzero(bad)[0].item())
    unwritten = int((cand_unwritten & ~both_unwritten).sum().item())
    if unwritten:
        reason = f"{unwritten} of {total} elements of `{spec.name}` were left unwritten by the candidate"
    else:
        reason = f"{nbad} of {total} elements of `{spec.name}` differ beyond tolerance"
    exp_v = float(e[first].item())
    got_v = float(g[first].item())
    return Mismatch(spec.name, seed, max_abs, max_rel, nbad, total, first, exp_v, got_v, reason)


def poison_lookalikes(spec: BufferSpec, expected: torch.Tensor, got: torch.Tensor, got_poison: int) -> int:
    """Return how many elements hold the run's poison and also the expected value (written, or left unwritten?)."""
    width = DTYPE_BYTES[spec.dtype]
    if expected.numel() != got.numel():
        return 0
    gb = got.view(_BITS_DTYPES[width])
    eb = expected.view(_BITS_DTYPES[width])
    return int(((gb == poison_bits(spec.dtype, got_poison)) & (eb == gb)).sum().item())


def written_under(spec: BufferSpec, got: torch.Tensor, poison: int) -> torch.Tensor:
    """Return the mask of elements that do not hold `poison` after a run that started from it (they were written)."""
    width = DTYPE_BYTES[spec.dtype]
    return got.view(_BITS_DTYPES[width]) != poison_bits(spec.dtype, poison)


def _quantiles(ms: list[float]) -> Timing:
    """Return median and quartiles of a list of times."""
    t = torch.tensor(ms, dtype=torch.float64)
    q = torch.quantile(t, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    return Timing(median_ms=float(q[1]), q1_ms=float(q[0]), q3_ms=float(q[2]), reps=len(ms))


def time_pair(
    device: Device,
    runs: dict[str, tuple[Kernel, Geometry, list[Any]]],
    warmup_ms: float,
    rep_ms: float,
    min_reps: int,
    max_reps: int,
    stop_below: tuple[str, str, float] | None = None,
    info: dict[str, Any] | None = None,
) -> dict[str, Timing]:
    """Time several kernels interleaved (order rotated each round), L2 flushed before every run.

    The runs should share their buffers, so that no kernel is favoured by where its memory happens to lie.
    `stop_below = (original, candidate, target)` stops the rounds early once the candidate's speedup over the
    original is clearly below `target` (the sequential sign test of `early_stop`); `info["stopped_after"]` then
    holds the number of rounds measured.
    """
    names = list(runs)
    est: dict[str, float] = {}
    for name in names:
        kernel, geom, values = runs[name]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        device.launch(kernel, geom, values, name)
        device.sync_stream(name)
        # One run estimates a long kernel well enough (20 ms is far above the event resolution); short ones get 5.
        total, count = 0.0, 0
        while count < 5 and not (count and total >= ESTIMATE_LONG_MS):
            start.record()
            device.flush_l2()
            device.launch(kernel, geom, values, name)
            end.record()
            device.sync_stream(name)
            total += start.elapsed_time(end)
            count += 1
        est[name] = max(total / count, 1e-3)
    per_round = sum(est.values())
    n_warm = max(1, int(warmup_ms / per_round))
    n_rep = max(min_reps, min(max_reps, int(rep_ms / per_round)))
    for _ in range(n_warm):
        for name in names:
            kernel, geom, values = runs[name]
            device.flush_l2()
            device.launch(kernel, geom, values, name)
    events: dict[str, list[tuple[Any, Any]]] = {n: [] for n in names}
    for i in range(n_rep):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            kernel, geom, values = runs[name]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            device.flush_l2()
            start.record()
            device.launch(kernel, geom, values, name)
            end.record()
            events[name].append((start, end))
        if stop_below is not None and early_stop.look_index(i + 1) is not None:
            device.sync_device("timing")
            orig, cand, target = stop_below
            o = [a.elapsed_time(b) for a, b in events[orig]]
            c = [a.elapsed_time(b) for a, b in events[cand]]
            if early_stop.clearly_below(o, c, target):
                if info is not None:
                    info["stopped_after"] = i + 1
                break
    device.sync_stream("timing")
    device.sync_device("timing")
    return {n: _quantiles([a.elapsed_time(b) for a, b in events[n]]) for n in names}


def now() -> float:
    """Return a monotonic clock reading in seconds."""
    return time.perf_counter()
