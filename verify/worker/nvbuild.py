"""Compiling one kernel to a cubin: NVRTC through the CUDA Python bindings, with `nvcc -cubin` as the fallback.

This module runs inside the worker process (it imports only the standard library, the CUDA bindings and
`warpwise.verify.types`). NVRTC is asked for machine code (a cubin) for one architecture, the GPU's own or
`sm_90` on a machine without a GPU, and for the resource report of `ptxas -v`, from which registers, spills,
shared memory and stack size are read. The kernel is named by an NVRTC *name expression* (`saxpy`,
`reduce<float, 256>`), which also instantiates templates; NVRTC returns the lowered (mangled) name that the
driver loads.

When NVRTC cannot build the device-only extraction (a blanked header the device code needs, a construct NVRTC
rejects in JIT mode, torch headers), nvcc builds the whole file (`Source.host_text`) with the same project
flags; every `BuildInfo` says which builder produced it (`builder`) and why (`builder_reason`). The CUDA
toolkit's folders and nvcc are located with `cuda-pathfinder` (installed with cuda-bindings) when it is there.

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
    dirs: list[str] = []
    try:
        from cuda import pathfinder

        # curand's device API (`curand_kernel.h`) is device code kernels include; its wheel has its own folder.
        for lib in ("cudart", "cccl", "curand"):
            try:
                found = pathfinder.locate_nvidia_header_directory(lib)
            except Exception:
                if lib != "curand":
                    raise
                found = None
            if found is not None and found.abs_path not in dirs:
                dirs.append(found.abs_path)
    except Exception:
        dirs = []
    if dirs:
        return dirs
    roots: list[str] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    nvcc = nvcc_path()
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots.append("/usr/local/cuda")
    for root in roots:
        inc = Path(root) / "include"
        if (inc / "cuda_fp16.h").is_file() and str(inc) not in dirs:
            dirs.append(str(inc))
            if (inc / "cccl").is_dir():
                dirs.append(str(inc / "cccl"))
    return dirs


def nvcc_path() -> str | None:
    """Return the nvcc executable (located by cuda-pathfinder, else on PATH), or None."""
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_binary_utility("nvcc")
        if found:
            return str(found)
    except Exception:
        pass
    return shutil.which("nvcc")


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
    nvcc = nvcc_path()
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


def _options(arch: str, source: Source | None = None) -> list[str]:
    """Return NVRTC's options: the architecture, the project's flags, then the toolkit's include folders."""
    flags = list(source.flags) if source is not None else []
    opts = [f"--gpu-architecture={arch}", "-Xptxas=-v", "-default-device"]
    if not any(f.startswith(("--std=", "-std=")) for f in flags):
        opts.append("--std=c++17")
    opts += flags
    opts += list(source.nvrtc_flags) if source is not None else []
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
        for part in (source.to_json(), arch, compiler, " ".join(_options(arch, source))):
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


_ARCH_SPECIFIC = re.compile(r"\b(?:wgmma|setmaxnreg)\.")
"""PTX instructions only an architecture-specific target (`sm_90a`) has: Hopper's warpgroup tensor-core MMA and
register reallocation, written in inline assembly."""


def target_arch(text: str, arch: str) -> str:
    """Return the target to build a kernel's `text` for on a GPU of `arch`: `sm_90a` for a kernel on sm_90 whose
    inline assembly uses instructions only the architecture-specific target has, else `arch` itself. (An `a` cubin
    runs only on its own architecture, which is the GPU it is built for here.)"""
    if arch == "sm_90" and _ARCH_SPECIFIC.search(text):
        return "sm_90a"
    return arch


def build(source: Source, arch: str, cache: BuildCache | None = None) -> Build:
    """Compile one kernel for `arch` (e.g. `sm_90`): NVRTC first, `nvcc -cubin` when NVRTC is missing or fails."""
    arch = target_arch(source.text, arch)
    nvrtc_label = nvrtc_version()
    nvcc_label = nvcc_version() if (nvrtc_label is None or source.host_text) else None
    compiler = " + ".join(x for x in (nvrtc_label, nvcc_label) if x)
    if not compiler:
        info = BuildInfo(False, "none", 0.0, "no CUDA compiler: neither NVRTC (cuda-bindings) nor nvcc was found")
        return Build(b"", info)
    key = cache.key(source, arch, compiler) if cache else ""
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return Build(hit.cubin, _replace(hit.info, cached=True))
    result = _build_any(source, arch, nvrtc_label, nvcc_label)
    if cache is not None:
        cache.put(key, result)
    return result


