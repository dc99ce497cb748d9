"""Real-world builds: do the kernels of public CUDA repositories build, with the gate, as their own build builds them?

CPU only, compile-only. Reads exported mirrors of the repositories named in issue 17 from a folder
(`MIRRORS/<name>/...`, with `MIRRORS/commits.json` mapping each name to `[owner/repo, commit]`), and for every
kernel of every `.cu` / `.cuh` file records:

- **nvcc**: does `nvcc -cubin` build the file with the flags its repository's build uses (the recipe below, read
  from the repository's setup.py or CMakeLists.txt; the command is recorded); a `.cuh` is built through a
  one-line translation unit that includes it;
- **gate**: does the verification gate build the kernel (compile-only, `warpwise.verify.gate.prepare` then
  `nvbuild.build`), with which builder (NVRTC, or nvcc as the fallback) and why; a template kernel is built for
  every instantiation the file's launches (or `AT_DISPATCH_*` dtypes) give;
- **spec**: does a complete run spec come from the file's own host code (`resolve_spec`), and for a kernel with
  no spec, what is missing;
- the time of every build.

Run: `python bench/realworld_build.py MIRRORS [--phase nvcc|gate|report|all] [--state FILE] [--budget-s S]`.
Phases save into the state file as they go, so a run can be resumed; `report` writes
bench/results/realworld_build-<date>.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine

TORCH_EXTENSION_FLAGS = (
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
    "-DTORCH_API_INCLUDE_EXTENSION_H",
    "-DTORCH_EXTENSION_NAME=warpwise_bench",
)
"""What `torch.utils.cpp_extension.BuildExtension` adds to every nvcc command (its COMMON_NVCC_FLAGS)."""

_HALF_UNDEFS = (
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_BFLOAT16_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-U__CUDA_NO_BFLOAT162_OPERATORS__",
    "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
    "--expt-relaxed-constexpr",
    "--expt-extended-lambda",
    "--use_fast_math",
)


@dataclass(frozen=True)
class Recipe:
    """How a repository's own build compiles its CUDA files."""

    roots: tuple[str, ...]
    include_dirs: tuple[str, ...]
    defines: tuple[str, ...]
    nvcc_flags: tuple[str, ...]
    torch: bool
    where: str
    skip: tuple[str, ...] = ()
    arch: str = "sm_90"
    prelude: tuple[str, ...] = ()
    """Lines a translation unit puts before the file (what its real build's translation unit includes first)."""


RECIPES: dict[str, Recipe] = {
    "apex": Recipe(
        ("csrc", "apex/contrib/csrc"),
        ("csrc",),
        (),
        ("-O3", "--use_fast_math"),
        True,
        "setup.py: CUDAExtension per op, nvcc -O3 --use_fast_math (+ BuildExtension's flags), include csrc",
    ),
    "mamba": Recipe(
        ("csrc",),
        ("csrc/selective_scan",),
        (),
        ("-O3", *_HALF_UNDEFS),
        True,
        "setup.py: selective_scan_cuda, nvcc -O3 -std=c++17 -U__CUDA_NO_HALF_* ... --use_fast_math",
    ),
    "extension-cpp": Recipe(
        ("extension_cpp/csrc",),
        (),
        (),
        ("-O3",),
        True,
        "setup.py: CUDAExtension extension_cpp._C, nvcc -O3",
    ),
    "causal-conv1d": Recipe(
        ("csrc",),
        ("csrc",),
        (),
        ("-O3", *_HALF_UNDEFS),
        True,
        "setup.py: causal_conv1d_cuda, nvcc -O3 -std=c++17 -U__CUDA_NO_HALF_* ... --use_fast_math",
    ),
    "tiny-cuda-nn": Recipe(
        ("src", "include", "samples", "benchmarks"),
        (
            "include",
            "dependencies",
            "dependencies/cutlass/include",
            "dependencies/cutlass/tools/util/include",
            "dependencies/fmt/include",
        ),
        ("TCNN_MIN_GPU_ARCH=90", "TCNN_HALF_PRECISION=1"),
        ("--extended-lambda", "--expt-relaxed-constexpr"),
        False,
        "CMakeLists.txt: CUDA 17, --extended-lambda --expt-relaxed-constexpr, -DTCNN_MIN_GPU_ARCH, "
        "-DTCNN_HALF_PRECISION=1 (its default for sm_90), include "
        "include/ dependencies/ (cutlass and fmt are git submodules)",
    ),
    "exllamav2": Recipe(
        ("exllamav2/exllamav2_ext",),
        (),
        (),
        ("-lineinfo", "-O3"),
        True,
        "setup.py: exllamav2_ext, nvcc -lineinfo -O3",
    ),
}


