"""The GPU stages of one job inside the worker: turn a spec into cases, check both kernels, time them.

A *case* is one seeded set of inputs: the buffers with their sizes and roles, the pristine bytes of every input,
the scalar arguments, the launch geometry of each side, and, for a problem file, the expected outputs from its
`reference()`. Annotated and inferred specs draw inputs from seeded random numbers in each buffer's range and
use the original kernel as the reference (differential testing); problem files draw them with their own
`make_inputs(seed)` (or KernelBench's `get_inputs()`) and compare both kernels with `reference()`.

Timing hygiene: the GPU's SM clock, temperature and other processes are read before, during and after the timed
runs (`warpwise.verify.worker.gpu_state`); a measurement whose clock moved by more than 5% or that shared the GPU is
taken again (up to `TIMING_ATTEMPTS` times), and one that never settles is not called verified. After timing the
candidate runs once more on fresh buffers and must still match the reference (a kernel that changes its
behaviour after being run many times is caught).

This module runs in the worker process only; it imports torch, the CUDA bindings and warpwise's worker-side
modules (`types`, `nvbuild`, `device`, `gpu_state`).
"""

from __future__ import annotations

import ctypes
import time
import traceback
from dataclasses import dataclass, replace
from typing import Any

import torch

from warpwise.verify.types import (
    BufferSpec,
    DeviceIdentity,
    Durations,
    Geometry,
    Mismatch,
    Role,
    RunSpec,
    Side,
    Status,
    VerificationResult,
    WorkerJob,
    decide_status,
    tolerances_for,
)
from warpwise.verify.worker import gpu_state, nvbuild
from warpwise.verify.worker.device import (
    CANDIDATE_POISON,
    ORIGINAL_POISON,
    SECOND_CANDIDATE_POISON,
    Buffer,
    CudaFault,
    Device,
    Kernel,
    SpecError,
    allocate,
    compare,
    fill_random,
    pack_args,
    poison_lookalikes,
    run_once,
    time_pair,
    written_under,
)

_FROM_TORCH: dict[torch.dtype, str] = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
}
TIMING_ATTEMPTS = 3
PREWARM_MS = 50.0


@dataclass
class Case:
    """One seeded set of inputs, ready to run on both kernels."""

    seed: int
    buffers: tuple[BufferSpec, ...]
    pristine: dict[str, torch.Tensor]
    scalars: dict[str, Any]
    geometry: dict[Side, Geometry]
    expected: dict[str, torch.Tensor] | None


def _geometry_of(value: Any, fallback: Geometry) -> Geometry:
    """Read a problem file's launch geometry `(grid, block[, smem])`, each an int or a tuple."""
    if value is None:
        return fallback
    if not isinstance(value, tuple | list) or len(value) not in (2, 3):
        raise SpecError("`launch(inputs)` must return (grid, block) or (grid, block, smem)")

    def dim3(v: Any) -> tuple[int, int, int]:
        t = tuple(int(x) for x in (v if isinstance(v, tuple | list) else (v,)))
        return (*t, 1, 1, 1)[:3]  # type: ignore[return-value]

    smem = int(value[2]) if len(value) == 3 else 0
    return Geometry(dim3(value[0]), dim3(value[1]), smem)


