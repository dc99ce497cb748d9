"""Compiling one kernel to a cubin: NVRTC through the CUDA Python bindings, with nvcc as the fallback.

This module runs inside the worker process (it imports only the standard library, the CUDA bindings and
`warpwise.verify.types`). NVRTC is asked for machine code (a cubin) for one architecture, the GPU's own or
`sm_90` on a machine without a GPU, and for the resource report of `ptxas -v`, from which registers, spills,
shared memory and stack size are read. The kernel is named by an NVRTC *name expression* (`saxpy`,
`reduce<float, 256>`), which also instantiates templates; NVRTC returns the lowered (mangled) name that the
driver loads.

Builds are cached on disk by a hash of everything that affects the output (source, name expression, options,
compiler version), so the same original kernel is compiled once however many candidates are checked against it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from warpwise.verify.types import BuildInfo, Source

_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")


@dataclass(frozen=True, slots=True)
class Build:
    """A finished build: the cubin (empty when the build failed) and its report."""

    cubin: bytes
    info: BuildInfo


def cuda_include_dirs() -> list[str]:
    """Return the CUDA toolkit include folders NVRTC should search (the headers are not built into NVRTC)."""
    roots: list[str] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots.append("/usr/local/cuda")
    dirs: list[str] = []
    for root in roots:
        inc = Path(root) / "include"
        if (inc / "cuda_fp16.h").is_file() and str(inc) not in dirs:
            dirs.append(str(inc))
            if (inc / "cccl").is_dir():
                dirs.append(str(inc / "cccl"))
    return dirs


def nvrtc_version() -> str | None:
    """Return NVRTC's version as `NVRTC 13.0`, or None when NVRTC cannot be loaded."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        return None
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:
        return None
    if int(err) != 0:
        return None
    return f"NVRTC {major}.{minor}"