def _build_any(source: Source, arch: str, nvrtc_label: str | None, nvcc_label: str | None) -> Build:
    """Build with NVRTC, then with nvcc on the whole file when NVRTC is missing or fails; say which and why."""
    if nvrtc_label is not None and "?" in source.name_expression and nvcc_label is not None:
        built = _build_nvcc(source, source.host_text or source.text, arch, nvcc_label)
        made_by = f"{source.host_origin}, which includes the file," if source.host_origin else "the file itself"
        reason = (
            f"the template arguments of `{source.name_expression}` are unknown (no launch in the file gives them), "
            f"so nvcc built the instances {made_by} makes"
        )
        return Build(built.cubin, _replace(built.info, builder="nvcc", builder_reason=reason))
    if nvrtc_label is not None:
        first = _build_nvrtc(source, arch, nvrtc_label)
        if first.info.ok:
            return Build(first.cubin, _replace(first.info, builder="nvrtc", builder_reason="NVRTC built the kernel"))
        if nvcc_label is None:
            reason = "NVRTC failed and nvcc was not found for the fallback"
            return Build(b"", _replace(first.info, builder="nvrtc", builder_reason=reason))
        text = source.host_text or source.text
        second = _build_nvcc(source, text, arch, nvcc_label)
        why = _first_error(first.info.log)
        if second.info.ok:
            reason = f"NVRTC failed ({why}); nvcc built the whole file with the same flags"
            return Build(second.cubin, _replace(second.info, builder="nvcc", builder_reason=reason))
        log = f"{second.info.log}\n--- NVRTC (device code only) ---\n{first.info.log}".strip()
        reason = f"NVRTC failed ({why}) and nvcc failed too ({_first_error(second.info.log)})"
        return Build(b"", _replace(second.info, log=log, builder="nvcc", builder_reason=reason))
    assert nvcc_label is not None
    built = _build_nvcc(source, source.host_text or source.text, arch, nvcc_label)
    reason = "NVRTC is not installed (pip install cuda-bindings); nvcc built the file"
    return Build(built.cubin, _replace(built.info, builder="nvcc", builder_reason=reason))


