"""Check and time every corpus expert and every naive suite kernel on the GPU, against torch eager and the peaks.

For the batched GPU run of issue 7. For each kernel (`lineages/corpus/*/expert.cu` and
`bench/suite/*/naive.cu`, or with `--suite bench/suite_ood` `bench/suite_ood/*/*.cu`, each with its problem
file beside it) this script

1. builds it with NVRTC for the device's architecture (registers, spills and shared memory from ptxas);
2. checks it against the problem's `reference()`: once on every small preset of the problem's `SIZES` (tails,
   scalar paths, partial tiles), then on three seeds at full size, with outputs poisoned before the run, inputs
   checked for mutation, and the gate's per-dtype tolerances;
3. times it at full size like triton's `do_bench` (CUDA events, warm-up, the L2 flushed before every run,
   repetitions by time budget, median and interquartile range), and the problem's torch `eager()` the same way;
4. reports achieved GB/s or TFLOP/s against the peaks measured in the same run: a 1 GiB device-to-device copy
   (bytes read + written) and cuBLAS float32 SGEMM at 4096^3 with TF32 off. Experts are held to the issue's
   targets: memory-bound >= 85% of the copy bandwidth, SGEMM >= 80% of cuBLAS, and at least as fast as eager.

It follows the problem-file contract of `warpwise.verify.worker.gpu_job` (parameters by name, `reference()` as a dict of
outputs, `launch(inputs) -> (grid, block[, smem])`, `inout`) but runs without warpwise installed: the GPU machine
has torch and the CUDA bindings, not tree-sitter, and the gate times a candidate against an original kernel,
not a kernel against torch eager. The kernels run in a child process, one at a time; the parent enforces a
deadline per kernel and a total budget, and starts a fresh child after a hang or a lost CUDA context, so one bad
kernel costs only itself.

    python3 bench/gpu/corpus_check.py --out "$OUT"            # everything (expected: 2-3 minutes on one H200)
    python3 bench/gpu/corpus_check.py --only scan,sgemm       # a few entries
    python3 bench/gpu/corpus_check.py --suite bench/suite_ood --no-experts   # the second naive suite
    python3 bench/gpu/corpus_check.py --list                  # what would run (no GPU needed)

Results: `corpus_check.json` (everything measured) and `corpus_check.md` (a table) in the output folder.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import json
import math
import os
import queue
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "lineages" / "corpus"
SUITE = REPO / "bench" / "suite"
SUITE_ENV = "CORPUS_CHECK_SUITE"

TOLERANCES: dict[str, tuple[float, float]] = {
    "torch.float64": (1e-9, 1e-12),
    "torch.float32": (1e-4, 1e-5),
    "torch.float16": (1e-2, 1e-3),
    "torch.bfloat16": (2e-2, 1e-2),
}
"""(rtol, atol) per float dtype, the same as the gate's `warpwise.verify.types.TOLERANCES`; integers must match."""

MEMORY_TARGET_PCT = 85.0
COMPUTE_TARGET_PCT = 80.0
SEEDS = (0, 1, 2)
DEFAULT_DEADLINE_S = 90.0
DEFAULT_BUDGET_S = 230.0
EXIT_CONTEXT_LOST = 3
EXIT_ORPHANED = 4

_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"})
_CTYPE_NAMES: dict[str, str] = {
    "int": "c_int32",
    "int32_t": "c_int32",
    "unsigned": "c_uint32",
    "unsigned int": "c_uint32",
    "uint32_t": "c_uint32",
    "long": "c_int64",
    "long long": "c_int64",
    "int64_t": "c_int64",
    "unsigned long long": "c_uint64",
    "uint64_t": "c_uint64",
    "size_t": "c_uint64",
    "float": "c_float",
    "double": "c_double",
}