class Problem:
    """A problem file loaded in the worker: inputs and reference outputs from user code."""

    def __init__(self, spec: RunSpec, device: torch.device) -> None:
        self.spec = spec
        self.device = device
        self.ns: dict[str, Any] = {"__name__": "warpwise_problem", "__file__": spec.problem_name or "problem.py"}
        try:
            code = compile(spec.problem_source or "", spec.problem_name or "problem.py", "exec")
            exec(code, self.ns)
        except Exception as exc:
            raise SpecError(f"the problem file raised while loading: {type(exc).__name__}: {exc}") from exc
        self.kernelbench = "make_inputs" not in self.ns and "get_inputs" in self.ns and "Model" in self.ns
        if not self.kernelbench and not ("make_inputs" in self.ns and "reference" in self.ns):
            raise SpecError("the problem file defines neither make_inputs()+reference() nor Model+get_inputs()")
        self.inout = set(self.ns.get("inout", ()))
        self.model: Any = None

    def _tensor(self, name: str, value: Any) -> torch.Tensor:
        """Return a contiguous CUDA tensor for one pointer parameter."""
        if not isinstance(value, torch.Tensor):
            raise SpecError(f"make_inputs() gave `{name}` a {type(value).__name__}; a pointer needs a tensor")
        return value.detach().to(self.device).contiguous()

    def case(self, seed: int) -> Case:
        """Return the inputs and expected outputs for one seed."""
        torch.manual_seed(seed)
        pointer_params = [a for a in self.spec.args if a.buffer is not None]
        roles = {b.name: b.role for b in self.spec.buffers}
        try:
            if self.kernelbench:
                tensors, scalars, expected = self._kernelbench_case(pointer_params, roles)
            else:
                inputs = self.ns["make_inputs"](seed)
                if not isinstance(inputs, dict):
                    raise SpecError("make_inputs(seed) must return a dict keyed by kernel parameter names")
                tensors = {a.param: self._tensor(a.param, inputs.get(a.param)) for a in pointer_params}
                scalars = {a.param: inputs[a.param] for a in self.spec.args if a.buffer is None and a.param in inputs}
                ref = self.ns["reference"](
                    {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
                )
                expected = self._expected(ref, pointer_params, roles)
        except SpecError:
            raise
        except Exception as exc:
            raise SpecError(f"the problem file raised: {type(exc).__name__}: {exc}") from exc
        for a in self.spec.args:
            if a.buffer is None and a.param not in scalars:
                if a.param in self.ns and isinstance(self.ns[a.param], int | float):
                    scalars[a.param] = self.ns[a.param]
                else:
                    raise SpecError(f"the problem file gives no value for the scalar parameter `{a.param}`")
        buffers = []
        pristine: dict[str, torch.Tensor] = {}
        for a in pointer_params:
            t = tensors[a.param]
            dtype = _FROM_TORCH.get(t.dtype)
            if dtype is None:
                raise SpecError(f"`{a.param}` has dtype {t.dtype}, which the gate does not support")
            if a.param in expected:
                role = Role.INOUT if a.param in self.inout else Role.OUT
            else:
                role = Role.IN
            buffers.append(BufferSpec(a.param, dtype, t.numel(), role))
            pristine[a.param] = t.reshape(-1).view(torch.uint8).clone()
        launch_inputs = {**tensors, **scalars}
        orig = self._launch("launch", launch_inputs, self.spec.original_geometry)
        cand = self._launch("launch_candidate", launch_inputs, orig)
        exp_bytes = {
            k: v.detach().to(self.device).contiguous().reshape(-1).view(torch.uint8) for k, v in expected.items()
        }
        for k, v in expected.items():
            want = next(b for b in buffers if b.name == k)
            got_dtype = _FROM_TORCH.get(v.dtype)
            if got_dtype != want.dtype or v.numel() != want.count:
                raise SpecError(
                    f"reference() returned `{k}` as {v.dtype} with {v.numel()} elements, but the buffer holds "
                    f"{want.count} {want.dtype} elements"
                )
        return Case(seed, tuple(buffers), pristine, scalars, {Side.ORIGINAL: orig, Side.CANDIDATE: cand}, exp_bytes)

    def _launch(self, fn_name: str, inputs: dict[str, Any], fallback: Geometry) -> Geometry:
        """Return the geometry from `launch(inputs)`, module-level grid/block, or the fallback."""
        if fn_name in self.ns:
            return _geometry_of(self.ns[fn_name](inputs), fallback)
        if fn_name == "launch" and "grid" in self.ns and "block" in self.ns:
            return _geometry_of((self.ns["grid"], self.ns["block"], self.ns.get("smem", 0)), fallback)
        return fallback

    def _expected(self, ref: Any, pointer_params: list[Any], roles: dict[str, Role]) -> dict[str, torch.Tensor]:
        """Map reference()'s return value onto output parameters."""
        if isinstance(ref, dict):
            return {k: v for k, v in ref.items() if isinstance(v, torch.Tensor)}
        if isinstance(ref, torch.Tensor):
            outs = [a.param for a in pointer_params if roles.get(a.param, Role.IN) is not Role.IN]
            if len(outs) != 1:
                raise SpecError(
                    f"reference() returned one tensor but the kernel has {len(outs)} output parameters; return a dict"
                )
            return {outs[0]: ref}
        raise SpecError("reference() must return a tensor or a dict of tensors keyed by parameter name")

    def _kernelbench_case(
        self, pointer_params: list[Any], roles: dict[str, Role]
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any], dict[str, torch.Tensor]]:
        """Map KernelBench's `get_inputs()` onto read-only pointers and the model's output onto the output."""
        init = self.ns.get("get_init_inputs", lambda: [])()
        if self.model is None:
            self.model = self.ns["Model"](*init).to(self.device)
        inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in self.ns["get_inputs"]()]
        ins = [a.param for a in pointer_params if roles.get(a.param, Role.IN) is Role.IN]
        outs = [a.param for a in pointer_params if roles.get(a.param, Role.IN) is not Role.IN]
        tensor_inputs = [x for x in inputs if isinstance(x, torch.Tensor)]
        if len(tensor_inputs) != len(ins) or len(outs) != 1:
            raise SpecError(
                f"get_inputs() gives {len(tensor_inputs)} tensors for {len(ins)} read-only pointer parameters "
                f"({', '.join(ins)}) and the kernel has {len(outs)} outputs; KernelBench problems need one output"
            )
        with torch.no_grad():
            out = self.model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        tensors = {p: t.contiguous() for p, t in zip(ins, tensor_inputs, strict=True)}
        tensors[outs[0]] = torch.empty_like(out).contiguous()
        return tensors, {}, {outs[0]: out}