def nvcc_version() -> str | None:
    """Return nvcc's release as `nvcc 13.0`, or None when nvcc is not installed."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return f"nvcc {m.group(1)}" if m else "nvcc"


def toolkit_label() -> str:
    """Return the compiler that builds will use, with its version."""
    return nvrtc_version() or nvcc_version() or "no CUDA compiler"


def parse_ptxas(log: str, entry: str | None) -> dict[str, int | None]:
    """Read registers, shared memory, stack and spills of one entry function from a `ptxas -v` log."""
    sections = re.split(r"(?=ptxas info\s*: Compiling entry function)", log)
    chosen = ""
    for sec in sections:
        m = _PTXAS_ENTRY.search(sec)
        if m and (entry is None or m.group(1) == entry):
            chosen = sec
            break
    if not chosen:
        chosen = log
    regs = _PTXAS_REGS.search(chosen)
    smem = _PTXAS_SMEM.search(chosen)
    frame = _PTXAS_FRAME.search(chosen)
    return {
        "registers": int(regs.group(1)) if regs else None,
        "shared_bytes": int(smem.group(1)) if smem else (0 if regs else None),
        "stack_bytes": int(frame.group(1)) if frame else None,
        "spill_stores": int(frame.group(2)) if frame else None,
        "spill_loads": int(frame.group(3)) if frame else None,
    }


def _options(arch: str) -> list[str]:
    """Return the compiler options every build uses."""
    opts = [f"--gpu-architecture={arch}", "--std=c++17", "-Xptxas=-v", "-default-device"]
    opts += [f"-I{d}" for d in cuda_include_dirs()]
    return opts


class BuildCache:
    """Cubins and build reports on disk, keyed by a hash of source, name expression, options and compiler."""

    def __init__(self, folder: str | None) -> None:
        self.folder = Path(folder) if folder else None
        self._memory: dict[str, Build] = {}

    def key(self, source: Source, arch: str, compiler: str) -> str:
        """Return the cache key of one build."""
        h = hashlib.sha256()
        for part in (source.text, source.name_expression, arch, compiler, " ".join(_options(arch))):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def get(self, key: str) -> Build | None:
        """Return a cached build, if any."""
        if key in self._memory:
            return self._memory[key]
        if self.folder is None:
            return None
        meta = self.folder / f"{key}.json"
        blob = self.folder / f"{key}.cubin"
        try:
            info = BuildInfo.from_dict(json.loads(meta.read_text()))
            cubin = blob.read_bytes() if info.ok else b""
        except (OSError, ValueError, TypeError):
            return None
        build = Build(cubin, info)
        self._memory[key] = build
        return build

    def put(self, key: str, build: Build) -> None:
        """Store a build (atomically: written to a temporary file, then renamed)."""
        self._memory[key] = build
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for suffix, data in ((".cubin", build.cubin), (".json", build.info.to_json().encode())):
                fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, self.folder / f"{key}{suffix}")
        except OSError:
            return


def build(source: Source, arch: str, cache: BuildCache | None = None) -> Build:
    """Compile one kernel for `arch` (e.g. `sm_90`) with NVRTC, or nvcc when NVRTC is missing."""
    compiler = nvrtc_version()
    use_nvrtc = compiler is not None
    if compiler is None:
        compiler = nvcc_version()
    if compiler is None:
        info = BuildInfo(False, "none", 0.0, "no CUDA compiler: neither NVRTC (cuda-bindings) nor nvcc was found")
        return Build(b"", info)
    key = cache.key(source, arch, compiler) if cache else ""
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return Build(hit.cubin, _replace(hit.info, cached=True))
    result = _build_nvrtc(source, arch, compiler) if use_nvrtc else _build_nvcc(source, arch, compiler)
    if cache is not None:
        cache.put(key, result)
    return result


def _replace(info: BuildInfo, **changes: object) -> BuildInfo:
    """Return a copy of a build report with some fields replaced."""
    import dataclasses

    return dataclasses.replace(info, **changes)


def _build_nvrtc(source: Source, arch: str, compiler: str) -> Build:
    """Compile with NVRTC to a cubin and read the lowered name of the kernel."""
    from cuda.bindings import nvrtc

    t0 = time.perf_counter()
    err, prog = nvrtc.nvrtcCreateProgram(source.text.encode(), source.filename.encode(), 0, [], [])
    if int(err) != 0:
        return Build(b"", BuildInfo(False, compiler, time.perf_counter() - t0, f"nvrtcCreateProgram failed: {err}"))
    try:
        name = source.name_expression.encode()
        nvrtc.nvrtcAddNameExpression(prog, name)
        opts = [o.encode() for o in _options(arch)]
        (cerr,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = buf.rstrip(b"\0 ").decode("utf-8", "replace")
        seconds = time.perf_counter() - t0
        if int(cerr) != 0:
            return Build(b"", BuildInfo(False, compiler, seconds, log or str(cerr)))
        lerr, lowered = nvrtc.nvrtcGetLoweredName(prog, name)
        if int(lerr) != 0:
            msg = f"{log}\nthe kernel `{source.name_expression}` was not found in the compiled source ({lerr})"
            return Build(b"", BuildInfo(False, compiler, seconds, msg.strip()))
        lowered_s = lowered.decode() if isinstance(lowered, bytes) else str(lowered)
        _, csize = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * csize
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        res = parse_ptxas(log, lowered_s)
        info = BuildInfo(True, compiler, seconds, log, lowered_name=lowered_s, **res)
        return Build(bytes(cubin), info)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _build_nvcc(source: Source, arch: str, compiler: str) -> Build:
    """Compile with nvcc to a cubin; the kernel is found by its entry name in the ptxas report.

    Template kernels need NVRTC's name expressions to be instantiated, so nvcc builds only plain kernels.
    """
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    t0 = time.perf_counter()
    if "<" in source.name_expression:
        msg = f"`{source.name_expression}` is a template instance; building it needs NVRTC (pip install cuda-bindings)"
        return Build(b"", BuildInfo(False, compiler, 0.0, msg))
    with tempfile.TemporaryDirectory(prefix="warpwise-nvcc-") as tmp:
        src = Path(tmp) / source.filename
        src.write_text(source.text)
        out = Path(tmp) / "kernel.cubin"
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", "-o", str(out), str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            return Build(b"", BuildInfo(False, compiler, time.perf_counter() - t0, "nvcc ran past 600 s"))
        log = (proc.stdout + proc.stderr).strip()
        seconds = time.perf_counter() - t0
        if proc.returncode != 0 or not out.is_file():
            return Build(b"", BuildInfo(False, compiler, seconds, log))
        entries = _PTXAS_ENTRY.findall(log)
        name = source.name_expression
        prefix = f"_Z{len(name)}{name}"
        matches = [e for e in entries if e == name or e.startswith(prefix)]
        if len(matches) != 1:
            msg = f"{log}\nnvcc built {len(matches)} entries named `{name}`; expected exactly one"
            return Build(b"", BuildInfo(False, compiler, seconds, msg))
        res = parse_ptxas(log, matches[0])
        info = BuildInfo(True, compiler, seconds, log, lowered_name=matches[0], **res)
        with contextlib.suppress(OSError):
            return Build(out.read_bytes(), info)
        return Build(b"", BuildInfo(False, compiler, seconds, f"{log}\ncould not read the cubin"))