def torch_include_dirs() -> list[str]:
    """Return torch's include folders and Python's (what a torch extension build passes).

    A CPU wheel of torch lacks `c10/cuda/impl/cuda_cmake_macros.h`, which a CUDA build of torch generates; a
    one-line stand-in is written to a temporary folder placed after torch's, and the result files say so.
    """
    try:
        from torch.utils.cpp_extension import include_paths
    except Exception:
        return []
    dirs = [*include_paths(), sysconfig.get_paths()["include"]]
    if not any((Path(d) / "c10/cuda/impl/cuda_cmake_macros.h").is_file() for d in dirs):
        dirs.append(str(_cmake_macros_stand_in()))
    return dirs


def _cmake_macros_stand_in() -> Path:
    """Write the stand-in for torch's generated CUDA config header once; return its include folder."""
    folder = Path(tempfile.gettempdir()) / "warpwise-torch-cuda-config"
    header = folder / "c10/cuda/impl/cuda_cmake_macros.h"
    if not header.is_file():
        header.parent.mkdir(parents=True, exist_ok=True)
        header.write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
    return folder


def files_of(root: Path, recipe: Recipe) -> list[Path]:
    """Return the `.cu` and `.cuh` files under a repository's CUDA roots."""
    out: list[Path] = []
    for sub in recipe.roots:
        base = root / sub
        if base.is_dir():
            out += sorted(p for p in base.rglob("*") if p.suffix in (".cu", ".cuh") and p.is_file())
    return list(dict.fromkeys(out))


FALLBACK_STATE: list[Path] = []
"""Where the fallback pass writes, when it runs beside the NVRTC pass (`--fallback-state`)."""

EXTRA_INCLUDE_DIRS: list[str] = []
"""Folders of headers the machine's toolkit lacks (the CUDA math libraries), from `--extra-include`."""


def repo_flags(root: Path, recipe: Recipe, file: Path) -> list[str]:
    """Return the flags the repository's build gives nvcc for one file (include folders absolute)."""
    dirs = [str(file.parent)] + [str(root / d) for d in recipe.include_dirs]
    if recipe.torch:
        dirs += torch_include_dirs()
    dirs += EXTRA_INCLUDE_DIRS
    flags = [f"-I{d}" for d in dirs] + [f"-D{d}" for d in recipe.defines] + ["-std=c++17"]
    if recipe.torch:
        flags += list(TORCH_EXTENSION_FLAGS)
    return flags + list(recipe.nvcc_flags)


def nvcc_build(
    root: Path, recipe: Recipe, file: Path, timeout_s: float, flags_of: Path | None = None
) -> dict[str, Any]:
    """Build one file with nvcc and the repository's flags; return the outcome and the command.

    `flags_of`: the file whose flags (include folders) are used, when `file` is a copy of it elsewhere.
    """
    from warpwise.verify.worker.nvbuild import nvcc_path, run_group

    nvcc = nvcc_path() or "nvcc"
    with tempfile.TemporaryDirectory(prefix="rw-nvcc-") as tmp:
        target = file
        if file.suffix == ".cuh" or recipe.prelude:
            target = Path(tmp) / (file.stem + "_include.cu")
            target.write_text("".join(f"{line}\n" for line in recipe.prelude) + f'#include "{file}"\n')
        cmd = [
            nvcc,
            "-cubin",
            f"-arch={recipe.arch}",
            *repo_flags(root, recipe, flags_of or file),
            "-o",
            f"{tmp}/out.cubin",
            str(target),
        ]
        t0 = time.perf_counter()
        try:
            returncode, log = run_group(cmd, timeout_s)
            ok = returncode == 0
        except subprocess.TimeoutExpired:
            ok, log = False, f"nvcc ran past {timeout_s:.0f} s"
        seconds = time.perf_counter() - t0
    timed_out = log.startswith("nvcc ran past")
    errors = [ln.strip() for ln in log.splitlines() if "error" in ln]
    shown = " ".join(c.replace(str(root), f"<{root.name}>") for c in cmd[1:-3])
    error = log if timed_out else (errors or [""])[0][:300]
    return {"ok": ok, "timed_out": timed_out, "seconds": round(seconds, 2), "error": error, "flags": shown}