class Spec:
    """Cases for an annotated or inferred spec: seeded random inputs in each buffer's range."""

    def __init__(self, spec: RunSpec, device: torch.device) -> None:
        self.spec = spec
        self.device = device

    def case(self, seed: int) -> Case:
        """Return the inputs for one seed (no expected outputs: the original is the reference)."""
        pristine: dict[str, torch.Tensor] = {}
        for b in self.spec.buffers:
            if b.role is Role.OUT:
                continue
            tmp = allocate(b, self.device)
            fill_random(tmp, seed, self.device)
            pristine[b.name] = tmp.data.clone()
        geom = {Side.ORIGINAL: self.spec.original_geometry, Side.CANDIDATE: self.spec.candidate_geometry}
        return Case(seed, self.spec.buffers, pristine, {}, geom, None)


def _case_source(spec: RunSpec, device: torch.device) -> Problem | Spec:
    """Return the source of cases for a spec."""
    return Problem(spec, device) if spec.problem_source else Spec(spec, device)


def _allocate_case(case: Case, device: torch.device) -> dict[str, Buffer]:
    """Allocate canary-guarded buffers for one case."""
    return {b.name: allocate(b, device) for b in case.buffers}


def check_and_time(
    device: Device,
    job: WorkerJob,
    ob: nvbuild.Build,
    cb: nvbuild.Build,
    base: VerificationResult,
    emit: Any,
    t0: float,
    build_s: float,
) -> VerificationResult:
    """Check the candidate against the reference on every seed, then time both; return the verdict."""
    spec = job.spec
    assert spec is not None
    opts = job.options
    tolerances = tolerances_for(opts, spec.tolerances)
    kernels = {
        Side.ORIGINAL: device.load(ob.cubin, ob.info.lowered_name or "", "original"),
        Side.CANDIDATE: device.load(cb.cubin, cb.info.lowered_name or "", "candidate"),
    }
    # The driver's figures for the loaded kernels are authoritative (ptxas's log of a file with several kernels
    # can interleave them).
    if base.original_build is not None and base.candidate_build is not None:
        base = base.with_(
            original_build=replace(base.original_build, **device.attributes(kernels[Side.ORIGINAL])),
            candidate_build=replace(base.candidate_build, **device.attributes(kernels[Side.CANDIDATE])),
        )
    emit({"event": "stage", "job_id": job.job_id, "stage": "check"})
    t_check = time.perf_counter()
    try:
        source = _case_source(spec, device.torch_device)
    except SpecError as exc:
        return _finish(base, Status.SPEC_MISSING, str(exc), t0, build_s, time.perf_counter() - t_check, 0.0)
    checked: list[int] = []
    first_case: Case | None = None
    first_reference: dict[str, torch.Tensor] | None = None
    for seed in opts.seeds:
        try:
            case = source.case(seed)
        except SpecError as exc:
            return _finish(base, Status.SPEC_MISSING, str(exc), t0, build_s, time.perf_counter() - t_check, 0.0)
        first_case = first_case or case
        bufs = _allocate_case(case, device.torch_device)
        args = spec.args
        o = run_once(
            device,
            kernels[Side.ORIGINAL],
            case.geometry[Side.ORIGINAL],
            args,
            bufs,
            case.pristine,
            case.scalars,
            Side.ORIGINAL,
        )
        if o.problems:
            msg = "the original kernel fails the check itself (is the spec right?): " + "; ".join(o.problems)
            return _finish(base, Status.INCORRECT, msg, t0, build_s, time.perf_counter() - t_check, 0.0)
        reference: dict[str, torch.Tensor]
        if case.expected is None:
            reference = {k: v.clone() for k, v in o.outputs.items()}
        else:
            wrong = _mismatches(case, case.expected, o.outputs, tolerances, poisoned=False, got_poison=ORIGINAL_POISON)
            if wrong:
                msg = f"the original kernel does not match the problem's reference(): {_describe(wrong)}"
                return _finish(base, Status.INCORRECT, msg, t0, build_s, time.perf_counter() - t_check, 0.0)
            reference = case.expected
        # Poison the original's outputs again so that nothing of its result stays in device memory.
        for b in bufs.values():
            if b.spec.role is not Role.IN:
                b.poison(0)
        c = run_once(
            device,
            kernels[Side.CANDIDATE],
            case.geometry[Side.CANDIDATE],
            args,
            bufs,
            case.pristine,
            case.scalars,
            Side.CANDIDATE,
        )
        if c.problems:
            return _finish(
                base,
                Status.INCORRECT,
                "; ".join(c.problems),
                t0,
                build_s,
                time.perf_counter() - t_check,
                0.0,
                seeds=tuple(checked),
            )
        mism = _mismatches(case, reference, c.outputs, tolerances, poisoned=case.expected is None)
        if mism:
            mism = _recheck_lookalikes(
                device, kernels[Side.CANDIDATE], case, args, bufs, reference, c.outputs, tolerances, mism
            )
        if mism:
            worst = mism[0]
            assert isinstance(worst, Mismatch)
            msg = (
                f"{worst.reason} on seed {seed} (max abs error {worst.max_abs_error:.3g}, max rel error "
                f"{worst.max_rel_error:.3g}; first at index {worst.first_bad_index}: expected {worst.expected:.6g}, "
                f"got {worst.got:.6g})"
            )
            res = _finish(
                base, Status.INCORRECT, msg, t0, build_s, time.perf_counter() - t_check, 0.0, seeds=tuple(checked)
            )
            return res.with_(mismatch=worst)
        if first_reference is None:
            first_reference = reference
        checked.append(seed)
        del bufs
    check_s = time.perf_counter() - t_check
    emit({"event": "stage", "job_id": job.job_id, "stage": "time"})
    t_time = time.perf_counter()
    assert first_case is not None
    # One set of buffers serves every timed run, and the original is timed twice (an A/A control): the
    # difference between its two timings is the noise floor a speedup has to clear.
    bufs = _allocate_case(first_case, device.torch_device)
    for name, b in bufs.items():
        if b.spec.role is Role.OUT:
            b.poison(0)
        else:
            b.data.copy_(first_case.pristine[name])
    values = pack_args(spec.args, bufs, first_case.scalars)
    runs = {
        "original": (kernels[Side.ORIGINAL], first_case.geometry[Side.ORIGINAL], values),
        "candidate": (kernels[Side.CANDIDATE], first_case.geometry[Side.CANDIDATE], values),
        "control": (kernels[Side.ORIGINAL], first_case.geometry[Side.ORIGINAL], values),
    }
    reader, why_none = gpu_state.open_reader(getattr(device, "uuid", ""))
    retried: list[str] = []
    for attempt in range(1, TIMING_ATTEMPTS + 1):
        _prewarm(device, runs["original"], max(PREWARM_MS, opts.warmup_ms))
        with gpu_state.Sampler(reader, why_none) as sampler:
            stop = ("original", "candidate", opts.stop_below) if opts.stop_below is not None else None
            info: dict[str, Any] = {}
            timings = time_pair(
                device, runs, opts.warmup_ms, opts.rep_ms, opts.min_reps, opts.max_reps, stop_below=stop, info=info
            )
        conditions = sampler.conditions(attempt, tuple(retried))
        why = gpu_state.unsettled(conditions)
        if not why:
            break
        retried.append(why)
    time_s = time.perf_counter() - t_time
    assert first_reference is not None
    after = _check_after_timing(device, kernels[Side.CANDIDATE], first_case, first_reference, spec.args, tolerances)
    if after is not None:
        res = _finish(base, Status.INCORRECT, after[0], t0, build_s, check_s, time_s, seeds=tuple(checked))
        return res.with_(mismatch=after[1], conditions=conditions)
    status, speedup, msg = decide_status(timings["original"], timings["candidate"], timings["control"])
    if retried and not why:
        msg += f" (measured {len(retried) + 1} times: {retried[-1]} before)"
    elif why:
        msg += f"; the GPU never settled in {TIMING_ATTEMPTS} measurements ({why})"
        if status is Status.VERIFIED:
            status = Status.NOT_FASTER
            msg += ", so it is not called verified"
    stopped = int(info.get("stopped_after", 0))
    if stopped:
        # A candidate stopped early is known to be slower than the target; it is never called verified.
        status = Status.NOT_FASTER
        ratio = timings["original"].median_ms / timings["candidate"].median_ms
        msg = (
            f"correct; timing stopped after {stopped} rounds: {ratio:.2f}x is clearly below the "
            f"{opts.stop_below:.2f}x to beat (sequential sign test), so it is not called verified"
        )
    res = _finish(base, status, msg, t0, build_s, check_s, time_s, seeds=tuple(checked))
    return res.with_(
        stopped_after=stopped,
        original_timing=timings["original"],
        candidate_timing=timings["candidate"],
        control_timing=timings["control"],
        speedup=speedup,
        conditions=conditions,
    )