def _first_error(log: str) -> str:
    """Return the first error line of a compiler log (or its first line)."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln:
            return ln[:200]
    return lines[0][:200] if lines else "no log"


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
        opts = [o.encode() for o in _options(arch, source)]
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


def _build_nvcc(source: Source, text: str, arch: str, compiler: str) -> Build:
    """Compile `text` with `nvcc -cubin` and the project's flags; the kernel is found among ptxas's entries.

    A template kernel is instantiated by taking its address at the end of the file.
    """
    nvcc = nvcc_path()
    assert nvcc is not None
    t0 = time.perf_counter()
    name = source.name_expression
    unknown = "?" in name
    if "<" in name and not unknown:
        text = f"{text}\nstatic void *warpwise_instance_ = (void *)&{name};\n"
    flags = list(source.flags)
    if not any(f.startswith(("--std=", "-std=")) for f in flags):
        flags.append("--std=c++17")
    filename = Path(source.filename).name or "kernel.cu"
    if not filename.endswith(".cu"):
        filename += ".cu"
    whole = _nvcc_file(nvcc, text, filename, arch, [*flags, *source.nvcc_flags])
    if isinstance(whole, str):
        return Build(b"", BuildInfo(False, compiler, time.perf_counter() - t0, whole))
    ok, log, cubin, seconds = whole
    if not ok:
        return Build(b"", BuildInfo(False, compiler, seconds, log))
    entries = list(dict.fromkeys(_PTXAS_ENTRY.findall(log)))
    # Unknown template arguments: take the first instance the file itself instantiates, and say so.
    matches = match_entries(entries, name.split("<", 1)[0])[:1] if unknown else match_entries(entries, name)
    if unknown and matches:
        log += f"\nthe template arguments of `{name}` are unknown; the file's own instance `{matches[0]}` was built"
    if len(matches) != 1:
        msg = f"{log}\nnvcc built {len(matches)} entries named `{name}`; expected exactly one"
        return Build(b"", BuildInfo(False, compiler, seconds, msg))
    res = parse_ptxas(log, matches[0])
    info = BuildInfo(True, compiler, seconds, log, lowered_name=matches[0], **res)
    return Build(cubin, info)


def run_group(cmd: list[str], timeout_s: float, cwd: str | None = None) -> tuple[int, str]:
    """Run a compiler in its own process group; past the limit the whole group is killed (nvcc's cicc too).

    Returns the exit status and stdout + stderr; raises `subprocess.TimeoutExpired` when the limit passed.
    """
    import signal

    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return proc.returncode, out or ""


_NVCC_FILES: dict[str, tuple[bool, str, bytes, float]] = {}
"""Whole-file nvcc builds of this process, newest last (see `_nvcc_file`)."""
_NVCC_FILES_MAX = 8


_FileBuild = tuple[bool, str, bytes, float]


def _nvcc_file(nvcc: str, text: str, filename: str, arch: str, flags: list[str]) -> _FileBuild | str:
    """Build a whole file with `nvcc -cubin` once: (ok, log, cubin, seconds), or why nvcc could not run.

    The kernels of one file share its build (a torch extension's file takes a minute to parse), so the outcome is
    kept in memory by a hash of the text, the flags and the architecture.
    """
    key = hashlib.sha256("\0".join([text, filename, arch, *flags]).encode("utf-8", "surrogatepass")).hexdigest()
    hit = _NVCC_FILES.get(key)
    if hit is not None:
        return hit
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="warpwise-nvcc-") as tmp:
        src = Path(tmp) / filename
        src.write_text(text)
        out = Path(tmp) / "kernel.cubin"
        # Relative names (nvcc runs in the folder), so its messages name the user's file as NVRTC's do.
        cmd = [nvcc, "-cubin", f"-arch={arch}", *flags, "-Xptxas", "-v", "-o", out.name, filename]
        try:
            returncode, output = run_group(cmd, 600.0, tmp)
        except subprocess.TimeoutExpired:
            # Kept too: the file's other kernels would wait as long again.
            _NVCC_FILES[key] = (False, "nvcc ran past 600 s", b"", time.perf_counter() - t0)
            return "nvcc ran past 600 s"
        except OSError as exc:
            return f"nvcc could not run: {exc}"
        log = output.strip()
        ok = returncode == 0 and out.is_file()
        cubin = b""
        if ok:
            try:
                cubin = out.read_bytes()
            except OSError:
                ok, log = False, f"{log}\ncould not read the cubin"
    result = (ok, log if log or ok else f"nvcc exited with {returncode}", cubin, time.perf_counter() - t0)
    if len(_NVCC_FILES) >= _NVCC_FILES_MAX:
        _NVCC_FILES.pop(next(iter(_NVCC_FILES)))
    _NVCC_FILES[key] = result
    return result


_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|long long|short|char|bool)\)")


def _normal(expr: str) -> str:
    """Return a name expression without spaces, integer casts and literal suffixes, for comparison."""
    s = _CAST.sub("", expr.replace(" ", ""))
    return re.sub(r"(?<=\d)[uUlL]+\b", "", s).removeprefix("::")


def match_entries(entries: list[str], name: str) -> list[str]:
    """Return the mangled entries that are the kernel `name` (`k`, `ns::k`, `k<float, 256>`)."""
    simple = ":" not in name and "<" not in name
    plain = [e for e in entries if e == name or (simple and e.startswith(f"_Z{len(name)}{name}"))]
    if plain:
        return plain
    demangled = _demangle(entries)
    want = _normal(name)
    base = want.split("<", 1)[0]
    out = []
    for mangled, text in zip(entries, demangled, strict=True):
        sig = text.removeprefix("void ").strip()
        head = sig[: _call_paren(sig)]
        if _normal(head) == want or ("<" not in want and head.split("<", 1)[0] == base):
            out.append(mangled)
    return out


def _call_paren(sig: str) -> int:
    """Return the index of the parenthesis that opens a demangled signature's parameters."""
    depth = 0
    for i, ch in enumerate(sig):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return i
    return len(sig)


def _demangle(names: list[str]) -> list[str]:
    """Return the demangled forms of mangled names (c++filt when installed, else the names themselves)."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return list(names)
    try:
        proc = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return list(names)
    out = proc.stdout.splitlines()
    return out if len(out) == len(names) else list(names)