def _load(state: Path) -> dict[str, Any]:
    """Return the saved state (or a fresh one)."""
    if state.is_file():
        return json.loads(state.read_text())
    return {"nvcc": {}, "gate": {}}


def _save(state: Path, data: dict[str, Any]) -> None:
    """Save the state atomically."""
    tmp = state.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, state)


FIRST: set[str] = set()
"""Files the gate phases take first (`--nvcc-ok-first`: those nvcc built, the target's denominator)."""


def _interleaved(mirrors: Path, repos: list[str]) -> list[tuple[str, Path]]:
    """Return every repository's files, taking one from each repository in turn (so a budget covers all)."""
    lists = [[(name, f) for f in files_of(mirrors / name, RECIPES[name])] for name in repos]
    out: list[tuple[str, Path]] = []
    while any(lists):
        for lst in lists:
            if lst:
                out.append(lst.pop(0))
    if REVERSE:
        out.reverse()
    return sorted(
        out, key=lambda nf: (f"{nf[0]}/{nf[1].relative_to(mirrors / nf[0])}" not in FIRST, not _has_kernels(nf[1]))
    )


REVERSE: list[bool] = []
"""Whether a phase walks the files from the other end (`--reverse`: a second process beside the first)."""


def _has_kernels(file: Path) -> bool:
    """Return whether a file defines a kernel (such files go first: the others add nothing to the rates)."""
    from warpwise.analyzers.build import analyze_text

    try:
        return bool(analyze_text(file.read_text(encoding="utf-8", errors="replace"), str(file)).kernels)
    except Exception:
        return True


def phase_nvcc(mirrors: Path, repos: list[str], state: Path, budget_s: float, timeout_s: float) -> None:
    """Build every file with nvcc and its repository's flags, until the budget is spent."""
    data = _load(state)
    t0 = time.perf_counter()
    for name, f in _interleaved(mirrors, repos):
        key = f"{name}/{f.relative_to(mirrors / name)}"
        if key in data["nvcc"]:
            continue
        if time.perf_counter() - t0 > budget_s:
            print(f"budget spent; {key} and later files not built", file=sys.stderr)
            break
        data["nvcc"][key] = nvcc_build(mirrors / name, RECIPES[name], f, timeout_s)
        print(f"nvcc {key}: {data['nvcc'][key]['ok']} {data['nvcc'][key]['seconds']} s", file=sys.stderr, flush=True)
        _save(state, data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirrors", type=Path, help="folder of exported repositories with commits.json")
    parser.add_argument("--phase", choices=("nvcc", "gate", "fallback", "spec", "report", "all"), default="all")
    parser.add_argument("--state", type=Path, default=Path("realworld_build-state.json"))
    parser.add_argument("--nvcc-state", type=Path, help="take the nvcc phase's results from this state file")
    parser.add_argument("--fallback-state", type=Path, help="the fallback pass's own state file (run beside gate)")
    parser.add_argument("--repos", default=",".join(RECIPES), help="comma-separated repository names")
    parser.add_argument("--budget-s", type=float, default=3600.0, help="wall-clock budget of each build phase")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="limit of one nvcc build")
    parser.add_argument(
        "--extra-include", action="append", default=[], help="a header folder the toolkit lacks (cuBLAS, cuSPARSE)"
    )
    parser.add_argument(
        "--nvcc-ok-first", action="store_true", help="gate phases take the files --nvcc-state says nvcc built first"
    )
    parser.add_argument("--reverse", action="store_true", help="walk the files from the other end")
    parser.add_argument("--tag", default="", help="suffix of the result files' name (a second report of a day)")
    args = parser.parse_args()
    if args.reverse:
        REVERSE.append(True)
    if args.nvcc_ok_first and args.nvcc_state is not None:
        FIRST.update(k for k, v in _load(args.nvcc_state)["nvcc"].items() if v["ok"])
    EXTRA_INCLUDE_DIRS.extend(str(Path(d).resolve()) for d in args.extra_include)
    if args.fallback_state is not None:
        FALLBACK_STATE.append(args.fallback_state)
    repos = [r for r in args.repos.split(",") if r in RECIPES and (args.mirrors / r).is_dir()]
    if args.phase in ("nvcc", "all"):
        phase_nvcc(args.mirrors, repos, args.state, args.budget_s, args.timeout_s)
    if args.phase in ("gate", "all"):
        phase_gate(args.mirrors, repos, args.state, args.budget_s)
    if args.phase in ("fallback", "all"):
        phase_gate(args.mirrors, repos, args.state, args.budget_s, fallback=True)
    if args.phase in ("spec", "all"):
        phase_spec(args.mirrors, args.state)
    if args.phase in ("report", "all"):
        if args.nvcc_state is not None or args.fallback_state is not None:
            merged = _load(args.state)
            if args.nvcc_state is not None:
                merged["nvcc"] = _load(args.nvcc_state)["nvcc"]
            if args.fallback_state is not None:
                merged["gate"].update(_load(args.fallback_state)["gate"])
            merged_state = args.state.with_suffix(".merged.json")
            _save(merged_state, merged)
            report(args.mirrors, repos, merged_state, sys.argv, args.tag)
        else:
            report(args.mirrors, repos, args.state, sys.argv, args.tag)
    return 0