def _prewarm(device: Device, run: tuple[Kernel, Geometry, list[Any]], ms: float) -> None:
    """Run a kernel for about `ms` milliseconds so the SM clock has left its idle level before readings start."""
    kernel, geom, values = run
    t = time.perf_counter()
    while (time.perf_counter() - t) * 1000 < ms:
        for _ in range(8):
            device.launch(kernel, geom, values, "original")
        device.sync_stream("original")


def _check_after_timing(
    device: Device,
    kernel: Kernel,
    case: Case,
    reference: dict[str, torch.Tensor],
    args: Any,
    tolerances: dict[str, tuple[float, float]],
) -> tuple[str, Mismatch | None] | None:
    """Run the candidate once more on fresh buffers after timing; return why it no longer matches, if it does not."""
    bufs = _allocate_case(case, device.torch_device)
    c = run_once(device, kernel, case.geometry[Side.CANDIDATE], args, bufs, case.pristine, case.scalars, Side.CANDIDATE)
    if c.problems:
        return "after the timed runs: " + "; ".join(c.problems), None
    mism = _mismatches(case, reference, c.outputs, tolerances, poisoned=case.expected is None)
    if mism:
        mism = _recheck_lookalikes(device, kernel, case, args, bufs, reference, c.outputs, tolerances, mism)
    if not mism:
        return None
    worst = mism[0]
    return (
        f"the candidate matched before timing but not after it: {worst.reason} on seed {case.seed} "
        f"(max abs error {worst.max_abs_error:.3g})",
        worst,
    )