@dataclass(frozen=True)
class Entry:
    """One kernel to check: an expert of the corpus or a naive kernel of the suite."""

    kind: str
    name: str
    source: Path
    problem: Path

    @property
    def ident(self) -> str:
        """Return the entry's name in results: `expert/scan`, `naive/topk`."""
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name, whether it is a pointer, and its C type without qualifiers."""

    name: str
    pointer: bool
    ctype: str


def suite_folder() -> Path:
    """Return the naive suite to check: bench/suite, or the folder `--suite` named (children inherit it)."""
    return Path(os.environ.get(SUITE_ENV) or SUITE)


def discover(only: set[str] | None = None, naive: bool = True, experts: bool = True) -> list[Entry]:
    """Return the experts, then the naive kernels, optionally only those whose name or ident is in `only`.

    A suite folder holds `<operator>/naive.cu` (named after the operator, as bench/suite does) or
    `<operator>/<variant>.cu` (named `<operator>/<variant>`, as bench/suite_ood does), each with its
    `<stem>.problem.py` beside it; `only` also matches a variant's operator.
    """
    entries = []
    if experts:
        entries += [
            Entry("expert", Path(p).parent.name, Path(p), Path(p).with_name("expert.problem.py"))
            for p in sorted(glob.glob(str(CORPUS / "*" / "expert.cu")))
        ]
    if naive:
        for p in sorted(glob.glob(str(suite_folder() / "*" / "*.cu"))):
            src = Path(p)
            problem = src.with_name(f"{src.stem}.problem.py")
            if problem.is_file():
                name = src.parent.name if src.stem == "naive" else f"{src.parent.name}/{src.stem}"
                entries.append(Entry("naive", name, src, problem))
    if only:
        entries = [e for e in entries if e.name in only or e.ident in only or e.name.split("/")[0] in only]
    return entries


def _strip_comments(text: str) -> str:
    """Return the source with comments replaced by spaces."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)


def parse_signature(source: str, kernel: str) -> list[Param]:
    """Return the parameters of the `__global__` function `kernel`, in order."""
    text = _strip_comments(source)
    for m in re.finditer(r"__global__\b", text):
        head = re.compile(rf"\b{re.escape(kernel)}\s*\(")
        found = head.search(text, m.end())
        if found is None:
            continue
        between = text[m.end() : found.start()]
        if "{" in between or ";" in between:
            continue
        depth, i = 1, found.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        inner = text[found.end() : i - 1].strip()
        if not inner or inner == "void":
            return []
        params = []
        for raw in inner.split(","):
            words = raw.replace("*", " * ").split()
            name = words[-1]
            pointer = "*" in words
            ctype = " ".join(w for w in words[:-1] if w != "*" and w not in _QUALIFIERS)
            params.append(Param(name, pointer, ctype))
        return params
    raise ValueError(f"no __global__ function `{kernel}` in the source")


def load_problem(path: Path) -> dict[str, Any]:
    """Execute a problem file the way the gate's worker does and return its namespace."""
    ns: dict[str, Any] = {"__name__": "warpwise_problem", "__file__": str(path)}
    from warpwise.verify.spec import read_problem

    exec(compile(read_problem(path), str(path), "exec"), ns)
    return ns


def presets(ns: dict[str, Any]) -> list[str]:
    """Return the problem's size presets, the small ones first and `full` last."""
    names = list(ns.get("SIZES", {"full": None}))
    return [n for n in names if n != "full"] + (["full"] if "full" in names else [])


# ---------------------------------------------------------------------------------------------------------------
# The child: everything below runs on the GPU machine, inside one process that may die on a bad kernel.