def gate_flags(root: Path, recipe: Recipe) -> Any:
    """Return the project configuration a user of the repository would write: its include folders and flags."""
    from warpwise.verify.project import BuildFlags

    dirs = [str(root / d) for d in recipe.include_dirs] + EXTRA_INCLUDE_DIRS
    if recipe.torch:
        dirs += torch_include_dirs()
    return BuildFlags(
        include_dirs=tuple(dict.fromkeys(dirs)),
        defines=recipe.defines,
        nvcc_flags=(*(TORCH_EXTENSION_FLAGS if recipe.torch else ()), *recipe.nvcc_flags),
        origins=(f"the recipe of {root.name} ({recipe.where})",),
    )


MAX_INSTANCES = 4
"""Instantiations built per template kernel (the first ones the file's launches or dispatches give)."""


def gate_file(root: Path, recipe: Recipe, file: Path, cache: Any, fallback: bool = True) -> list[dict[str, Any]]:
    """Build every kernel of one file through the gate and resolve its spec; one record per kernel.

    Without `fallback` only NVRTC builds (the nvcc fallback is left for the `fallback` phase).
    """
    from dataclasses import replace

    from warpwise.analyzers.build import analyze_text
    from warpwise.verify.gate import Candidate, PreparedJob, _name_expression, kernel_instantiations, prepare
    from warpwise.verify.spec import ProblemSpec, kernel_function, resolve_spec
    from warpwise.verify.types import Options
    from warpwise.verify.worker import nvbuild

    text = file.read_text(encoding="utf-8", errors="replace")
    model = analyze_text(text, str(file))
    flags = gate_flags(root, recipe)
    out: list[dict[str, Any]] = []
    for k in dict.fromkeys(fn.name for fn in model.kernels):
        fn = kernel_function(model, k)
        assert fn is not None
        rec: dict[str, Any] = {"kernel": k, "template": bool(fn.template_params)}
        rec["launched_here"] = bool(model.launches_of(k))
        t0 = time.perf_counter()
        spec = resolve_spec(str(file), text, k, model)
        rec["spec"] = spec.source if isinstance(spec, ProblemSpec) else None
        rec["spec_missing"] = None if isinstance(spec, ProblemSpec) else list(spec.missing)[:6]
        rec["spec_message"] = "" if isinstance(spec, ProblemSpec) else spec.message[:300]
        rec["spec_s"] = round(time.perf_counter() - t0, 3)
        cand = Candidate(str(file), text, k, text, str(file), flags=flags)
        prepared = prepare(cand, Options(compile_only=True))
        if not isinstance(prepared, PreparedJob):
            rec["builds"] = [{"ok": False, "error": prepared.message[:300]}]
            out.append(rec)
            continue
        found = kernel_instantiations(text, str(file), k, model, flags.include_dirs) if fn.template_params else [()]
        instances = found[:MAX_INSTANCES]
        rec["parse_errors"] = list(prepared.parse_errors)
        if fn.template_params:
            from warpwise.verify import includers

            rec["instances_from"] = includers.origin(str(file), text, k).replace(str(root), f"<{root.name}>")
        builds = []
        for args in instances:
            name = _name_expression(text, fn.base, k, args)
            source = replace(prepared.job.original, name_expression=name)
            if fallback:
                b = nvbuild.build(source, "sm_90", cache)
            elif "?" in name:
                b = nvbuild.Build(b"", nvbuild.BuildInfo(False, "", 0.0, "needs the nvcc fallback", builder="none"))
            else:
                b = nvbuild._build_any(source, "sm_90", nvbuild.nvrtc_version(), None)
            info = b.info
            builds.append(
                {
                    "name": name,
                    "ok": info.ok,
                    "builder": info.builder,
                    "reason": info.builder_reason[:300],
                    "seconds": round(info.seconds, 2),
                    "cached": info.cached,
                    "error": "" if info.ok else nvbuild._first_error(info.log),
                    "fallback_tried": fallback,
                }
            )
        rec["builds"] = builds
        out.append(rec)
    return out