def _mismatches(
    case: Case,
    expected: dict[str, torch.Tensor],
    got: dict[str, torch.Tensor],
    tolerances: dict[str, tuple[float, float]],
    *,
    poisoned: bool,
    got_poison: int = CANDIDATE_POISON,
    written: dict[str, torch.Tensor] | None = None,
) -> list[Mismatch]:
    """Compare every output; return the mismatches, worst (most bad elements) first."""
    out: list[Mismatch] = []
    for b in case.buffers:
        if b.name not in expected:
            continue
        m = compare(
            b,
            expected[b.name],
            got[b.name],
            case.seed,
            tolerances,
            expected_poisoned=poisoned,
            got_poison=got_poison,
            written=None if written is None else written.get(b.name),
        )
        if m is not None:
            out.append(m)
    out.sort(key=lambda m: -m.bad_elements)
    return out


def _recheck_lookalikes(
    device: Device,
    kernel: Kernel,
    case: Case,
    args: Any,
    bufs: dict[str, Buffer],
    reference: dict[str, torch.Tensor],
    outputs: dict[str, torch.Tensor],
    tolerances: dict[str, tuple[float, float]],
    mism: list[Mismatch],
) -> list[Mismatch]:
    """Tell written values that equal the candidate's poison from unwritten elements; return the mismatches left.

    An element that holds the candidate's poison and the expected value is either written with that value or
    left unwritten where the reference happens to hold it (one byte in 256 of a uint8 output). The candidate runs
    once more under its second poison: an element it writes no longer holds a poison there. Only those elements
    change their verdict; every other comparison stays as the first run made it."""
    names = {b.name for b in case.buffers if b.name in reference}
    if not any(
        poison_lookalikes(b, reference[b.name], outputs[b.name], CANDIDATE_POISON)
        for b in case.buffers
        if b.name in names
    ):
        return mism
    again = run_once(
        device,
        kernel,
        case.geometry[Side.CANDIDATE],
        args,
        bufs,
        case.pristine,
        case.scalars,
        Side.CANDIDATE,
        poison=SECOND_CANDIDATE_POISON,
    )
    if again.problems:
        return mism
    written = {
        b.name: written_under(b, again.outputs[b.name], SECOND_CANDIDATE_POISON)
        for b in case.buffers
        if b.name in names and b.name in again.outputs
    }
    return _mismatches(case, reference, outputs, tolerances, poisoned=case.expected is None, written=written)