def _cuda_include_dirs() -> list[str]:
    """Return folders holding the CUDA headers (cuda_fp16.h) for NVRTC."""
    roots = [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH")]
    nvcc = subprocess.run(["sh", "-c", "command -v nvcc"], capture_output=True, text=True, check=False).stdout
    if nvcc.strip():
        roots.append(str(Path(nvcc.strip()).resolve().parent.parent))
    roots.append("/usr/local/cuda")
    dirs = [str(Path(r) / "include") for r in roots if r and (Path(r) / "include" / "cuda_fp16.h").is_file()]
    for base in sys.path:
        dirs += [str(Path(p).parent) for p in glob.glob(os.path.join(base, "nvidia", "*", "include", "cuda_fp16.h"))]
    # Folders a batch brings along (CCCL's headers where the machine's CUDA wheels have none), os.pathsep-separated.
    dirs += [d for d in os.environ.get("WARPWISE_EXTRA_INCLUDE_DIRS", "").split(os.pathsep) if d and Path(d).is_dir()]
    return list(dict.fromkeys(dirs))


class Gpu:
    """The device: PyTorch's primary context, NVRTC builds, launches and timing."""

    def __init__(self) -> None:
        import torch
        from cuda.bindings import driver

        self.torch = torch
        self.driver = driver
        torch.cuda.init()
        self.dev = torch.device("cuda", torch.cuda.current_device())
        torch.empty(1, device=self.dev)
        (err,) = driver.cuInit(0)
        self._check(err, "cuInit")
        props = torch.cuda.get_device_properties(self.dev)
        self.props = props
        self.arch = f"sm_{props.major}{props.minor}"
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
        self.flush_buf = torch.empty(max(2 * self.l2_bytes, 64 * 2**20), dtype=torch.uint8, device=self.dev)
        self.includes = _cuda_include_dirs()
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")

    def _check(self, err: Any, what: str) -> None:
        """Raise when a driver call failed."""
        if int(err) != 0:
            raise RuntimeError(f"{what} failed: {self.driver.CUresult(int(err)).name}")

    def identity(self) -> dict[str, Any]:
        """Return what the results were measured on."""
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        return {
            "gpu": self.props.name,
            "arch": self.arch,
            "sm_count": self.props.multi_processor_count,
            "l2_bytes": self.l2_bytes,
            "torch": self.torch.__version__,
            "nvrtc": f"{major}.{minor}",
            "driver": int(self.driver.cuDriverGetVersion()[1]),
        }

    def build(self, source: str, kernel: str, filename: str) -> tuple[Any, dict[str, Any]]:
        """Compile with NVRTC and load the kernel; return (function or None, build report)."""
        from cuda.bindings import nvrtc

        t0 = time.perf_counter()
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], [])
        name = kernel.encode()
        nvrtc.nvrtcAddNameExpression(prog, name)
        opts = [f"--gpu-architecture={self.arch}", "--std=c++17", "-default-device", "-Xptxas=-v"]
        opts += [f"-I{d}" for d in self.includes]
        (cerr,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = buf.rstrip(b"\0 ").decode("utf-8", "replace")
        report: dict[str, Any] = {"seconds": round(time.perf_counter() - t0, 3), "ok": int(cerr) == 0}
        if int(cerr) != 0:
            report["log"] = log[-4000:]
            nvrtc.nvrtcDestroyProgram(prog)
            return None, report
        _, lowered = nvrtc.nvrtcGetLoweredName(prog, name)
        _, csize = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * csize
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        nvrtc.nvrtcDestroyProgram(prog)
        for key, pattern in (
            ("registers", r"Used (\d+) registers"),
            ("spill_stores", r"(\d+) bytes spill stores"),
            ("spill_loads", r"(\d+) bytes spill loads"),
            ("static_smem", r"(\d+) bytes smem"),
        ):
            m = re.search(pattern, log)
            report[key] = int(m.group(1)) if m else 0
        err, module = self.driver.cuModuleLoadData(bytes(cubin))
        self._check(err, "cuModuleLoadData")
        lowered_name = lowered.decode() if isinstance(lowered, bytes) else str(lowered)
        err, fn = self.driver.cuModuleGetFunction(module, lowered_name.encode())
        self._check(err, "cuModuleGetFunction")
        return (module, fn), report

    def launch(self, fn: Any, geometry: tuple[Any, ...], values: list[Any]) -> None:
        """Launch on PyTorch's current stream with packed ctypes arguments."""
        grid, block = _dim3(geometry[0]), _dim3(geometry[1])
        smem = int(geometry[2]) if len(geometry) > 2 else 0
        if smem > 48 * 1024:
            attr = self.driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            (err,) = self.driver.cuFuncSetAttribute(fn, attr, smem)
            self._check(err, "cuFuncSetAttribute")
        ptrs = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
        stream = self.driver.CUstream(self.torch.cuda.current_stream(self.dev).cuda_stream)
        (err,) = self.driver.cuLaunchKernel(fn, *grid, *block, smem, stream, ctypes.addressof(ptrs), 0)
        self._check(err, "cuLaunchKernel")

    def sync(self) -> None:
        """Wait for the device and raise the fault a kernel hit, if any."""
        (err,) = self.driver.cuCtxSynchronize()
        self._check(err, "the kernel")

    def bench(self, fn: Any, rep_ms: float = 150.0, min_reps: int = 5, max_reps: int = 200) -> dict[str, Any]:
        """Time `fn()` like do_bench: warm-up, the L2 flushed before each run, events; median and quartiles."""
        torch = self.torch
        fn()
        torch.cuda.synchronize(self.dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            self.flush_buf.zero_()
            fn()
        end.record()
        torch.cuda.synchronize(self.dev)
        estimate = max(start.elapsed_time(end) / 3, 1e-3)
        reps = max(min_reps, min(max_reps, int(rep_ms / estimate)))
        events = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.flush_buf.zero_()
            s.record()
            fn()
            e.record()
            events.append((s, e))
        torch.cuda.synchronize(self.dev)
        ms = torch.tensor([s.elapsed_time(e) for s, e in events], dtype=torch.float64)
        q1, med, q3 = (float(v) for v in torch.quantile(ms, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)))
        return {"median_ms": med, "q1_ms": q1, "q3_ms": q3, "iqr_ms": q3 - q1, "reps": reps}

    def peaks(self) -> dict[str, Any]:
        """Measure the device-to-device copy bandwidth (1 GiB) and cuBLAS float32 SGEMM at 4096^3, TF32 off."""
        copy = self._copy_timing(1 << 30)
        mm = self._sgemm_timing(4096)
        self.torch.cuda.empty_cache()
        return {
            "copy_gbps": 2 * (1 << 30) / (copy["median_ms"] / 1e3) / 1e9,
            "copy": copy,
            "cublas_sgemm_tflops": 2 * 4096**3 / (mm["median_ms"] / 1e3) / 1e12,
            "cublas_sgemm": mm,
        }

    def _copy_timing(self, nbytes: int) -> dict[str, Any]:
        """Time a device-to-device copy of `nbytes`."""
        src = self.torch.ones(nbytes, dtype=self.torch.uint8, device=self.dev)
        dst = self.torch.empty_like(src)
        return self.bench(lambda: dst.copy_(src), rep_ms=200.0)

    def _sgemm_timing(self, n: int) -> dict[str, Any]:
        """Time torch.mm of two random n x n float32 matrices (cuBLAS, TF32 off)."""
        a = self.torch.randn(n, n, device=self.dev)
        b = self.torch.randn(n, n, device=self.dev)
        return self.bench(lambda: self.torch.mm(a, b), rep_ms=300.0)


def _dim3(v: Any) -> tuple[int, int, int]:
    """Return a launch dimension as three ints."""
    t = tuple(int(x) for x in (v if isinstance(v, tuple | list) else (v,)))
    return (*t, 1, 1, 1)[:3]  # type: ignore[return-value]


def _scalar(p: Param, value: Any) -> Any:
    """Return a scalar argument as the ctypes value of its C type."""
    if p.ctype not in _CTYPE_NAMES:
        raise ValueError(f"parameter `{p.name}` has type `{p.ctype}`, which this script cannot pass")
    ctype = getattr(ctypes, _CTYPE_NAMES[p.ctype])
    return ctype(float(value) if p.ctype in ("float", "double") else int(value))


def _poison(t: Any) -> None:
    """Fill an output the kernel must write with a recognisable pattern (NaN for floats)."""
    import torch

    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.uint8:
        t.fill_(0xA5)
    else:
        t.fill_(-0x5A5A5A5A if t.element_size() >= 4 else -0x5A5A)


def _compare(name: str, want: Any, got: Any) -> dict[str, Any]:
    """Compare one output with the reference; return the verdict and the worst error."""
    import torch

    if want.dtype != got.dtype or want.numel() != got.numel():
        return {"ok": False, "why": f"`{name}`: reference is {want.dtype} x {want.numel()}, got {got.dtype}"}
    w = want.reshape(-1).to(torch.float64)
    g = got.reshape(-1).to(torch.float64)
    diff = (g - w).abs()
    if want.dtype.is_floating_point:
        rtol, atol = TOLERANCES.get(str(want.dtype), (1e-4, 1e-5))
        bad = ~(diff <= atol + rtol * w.abs())
    else:
        bad = got.reshape(-1) != want.reshape(-1)
    nbad = int(bad.sum())
    finite = torch.isfinite(diff)
    out: dict[str, Any] = {
        "ok": nbad == 0,
        "max_abs_error": float(diff[finite].max()) if bool(finite.any()) else math.inf,
        "bad": nbad,
        "of": int(w.numel()),
    }
    if nbad:
        i = int(torch.nonzero(bad)[0])
        out["why"] = f"`{name}`: {nbad} of {w.numel()} differ; first at {i}: want {float(w[i])!r}, got {float(g[i])!r}"
    return out


class Runner:
    """Checks and times one entry inside the child."""

    def __init__(self, gpu: Gpu, peaks: dict[str, Any]) -> None:
        self.gpu = gpu
        self.peaks = peaks

    def _args(self, params: list[Param], inputs: dict[str, Any], ns: dict[str, Any], outputs: set[str]) -> Any:
        """Return fresh device copies of the pointer arguments (outputs poisoned) and the packed ctypes values."""
        tensors: dict[str, Any] = {}
        values: list[Any] = []
        inout = set(ns.get("inout", ()))
        for p in params:
            if p.pointer:
                t = inputs[p.name].detach().to(self.gpu.dev).contiguous().clone()
                if p.name in outputs and p.name not in inout:
                    _poison(t)
                tensors[p.name] = t
                values.append(ctypes.c_void_p(t.data_ptr()))
            else:
                values.append(_scalar(p, inputs[p.name] if p.name in inputs else ns[p.name]))
        return tensors, values

    def check_case(self, fn: Any, params: list[Param], ns: dict[str, Any], preset: str, seed: int) -> dict[str, Any]:
        """Run the kernel once on one seeded input of one preset and compare with reference()."""
        torch = self.gpu.torch
        os.environ["WARPWISE_PROBLEM_SCALE"] = preset
        torch.manual_seed(seed)
        inputs = ns["make_inputs"](seed)
        ref = ns["reference"]({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
        expected = {k: v for k, v in ref.items() if isinstance(v, torch.Tensor)}
        tensors, values = self._args(params, inputs, ns, set(expected))
        pristine = {k: v.clone() for k, v in tensors.items() if k not in expected}
        launch_inputs = {**tensors, **{p.name: inputs[p.name] for p in params if not p.pointer and p.name in inputs}}
        geometry = ns["launch"](launch_inputs)
        self.launch(fn, geometry, values, launch_inputs, ns)
        self.gpu.sync()
        verdicts = [_compare(k, v.to(self.gpu.dev), tensors[k]) for k, v in expected.items()]
        problems = [v["why"] for v in verdicts if not v["ok"]]
        problems += [
            f"`{k}` was modified but is not an output" for k, v in pristine.items() if not torch.equal(v, tensors[k])
        ]
        worst = max((v.get("max_abs_error", 0.0) for v in verdicts), default=0.0)
        return {"preset": preset, "seed": seed, "ok": not problems, "problems": problems, "max_abs_error": worst}

    def launch(self, fn: Any, geometry: Any, values: list[Any], args: dict[str, Any], ns: dict[str, Any]) -> None:
        """Launch the kernel (`args` holds the same arguments by name, for a stand-in device in tests)."""
        self.gpu.launch(fn, geometry, values)

    def time_entry(self, fn: Any, params: list[Param], ns: dict[str, Any], preset: str = "full") -> dict[str, Any]:
        """Time the kernel and the eager reference on the inputs of seed 0 (full size unless told)."""
        os.environ["WARPWISE_PROBLEM_SCALE"] = preset
        inputs = ns["make_inputs"](0)
        # The kernel writes only its outputs, which eager() never reads, so both can share the inputs.
        tensors = {p.name: inputs[p.name].detach().to(self.gpu.dev).contiguous() for p in params if p.pointer}
        values = [
            ctypes.c_void_p(tensors[p.name].data_ptr())
            if p.pointer
            else _scalar(p, inputs[p.name] if p.name in inputs else ns[p.name])
            for p in params
        ]
        launch_inputs = {**tensors, **{p.name: inputs[p.name] for p in params if not p.pointer and p.name in inputs}}
        geometry = ns["launch"](launch_inputs)
        kernel_t = self.gpu.bench(lambda: self.launch(fn, geometry, values, launch_inputs, ns))
        eager_fn = ns.get("eager") or ns["reference"]
        eager_t = self.gpu.bench(lambda: eager_fn(inputs))
        nbytes = int(ns["bytes_moved"](inputs)) if "bytes_moved" in ns else 0
        nflops = int(ns["flops"](inputs)) if "flops" in ns else 0
        return self._metrics(ns, kernel_t, eager_t, nbytes, nflops, geometry)

    def _metrics(
        self, ns: dict[str, Any], kt: dict[str, Any], et: dict[str, Any], nbytes: int, nflops: int, geometry: Any
    ) -> dict[str, Any]:
        """Return rates, shares of the peaks and the speedup over eager."""
        sec = kt["median_ms"] / 1e3
        out: dict[str, Any] = {
            "kernel": kt,
            "eager": et,
            "geometry": [
                list(_dim3(geometry[0])),
                list(_dim3(geometry[1])),
                int(geometry[2]) if len(geometry) > 2 else 0,
            ],
            "bytes": nbytes,
            "flops": nflops,
            "gbps": nbytes / sec / 1e9,
            "tflops": nflops / sec / 1e12,
            "speedup_vs_eager": et["median_ms"] / kt["median_ms"],
            "roofline": ns.get("roofline", "memory"),
        }
        out["pct_copy"] = 100.0 * out["gbps"] / self.peaks["copy_gbps"]
        out["pct_cublas"] = 100.0 * out["tflops"] / self.peaks["cublas_sgemm_tflops"]
        out["eager_gbps"] = nbytes / (et["median_ms"] / 1e3) / 1e9
        return out

    def run(self, entry: Entry, full: bool = True) -> dict[str, Any]:
        """Build, check on every preset and seed, and time one entry; with `full` false, small presets only."""
        ns = load_problem(entry.problem)
        kernel = ns["kernel"]
        source = entry.source.read_text(encoding="utf-8")
        params = parse_signature(source, kernel)
        result: dict[str, Any] = {"entry": entry.ident, "kind": entry.kind, "operator": entry.name, "kernel": kernel}
        built, report = self.gpu.build(source, kernel, entry.source.name)
        result["build"] = report
        if built is None:
            result["status"] = "compile_failed"
            return result
        _module, fn = built
        checks = []
        for preset in presets(ns) if full else [p for p in presets(ns) if p != "full"]:
            for seed in SEEDS if preset == "full" else (SEEDS[0],):
                checks.append(self.check_case(fn, params, ns, preset, seed))
                self.gpu.torch.cuda.empty_cache()
        result["checks"] = checks
        if not all(c["ok"] for c in checks):
            result["status"] = "incorrect"
            return result
        result["timing"] = self.time_entry(fn, params, ns, "full" if full else presets(ns)[0])
        self.gpu.torch.cuda.empty_cache()
        result["status"] = "ok"
        if entry.kind == "expert":
            result["target"] = _target(result["timing"])
        return result


def _target(t: dict[str, Any]) -> dict[str, Any]:
    """Return how an expert stands against the issue's targets."""
    if t["roofline"] == "compute":
        share, goal, what = t["pct_cublas"], COMPUTE_TARGET_PCT, "cuBLAS"
    else:
        share, goal, what = t["pct_copy"], MEMORY_TARGET_PCT, "copy bandwidth"
    faster = t["speedup_vs_eager"] >= 1.0
    return {
        "goal": f">= {goal:.0f}% of {what}, not slower than eager",
        "share_pct": share,
        "met": share >= goal and faster,
        "gap_pct_points": max(0.0, goal - share),
        "not_slower_than_eager": faster,
    }


def _exit_with_parent() -> None:
    """Exit as soon as the parent is gone: the child sits in its own session, so nothing else would stop a hung
    kernel from holding the GPU after the parent was killed."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def child_main(idents: list[str], peaks_file: Path | None) -> int:
    """Run the given entries and print one JSON line per event; measure the peaks first when asked."""
    _exit_with_parent()
    entries = {e.ident: e for e in discover()}
    gpu = Gpu()

    def emit(obj: dict[str, Any]) -> None:
        print(json.dumps(obj), flush=True)

    if peaks_file is not None and peaks_file.is_file():
        peaks = json.loads(peaks_file.read_text())
    else:
        peaks = gpu.peaks()
        emit({"event": "peaks", "peaks": peaks, "device": gpu.identity()})
    runner = Runner(gpu, peaks)
    for ident in idents:
        emit({"event": "start", "entry": ident})
        t0 = time.perf_counter()
        try:
            result = runner.run(entries[ident])
        except Exception as exc:
            result = {"entry": ident, "status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
        result["seconds"] = round(time.perf_counter() - t0, 2)
        emit({"event": "result", "result": result})
        if result["status"] == "failed" and not _context_usable(gpu):
            # A fault inside a kernel leaves the CUDA context unusable: the parent starts a fresh child.
            return EXIT_CONTEXT_LOST
    return 0


def _context_usable(gpu: Gpu) -> bool:
    """Return whether the CUDA context still works after a failure."""
    try:
        gpu.sync()
        gpu.torch.zeros(1, device=gpu.dev).add_(1).item()
    except Exception:
        return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# The parent: starts children, enforces deadlines and the budget, writes the report.


def _reader(stream: Any, q: queue.Queue[str | None]) -> None:
    """Forward a child's stdout lines to a queue; None at the end."""
    for line in iter(stream.readline, ""):
        q.put(line)
    q.put(None)


def child_command(pending: list[str], peaks_file: Path) -> list[str]:
    """Return the command line of a child that runs the pending entries."""
    return [sys.executable, str(Path(__file__).resolve()), "--child", ",".join(pending), "--peaks", str(peaks_file)]


def parent_main(entries: list[Entry], out: Path, deadline_s: float, budget_s: float) -> dict[str, Any]:
    """Run all entries in children; return the report."""
    out.mkdir(parents=True, exist_ok=True)
    peaks_file = out / "peaks.json"
    peaks_file.unlink(missing_ok=True)
    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "results": []}
    pending = [e.ident for e in entries]
    t_start = time.monotonic()
    while pending:
        if time.monotonic() - t_start > budget_s:
            report["error"] = f"the time budget of {budget_s:.0f} s ran out"
            _give_up(report, pending)
            break
        proc = subprocess.Popen(
            child_command(pending, peaks_file), stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
        current: str | None = None
        progress = False
        since = time.monotonic()
        while True:
            limit = deadline_s if current else deadline_s + 60.0
            try:
                line = q.get(timeout=max(0.1, limit - (time.monotonic() - since)))
            except queue.Empty:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                if current is None:
                    report["error"] = "the child did not start in time"
                    pending = _give_up(report, pending)
                else:
                    report["results"].append(
                        {"entry": current, "status": "timed_out", "error": f"no result within {deadline_s:.0f} s"}
                    )
                    pending.remove(current)
                break
            if line is None:
                proc.wait()
                if current is not None:
                    report["results"].append(
                        {"entry": current, "status": "crashed", "error": f"the child exited with {proc.returncode}"}
                    )
                    pending.remove(current)
                elif pending and not progress:
                    report["error"] = f"the child exited with {proc.returncode} before finishing any entry"
                    pending = _give_up(report, pending)
                break
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                print(line.rstrip(), file=sys.stderr)
                continue
            if msg["event"] == "peaks":
                report["peaks"] = msg["peaks"]
                report["device"] = msg["device"]
                peaks_file.write_text(json.dumps(msg["peaks"]))
            elif msg["event"] == "start":
                if time.monotonic() - t_start > budget_s:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, 9)
                    report["error"] = f"the time budget of {budget_s:.0f} s ran out"
                    pending = _give_up(report, pending)
                    break
                current, since = msg["entry"], time.monotonic()
                print(f"[{time.monotonic() - t_start:6.1f}s] {current}", file=sys.stderr, flush=True)
            elif msg["event"] == "result":
                report["results"].append(msg["result"])
                pending.remove(msg["result"]["entry"])
                print(f"          {_summary(msg['result'])}", file=sys.stderr, flush=True)
                current, progress, since = None, True, time.monotonic()
    report["seconds"] = round(time.monotonic() - t_start, 1)
    (out / "corpus_check.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    (out / "corpus_check.md").write_text(render_markdown(report))
    peaks_file.unlink(missing_ok=True)
    return report


def _give_up(report: dict[str, Any], pending: list[str]) -> list[str]:
    """Record the entries still pending as not run, with the report's error; return the empty pending list."""
    for ident in pending:
        report["results"].append({"entry": ident, "status": "not_run", "error": report.get("error", "")})
    return []


def _summary(r: dict[str, Any]) -> str:
    """Return one line about a result."""
    if r.get("status") != "ok":
        detail = r.get("error") or next((c["problems"][0] for c in r.get("checks", []) if c["problems"]), "")
        if r.get("status") == "compile_failed":
            detail = r.get("build", {}).get("log", "")[:300]
        return f"{r.get('status')}: {detail}"
    t = r["timing"]
    rate = f"{t['tflops']:.1f} TFLOP/s" if t["roofline"] == "compute" else f"{t['gbps']:.0f} GB/s"
    return f"ok {t['kernel']['median_ms']:.3f} ms, {rate}, {t['speedup_vs_eager']:.2f}x eager"


def render_markdown(report: dict[str, Any]) -> str:
    """Return the report as Markdown: peaks, then one table row per entry."""
    lines = ["# Corpus and naive suite on the GPU", ""]
    dev = report.get("device", {})
    peaks = report.get("peaks")
    if dev:
        l2_mib = dev.get("l2_bytes", 0) / 2**20
        lines.append(
            f"Device: {dev.get('gpu')} ({dev.get('arch')}, {dev.get('sm_count')} SMs, L2 {l2_mib:.0f} MiB), "
            f"torch {dev.get('torch')}, NVRTC {dev.get('nvrtc')}, driver {dev.get('driver')}. "
            f"Run of {report.get('started')}, {report.get('seconds')} s."
        )
    if report.get("error"):
        lines.append(f"The run stopped early: {report['error']}.")
    if peaks:
        lines.append(
            f"Measured peaks: 1 GiB device copy {peaks['copy_gbps']:.0f} GB/s (read + write); cuBLAS float32 SGEMM "
            f"4096^3, TF32 off, {peaks['cublas_sgemm_tflops']:.1f} TFLOP/s."
        )
    lines += [
        "",
        "Times are medians at full size with the L2 flushed before each run (IQR in brackets). Memory-bound rows "
        "give GB/s of the fewest bytes the operator must move and their share of the copy bandwidth; compute-bound "
        "rows give TFLOP/s and their share of cuBLAS SGEMM. Targets apply to experts only.",
        "",
        "| entry | status | checks | kernel ms | eager ms | vs eager | rate | share of peak | target | regs / spills |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report.get("results", []):
        checks = r.get("checks", [])
        passed = sum(1 for c in checks if c["ok"])
        check_s = f"{passed}/{len(checks)}" if checks else ""
        b = r.get("build", {})
        regs = f"{b.get('registers', '')} / {b.get('spill_stores', '')}" if b.get("ok") else ""
        if r.get("status") != "ok":
            lines.append(f"| {r['entry']} | {_summary(r)[:120]} | {check_s} | | | | | | | {regs} |")
            continue
        t = r["timing"]
        k, e = t["kernel"], t["eager"]
        if t["roofline"] == "compute":
            rate, share = f"{t['tflops']:.2f} TFLOP/s", f"{t['pct_cublas']:.0f}% of cuBLAS"
        else:
            rate, share = f"{t['gbps']:.0f} GB/s", f"{t['pct_copy']:.0f}% of copy"
        target = ""
        if "target" in r:
            tg = r["target"]
            target = "met" if tg["met"] else f"missed by {tg['gap_pct_points']:.0f} pts"
            if not tg["not_slower_than_eager"]:
                target += ", slower than eager"
        lines.append(
            f"| {r['entry']} | ok | {check_s} | {k['median_ms']:.3f} [{k['iqr_ms']:.3f}] | "
            f"{e['median_ms']:.3f} [{e['iqr_ms']:.3f}] | {t['speedup_vs_eager']:.2f}x | {rate} | {share} | "
            f"{target} | {regs} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the parent, the child, or the listing."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "bench" / "results" / "corpus_check"))
    ap.add_argument("--only", default="", help="comma-separated operator names or idents (expert/scan)")
    ap.add_argument("--no-naive", action="store_true", help="check the corpus experts only")
    ap.add_argument("--no-experts", action="store_true", help="check the naive suite only")
    ap.add_argument("--suite", default=None, help="the naive suite folder (default bench/suite; or bench/suite_ood)")
    ap.add_argument("--deadline-s", type=float, default=DEFAULT_DEADLINE_S, help="per-entry limit")
    ap.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="stop starting entries after this")
    ap.add_argument("--list", action="store_true", help="list the entries and their parameters, then exit")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--peaks", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        return child_main([s for s in args.child.split(",") if s], Path(args.peaks) if args.peaks else None)
    if args.suite:
        os.environ[SUITE_ENV] = str(Path(args.suite).resolve())
    only = {s.strip() for s in args.only.split(",") if s.strip()} or None
    entries = discover(only, naive=not args.no_naive, experts=not args.no_experts)
    if args.list:
        for e in entries:
            ns = load_problem(e.problem)
            params = parse_signature(e.source.read_text(encoding="utf-8"), ns["kernel"])
            sig = ", ".join(f"{p.ctype}{'*' if p.pointer else ''} {p.name}" for p in params)
            print(f"{e.ident:24} {ns['kernel']}({sig})  presets: {', '.join(presets(ns))}")
        return 0
    if not entries:
        print("corpus_check: no entries match", file=sys.stderr)
        return 2
    report = parent_main(entries, Path(args.out), args.deadline_s, args.budget_s)
    bad = [r for r in report["results"] if r.get("status") != "ok"]
    print(render_markdown(report))
    return 1 if bad or "error" in report else 0


if __name__ == "__main__":
    sys.exit(main())