def phase_gate(mirrors: Path, repos: list[str], state: Path, budget_s: float, fallback: bool = False) -> None:
    """Build every kernel through the gate and resolve its spec, until the budget is spent.

    The first pass builds with NVRTC only; the `fallback` pass rebuilds the files with an NVRTC failure through
    the whole gate (nvcc as the fallback), so a budget first covers every kernel with the cheap builder.
    """
    from warpwise.verify.worker.nvbuild import BuildCache

    data = _load(state)
    out_state = FALLBACK_STATE[0] if fallback and FALLBACK_STATE else state
    if out_state != state:
        data = _load(out_state)
    cache = BuildCache(str(state.with_suffix(".builds")))
    t0 = time.perf_counter()
    for name, f in _interleaved(mirrors, repos):
        key = f"{name}/{f.relative_to(mirrors / name)}"
        # The fallback pass may run beside the NVRTC pass: it reads that pass's latest results each time.
        first = _load(state)["gate"] if out_state != state else data["gate"]
        done = data["gate"].get(key) if not fallback else (data["gate"].get(key) or first.get(key))
        if not fallback and done is not None:
            continue
        if fallback and (
            done is None or done.get("fallback") or all(b["ok"] for k in done["kernels"] for b in k["builds"])
        ):
            continue
        if time.perf_counter() - t0 > budget_s:
            print(f"budget spent; {key} and later files not built by the gate", file=sys.stderr)
            break
        t1 = time.perf_counter()
        try:
            data["gate"][key] = {"kernels": gate_file(mirrors / name, RECIPES[name], f, cache, fallback)}
        except Exception as exc:
            data["gate"][key] = {"kernels": [], "error": f"{type(exc).__name__}: {exc}"}
        data["gate"][key]["fallback"] = fallback
        data["gate"][key]["seconds"] = round(time.perf_counter() - t1, 2)
        ks = data["gate"][key]["kernels"]
        good = sum(all(b["ok"] for b in k["builds"]) for k in ks)
        print(f"gate {key}: {good}/{len(ks)} kernels build", file=sys.stderr, flush=True)
        _save(out_state, data)


def spec_record(file: Path, kernel: str, model: Any, text: str) -> dict[str, Any]:
    """Return how a kernel's run spec resolves from the file's own host code (or its callers in the project)."""
    from warpwise.verify.spec import ProblemSpec, resolve_spec

    t0 = time.perf_counter()
    spec = resolve_spec(str(file), text, kernel, model)
    rec: dict[str, Any] = {"launched_here": bool(model.launches_of(kernel))}
    rec["spec"] = spec.source if isinstance(spec, ProblemSpec) else None
    rec["spec_origin"] = spec.origin if isinstance(spec, ProblemSpec) else ""
    rec["spec_notes"] = list(spec.notes) if isinstance(spec, ProblemSpec) else []
    rec["spec_missing"] = None if isinstance(spec, ProblemSpec) else list(spec.missing)[:6]
    rec["spec_message"] = "" if isinstance(spec, ProblemSpec) else spec.message[:300]
    rec["spec_annotation"] = "" if isinstance(spec, ProblemSpec) else spec.annotation[:300]
    rec["spec_s"] = round(time.perf_counter() - t0, 3)
    return rec