def _describe(mism: list[Mismatch]) -> str:
    """Return a one-line description of mismatches."""
    m = mism[0]
    return f"{m.reason} on seed {m.seed} (max abs error {m.max_abs_error:.3g})"


def _finish(
    base: VerificationResult,
    status: Status,
    message: str,
    t0: float,
    build_s: float,
    check_s: float,
    time_s: float,
    *,
    seeds: tuple[int, ...] = (),
) -> VerificationResult:
    """Return a result with durations filled in."""
    durations = Durations(build_s=build_s, check_s=check_s, time_s=time_s, total_s=time.perf_counter() - t0)
    return base.with_(status=status, message=message, durations=durations, seeds_checked=seeds, created=time.time())


def result_of_exception(
    exc: BaseException, job: WorkerJob, identity: DeviceIdentity
) -> tuple[VerificationResult, bool]:
    """Turn an exception raised while running a job into a result; say whether the worker must be replaced."""
    base = VerificationResult(status=Status.CRASHED, message="", key=job.key, device=identity, created=time.time())
    if isinstance(exc, CudaFault):
        return base.with_(status=Status.LAUNCH_FAILED, message=str(exc)), exc.sticky
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        first = str(exc).splitlines()[0] if str(exc) else "out of memory"
        return base.with_(status=Status.LAUNCH_FAILED, message=f"CUDA out of memory: {first}"), True
    if isinstance(exc, SpecError):
        return base.with_(status=Status.SPEC_MISSING, message=str(exc)), False
    if isinstance(exc, RuntimeError) and ("CUDA error" in str(exc) or "CUDA_ERROR" in str(exc)):
        first = str(exc).splitlines()[0]
        return base.with_(status=Status.LAUNCH_FAILED, message=f"CUDA failed: {first}"), True
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return base.with_(status=Status.CRASHED, message=f"the worker raised {type(exc).__name__}: {exc}\n{tb}"), True


def run_sides_once(device: Device, job: WorkerJob, sides: list[Side], arch: str, cache: nvbuild.BuildCache) -> int:
    """Run each chosen side once on seed 0 (what compute-sanitizer and ncu observe); return an exit code."""
    assert job.spec is not None
    builds = {
        Side.ORIGINAL: nvbuild.build(job.original, arch, cache),
        Side.CANDIDATE: nvbuild.build(job.candidate, arch, cache),
    }
    source = _case_source(job.spec, device.torch_device)
    case = source.case(job.options.seeds[0] if job.options.seeds else 0)
    for side in sides:
        b = builds[side]
        if not b.info.ok:
            print(f"warpwise worker: the {side.value} kernel does not compile", flush=True)
            return 2
        kernel = device.load(b.cubin, b.info.lowered_name or "", side.value)
        bufs = _allocate_case(case, device.torch_device)
        for name, buf in bufs.items():
            if buf.spec.role is Role.OUT:
                buf.poison(0)
            else:
                buf.data.copy_(case.pristine[name])
        device.launch(kernel, case.geometry[side], pack_args(job.spec.args, bufs, case.scalars), side.value)
        device.sync_device(side.value)
    return 0


_FMA_KERNEL = r"""
extern "C" __global__ void warpwise_fma_peak(float* out, int iters) {
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float m = 0.9999f, c = 0.0001f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);
      a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
"""


def measure_peaks(device: Device | None) -> dict[str, float]:
    """Measure device-to-device copy bandwidth (GB/s, read + written) and the fp32 FMA rate (GFLOP/s)."""
    if device is None:
        return {}
    dev = device.torch_device
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device=dev).fill_(1)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 20
    start.record()
    for _ in range(reps):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize(dev)
    copy_gbps = 2 * n * reps / (start.elapsed_time(end) / 1000) / 1e9
    del src, dst
    from warpwise.verify.types import Source

    b = nvbuild.build(Source(_FMA_KERNEL, "warpwise_fma_peak", "fma_peak.cu"), device.arch, None)
    if not b.info.ok:
        return {"copy_gbps": copy_gbps}
    kernel: Kernel = device.load(b.cubin, b.info.lowered_name or "warpwise_fma_peak", "peaks")
    blocks, threads, iters = device.sm_count * 8, 256, 4096
    out = torch.empty(blocks * threads, dtype=torch.float32, device=dev)
    geom = Geometry((blocks, 1, 1), (threads, 1, 1), 0)
    values = [ctypes.c_void_p(out.data_ptr()), ctypes.c_int32(iters)]
    device.launch(kernel, geom, values, "peaks")
    device.sync_device("peaks")
    start.record()
    for _ in range(5):
        device.launch(kernel, geom, values, "peaks")
    end.record()
    device.sync_device("peaks")
    seconds = start.elapsed_time(end) / 1000 / 5
    flops = 2.0 * 8 * 16 * iters * blocks * threads
    return {"copy_gbps": copy_gbps, "fp32_gflops": flops / seconds / 1e9}