def phase_spec(mirrors: Path, state: Path) -> None:
    """Resolve every kernel's spec again with the current code (specs are cheap; builds are kept)."""
    from warpwise.analyzers.build import analyze_text

    data = _load(state)
    for key, g in data["gate"].items():
        name, rel = key.split("/", 1)
        file = mirrors / name / rel
        text = file.read_text(encoding="utf-8", errors="replace")
        model = analyze_text(text, str(file))
        for k in g["kernels"]:
            try:
                k.update(spec_record(file, k["kernel"], model, text))
            except Exception as exc:
                k.update({"spec": None, "spec_missing": ["(inference failed)"], "spec_message": f"{exc}"[:300]})
        print(f"spec {key}", file=sys.stderr, flush=True)
    _save(state, data)


def _pct(a: int, b: int) -> str:
    """Return `a/b (p%)`."""
    return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else f"{a}/0 (-)"


def summarize(data: dict[str, Any], repos: list[str]) -> dict[str, Any]:
    """Return the rates per repository and overall."""
    rows: dict[str, dict[str, Any]] = {}
    for repo in [*repos, "all"]:
        r = {
            "files": 0,
            "files_nvcc_checked": 0,
            "files_nvcc_timed_out": 0,
            "files_nvcc_ok": 0,
            "kernels": 0,
            "kernels_in_nvcc_ok_files": 0,
            "gate_ok": 0,
            "gate_ok_nvrtc": 0,
            "gate_ok_nvcc": 0,
            "gate_ok_all_files": 0,
            "gate_pending": 0,
            "gate_pending_all_files": 0,
            "templates": 0,
            "template_instances": 0,
            "template_instances_ok": 0,
            "launched_here": 0,
            "launched_here_spec": 0,
            "spec_any": 0,
            "nvrtc_s": [],
            "nvcc_fallback_s": [],
            "nvcc_file_s": [],
        }
        for key, g in data["gate"].items():
            if repo != "all" and not key.startswith(repo + "/"):
                continue
            r["files"] += 1
            nv = data["nvcc"].get(key)
            if nv is not None and (nv.get("timed_out") or nv["error"].startswith("nvcc ran past")):
                r["files_nvcc_timed_out"] += 1
                nv = None
            if nv is not None:
                r["files_nvcc_checked"] += 1
                r["files_nvcc_ok"] += int(nv["ok"])
                r["nvcc_file_s"].append(nv["seconds"])
            for k in g["kernels"]:
                r["kernels"] += 1
                ok = bool(k["builds"]) and all(b["ok"] for b in k["builds"])
                via_nvrtc = ok and all(b.get("builder") == "nvrtc" for b in k["builds"])
                r["gate_ok_all_files"] += int(ok)
                for b in k["builds"]:
                    if b.get("ok") and not b.get("cached"):
                        (r["nvrtc_s"] if b["builder"] == "nvrtc" else r["nvcc_fallback_s"]).append(b["seconds"])
                if k["template"]:
                    r["templates"] += 1
                    r["template_instances"] += len(k["builds"])
                    r["template_instances_ok"] += sum(b["ok"] for b in k["builds"])
                timed_out = any("ran past" in (b.get("error") or "") for b in k["builds"])
                pending = not ok and (not g.get("fallback", True) or timed_out)
                r["gate_pending_all_files"] += int(pending)
                if nv is not None and nv["ok"]:
                    r["kernels_in_nvcc_ok_files"] += 1
                    r["gate_ok"] += int(ok)
                    r["gate_ok_nvrtc"] += int(via_nvrtc)
                    r["gate_ok_nvcc"] += int(ok and not via_nvrtc)
                    r["gate_pending"] += int(pending)
                r["launched_here"] += int(k["launched_here"])
                r["launched_here_spec"] += int(k["launched_here"] and k["spec"] is not None)
                r["spec_any"] += int(k["spec"] is not None)
        for t in ("nvrtc_s", "nvcc_fallback_s", "nvcc_file_s"):
            vals = sorted(r[t])
            r[t] = {"median": vals[len(vals) // 2] if vals else None, "max": vals[-1] if vals else None, "n": len(vals)}
        rows[repo] = r
    return rows


def report(mirrors: Path, repos: list[str], state: Path, argv: list[str], tag: str = "") -> None:
    """Write bench/results/realworld_build-<date>.{json,md}."""
    data = _load(state)
    commits = json.loads((mirrors / "commits.json").read_text()) if (mirrors / "commits.json").is_file() else {}
    rows = summarize(data, repos)
    from warpwise.verify.worker.nvbuild import nvcc_version, nvrtc_version

    date = dt.date.today().isoformat()
    result = {
        "date": date,
        "command": "python " + " ".join(argv),
        "machine": machine(),
        "compilers": {"nvrtc": nvrtc_version(), "nvcc": nvcc_version()},
        "arch": "sm_90 (compile-only, no GPU)",
        "repositories": {
            r: {
                "repo": commits.get(r, ["?", "?"])[0],
                "commit": commits.get(r, ["?", "?"])[1],
                "build_recipe": RECIPES[r].where,
            }
            for r in repos
        },
        "extra_include_dirs": EXTRA_INCLUDE_DIRS,
        "summary": rows,
        "files": {"nvcc": data["nvcc"], "gate": data["gate"]},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"realworld_build-{date}{tag}"
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    out.with_suffix(".md").write_text(_markdown(result) + "\n")
    print(f"wrote {out}.json and .md", file=sys.stderr)


def _markdown(result: dict[str, Any]) -> str:
    """Return the human-readable report."""
    rows = result["summary"]
    lines = [
        f"# Real-world builds ({result['date']})",
        "",
        f"Command: `{result['command']}`  ",
        f"Compilers: {result['compilers']['nvrtc']}, {result['compilers']['nvcc']}; {result['arch']}; "
        f"CPU: {result['machine'].get('cpu', '?')}",
        "",
        "| repository | commit | build recipe |",
        "| --- | --- | --- |",
    ]
    for r in result["repositories"].values():
        lines.append(f"| {r['repo']} | `{r['commit'][:12]}` | {r['build_recipe']} |")
    lines += [
        "",
        "Per kernel: the gate's build counts only kernels of files that nvcc builds with the repository's flags "
        "(the target's denominator); a template kernel counts as built when every instantiation tried built.",
        "",
        "| repository | files (nvcc checked / ok / timed out) | kernels | in nvcc-ok files | gate builds "
        "| with NVRTC | via nvcc fallback | NVRTC failed, fallback not run or timed out | template instances ok "
        "| launched here "
        "| spec from host code |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in rows.items():
        n = r["kernels_in_nvcc_ok_files"]
        lines.append(
            f"| {name} | {r['files']} ({r['files_nvcc_checked']} / {r['files_nvcc_ok']} / "
            f"{r['files_nvcc_timed_out']}) | {r['kernels']} | {n} "
            f"| {_pct(r['gate_ok'], n)} | {_pct(r['gate_ok_nvrtc'], n)} | {_pct(r['gate_ok_nvcc'], n)} "
            f"| {r['gate_pending']} "
            f"| {_pct(r['template_instances_ok'], r['template_instances'])} | {r['launched_here']} "
            f"| {_pct(r['launched_here_spec'], r['launched_here'])} |"
        )
    a = rows["all"]
    lines += [
        "",
        f"Build times: NVRTC median {a['nvrtc_s']['median']} s (n={a['nvrtc_s']['n']}), nvcc fallback median "
        f"{a['nvcc_fallback_s']['median']} s (n={a['nvcc_fallback_s']['n']}), nvcc of a whole file with the "
        f"repository's flags median {a['nvcc_file_s']['median']} s (n={a['nvcc_file_s']['n']}).",
        "All kernels, whatever nvcc did with their file: the gate builds "
        f"{_pct(a['gate_ok_all_files'], a['kernels'])} ({a['gate_pending_all_files']} failed with NVRTC and "
        "were not yet tried with the nvcc fallback).",
    ]
    lines += ["", "Kernels of nvcc-built files that NVRTC did not build (builder, first error or reason):", ""]
    nv = result["files"]["nvcc"]
    for key, g in sorted(result["files"]["gate"].items()):
        if not (nv.get(key) or {}).get("ok"):
            continue
        for k in g["kernels"]:
            bad = [b for b in k["builds"] if not (b.get("ok") and b.get("builder") == "nvrtc")]
            if not k["builds"] or bad:
                b = (bad or [{"error": "no build"}])[0]
                what = "built by the nvcc fallback" if all(x.get("ok") for x in k["builds"]) else "not built"
                why = (b.get("error") or b.get("reason") or "")[:160].replace("|", "\\|")
                lines.append(f"- {key} `{k['kernel']}`: {what} ({b.get('builder', '?')}): {why}")
    if result["extra_include_dirs"]:
        lines.append(
            "Headers this machine's toolkit lacks were added with --extra-include: "
            + ", ".join(f"`{d}`" for d in result["extra_include_dirs"])
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
