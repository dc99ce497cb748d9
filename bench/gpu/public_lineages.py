"""Measure every version of the public expert lineages on the GPU: build, check against the problem, time (issue 21).

NOT RUN YET: written and tested on the CPU in the session of 2026-12-01, which had no device time; the first
batched run (one call per repository, `bench/gpu/public_lineages.sh`) is still to be done, and no figure from it
exists anywhere in the project.

Two halves, because the GPU machine has torch and the CUDA bindings but not tree-sitter, and cannot reach the
mirrors:

* `prepare` (workstation, needs warpwise): for every version of `lineages/public/INDEX.yaml` whose lineage has a
  problem file and whose variant is supported, read the version from its mirror at the pinned commit (quoted
  includes inlined), blank the host code with `warpwise.verify.extract.device_source` (what the gate does before
  NVRTC), and write it with our problem files and a `manifest.json` into a carry folder. The carry folder holds
  public code: it must stay outside the repository's history (`.carry-*` is git-ignored; never commit it).
  Versions that cannot run are listed in the manifest with the reason (no problem file, launch not recorded).
* `run` (GPU machine): for each manifest entry of one repository, in a child process with a deadline (a fault
  costs only that version): build with NVRTC for the device's architecture (`corpus_check.Gpu.build`, the
  name expression instantiating templates), check against the variant's `reference()` on the `tiny` preset and
  on three seeds at `full` size (outputs poisoned, inputs checked for mutation except declared workspace, the
  gate's tolerances unless the problem sets `tolerance`), then time at full size like do_bench (L2 flushed,
  median and quartiles) beside torch eager. Each step k -> k+1 gets the measured speedup of k+1 over k. A version
  that does not compile (sm_90a features, libraries, host-only constructs left in) is reported, not dropped.

    .venv/bin/python bench/gpu/public_lineages.py prepare --mirrors /work/.mirror --out .carry-issue21
    python3 bench/gpu/public_lineages.py run --carry .carry-issue21 --repo wangzyon/NVIDIA_SGEMM_PRACTICE --out $OUT
    python3 bench/gpu/public_lineages.py list --carry .carry-issue21     # entries per repository (no GPU)
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import itertools
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROBLEMS = REPO / "lineages" / "public" / "problems"
SEEDS = (0, 1, 2)
EXIT_CONTEXT_LOST = 3


def _corpus_check() -> ModuleType:
    """Import bench/gpu/corpus_check.py (the NVRTC build, launch, timing and comparison helpers)."""
    spec = importlib.util.spec_from_file_location("corpus_check", HERE / "corpus_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_check"] = module
    spec.loader.exec_module(module)
    return module


def load_problem(path: Path) -> dict[str, Any]:
    """Execute a problem file and return its namespace."""
    ns: dict[str, Any] = {"__name__": "warpwise_problem", "__file__": str(path)}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), ns)
    return ns


# ---------------------------------------------------------------------------------------------------------------
# prepare: on the workstation.

_RUNTIME_HEADERS = re.compile(
    r"^[ \t]*#[ \t]*include[ \t]*[<\"](cuda|cuda_runtime|cuda_runtime_api|device_launch_parameters)\.h[>\"]", re.M
)


_FIXED_WIDTH = re.compile(r"\bu?int(8|16|32|64)_t\b")
# A function-like macro whose body is host code (a torch binding: tensors, a launch), and a pybind11 module block.
_MACRO_DEF = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(((?:[^\n]*\\\n)*[^\n]*)", re.M)
_HOST_BODY = re.compile(r"torch::|<<<|<\s*<\s*<|\.data_ptr|TORCH_CHECK|PYBIND11")
_TORCH_PROTO = re.compile(r"^[ \t]*[\w:<>]+[ \t]+\w+[ \t]*\([^;{}()]*torch::[^;{}()]*\)[ \t]*;", re.M)
_ALIGN_STRUCT = re.compile(r"\bstruct[ \t]+__align__\((\d+)\)[ \t]+(\w+)")


def _closing(text: str, open_at: int) -> int | None:
    """Return the index of the bracket closing the one at `open_at` (None when unbalanced)."""
    pairs = {"(": ")", "{": "}"}
    opener, closer = text[open_at], pairs[text[open_at]]
    depth = 0
    for i in range(open_at, len(text)):
        depth += (text[i] == opener) - (text[i] == closer)
        if depth == 0:
            return i
    return None


def _blank(chunk: str) -> str:
    """Return the chunk with everything but newlines as spaces (line numbers kept)."""
    return re.sub(r"[^\n]", " ", chunk)


def pre_extraction_shims(text: str) -> tuple[str, list[str]]:
    """Return the file with the extraction gaps that drop device code or leave host code bridged, and which.

    Findings for `warpwise.verify.extract` (issue 21's report), bridged here only so that the batch can measure
    the versions, and keeping line numbers: file-scope invocations of a function-like macro whose body is host
    code (LeetCUDA's `TORCH_BINDING_*(...)` lines expand to torch wrappers the extractor cannot see as functions)
    and the `PYBIND11_MODULE(...) {...}` block are blanked; `struct __align__(N) Name {...}` is parsed by
    tree-sitter as a function named `__align__` and dropped as host code, so it is spelled with the attribute
    `__align__` expands to (`__attribute__((aligned(N)))`, the same layout).
    """
    shims: list[str] = []
    host_macros = {m.group(1) for m in _MACRO_DEF.finditer(text) if _HOST_BODY.search(m.group(2))}
    if host_macros:
        names = "|".join(sorted(map(re.escape, host_macros)))
        calls = list(re.finditer(rf"^[ \t]*(?:{names})[ \t]*\(", text, re.M))
        for m in reversed(calls):
            end = _closing(text, m.end() - 1)
            if end is not None:
                end += len(re.match(r"[ \t]*;?", text[end + 1 :]).group(0))  # type: ignore[union-attr]
                text = text[: m.start()] + _blank(text[m.start() : end + 1]) + text[end + 1 :]
        if calls:
            shims.append(
                "file-scope invocations of host-binding macros blanked (" + ", ".join(sorted(host_macros)) + ")"
            )
    protos = _TORCH_PROTO.sub(lambda m: _blank(m.group(0)), text)
    if protos != text:
        text = protos
        shims.append("file-scope declarations of torch wrappers blanked")
    start = re.search(r"^[ \t]*PYBIND11_MODULE[ \t]*\(", text, re.M)
    brace = text.find("{", start.end()) if start else -1
    close = _closing(text, brace) if start and brace >= 0 else None
    if start and close is not None:
        text = text[: start.start()] + _blank(text[start.start() : close + 1]) + text[close + 1 :]
        shims.append("PYBIND11_MODULE block blanked")
    aligned = _ALIGN_STRUCT.sub(lambda m: f"struct __attribute__((aligned({m.group(1)}))) {m.group(2)}", text)
    if aligned != text:
        text = aligned
        shims.append("struct __align__(N) spelled __attribute__((aligned(N))) (tree-sitter read it as a function)")
    return text, shims


def compat_shims(text: str, dropped_includes: tuple[str, ...]) -> tuple[str, list[str]]:
    """Return the device source with two gaps of the gate's extraction bridged, and which were applied.

    Both are findings for `warpwise.verify.extract` (issue 21's report), bridged here only so that the batch can
    measure the versions: the CUDA runtime headers are kept because they lie in the toolkit's include folder, but
    NVRTC cannot compile them (they include <stdlib.h>) and provides what device code needs from them without an
    include; and a file that uses fixed-width integer types without including <cstdint> had them from a dropped
    host header (<torch/extension.h>, <stdio.h>), so they are defined as the extractor does for a dropped
    <cstdint>. Blanking keeps line numbers.
    """
    from warpwise.verify.extract import prelude_for
    from warpwise.verify.worker.nvbuild import cuda_include_dirs

    shims: list[str] = []
    blanked = _RUNTIME_HEADERS.sub(lambda m: " " * len(m.group(0)), text)
    if blanked != text:
        shims.append("CUDA runtime includes blanked (NVRTC provides the device runtime)")
        if "INFINITY" in text or "NAN" in text:
            blanked = prelude_for(["math.h"], cuda_include_dirs()) + blanked
            shims.append("INFINITY and NAN defined (they came through the runtime headers' <math.h>)")
    if _FIXED_WIDTH.search(text) and not {"cstdint", "stdint.h"} & set(dropped_includes):
        blanked = prelude_for(["cstdint"], cuda_include_dirs()) + blanked
        shims.append("fixed-width integer types defined (they came from a dropped host header)")
    if re.search(r"\bFLT_MAX\b", text) and not re.search(r"#\s*define\s+FLT_MAX\b", text):
        blanked = "#ifndef FLT_MAX\n#define FLT_MAX __FLT_MAX__\n#endif\n" + blanked
        shims.append(
            "FLT_MAX defined (it came from the host's <float.h>; NVRTC's <cuda/std/cfloat> does not define it)"
        )
    return blanked, shims


def _wanted_rewrites(agreement: Path) -> dict[tuple[str, str], set[str]]:
    """Return, per (lineage, version k), the cards whose rewrite of k is compared with k+1.

    Device time is scarce: of every card with a rewrite of version k, only those the expert mapping names for the
    step k -> k+1 and the editor's first quick fix (both from an agreement result file, `bench/agreement.py`).
    """
    doc = json.loads(agreement.read_text(encoding="utf-8"))
    out: dict[tuple[str, str], set[str]] = {}
    for st in doc["steps"]:
        k = st["step"].split("->")[0].strip()
        out[(st["lineage"], k)] = set(st["expected_builtin"]) | set(st["order"][:1])
    return out


def _rewrite_entries(
    base: dict[str, Any],
    text: str,
    kernel: str,
    out: Path,
    not_run: list[dict[str, str]],
    cards: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Return entries for our cards' rewrites of one version's kernel (what step k -> k+1 is compared with).

    Each card with a rewrite in the kernel gives one candidate, the file with all of that card's fixes applied
    (`card_rewrites`, as the gate and the card evidence run make them), extracted like the version itself and run
    on the version's problem variant. A rewrite that shrinks the launch (elements per thread) runs with the
    variant's grid divided by its factor; a card that changes the launch in its own way is reported, not run.
    """
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import card_rewrites
    from warpwise.skills.launches import grid_factor
    from warpwise.skills.library import builtin_library
    from warpwise.verify.extract import device_source

    library = builtin_library()
    model = analyze_text(text.encode("utf-8", "surrogatepass"), base["file"])
    made: list[dict[str, Any]] = []
    for (fn, card), (ms, new) in card_rewrites(model).items():
        if fn != kernel or (cards is not None and card not in cards):
            continue
        ident = f"{base['id']}+{card}"
        info = {"id": ident, "repo": base["repo"], "lineage": base["lineage"], "version": base["version"]}
        rules = library.get(card).rules if library.get(card) is not None else None
        launch_changes = None
        if getattr(rules, "problem_launch_changes", None) is not None:
            # The card's own launch (a grid over rows, a grid of output tiles), relative to the version's launch:
            # the same `LaunchChange`s the gate applies to a problem file's geometry (`verify/launch.py`).
            changes = rules.problem_launch_changes(ms)
            if not changes:
                not_run.append({**info, "why": f"`{card}` gives no launch for this kernel's problem-file launch"})
                continue
            launch_changes = [c.to_dict() for c in changes]
        dev = device_source(new.decode("utf-8", "surrogateescape"), Path(base["file"]).name)
        device_text, shims = compat_shims(dev.text, dev.dropped_includes)
        src = out / "sources" / base["lineage"] / f"{base['version']}+{card}.cu"
        src.write_text(device_text, encoding="utf-8")
        made.append(
            {
                **base,
                "id": ident,
                "variant": base["id"],
                "rewrite_of": base["id"],
                "card": card,
                "applicability": ms[0].applicability.value,
                "grid_factor": grid_factor(card, ms),
                "launch_changes": launch_changes,
                "source": str(src.relative_to(out)),
                "shims": base["shims"] + [x for x in shims if x not in base["shims"]],
                "dropped_host_functions": list(dev.dropped_functions),
                "dropped_includes": list(dev.dropped_includes),
            }
        )
    return made


def prepare(
    mirrors: Path,
    out: Path,
    repos: set[str] | None = None,
    build: bool = True,
    index: Path | None = None,
    rewrites: bool = True,
    rewrite_cards: Path | None = None,
    lineages: set[str] | None = None,
    roundtrips: Path | None = None,
) -> dict[str, Any]:
    """Write device sources, our problem files and the manifest for the GPU run into `out`.

    With `roundtrips` (a `bench/public_steps.py` result file), the batch is the admission roundtrips instead: every
    card the step analysis mined evidence for (`admission[].mined_from`) is rewritten on every version of the
    other repositories where it has a rewrite, and only the versions with such a rewrite are kept (timed beside
    their rewrites in the same batch).

    `repos` and `lineages` restrict the batch (a re-run of the lineages whose problem files were fixed: a step's
    two versions are always timed in the same call, so a lineage is re-run whole).

    With `build`, each source is also compiled here with NVRTC for sm_90 (the gate's builder and options; no GPU
    needed), so the manifest already says which versions will not compile and why.
    """
    from warpwise.lineages.public_index import PublicIndexError, load_index, version_text
    from warpwise.verify.extract import device_source
    from warpwise.verify.types import Source
    from warpwise.verify.worker.nvbuild import build as nvbuild
    from warpwise.verify.worker.nvbuild import toolkit_label

    entries: list[dict[str, Any]] = []
    not_run: list[dict[str, str]] = []
    wanted = _wanted_rewrites(rewrite_cards) if rewrite_cards else None
    mined: dict[str, set[str]] = {}
    if roundtrips is not None:
        adm = json.loads(roundtrips.read_text(encoding="utf-8"))["admission"]
        mined = {a["card"]: set(a["mined_from"]) for a in adm if a["mined_from"]}
    (out / "problems").mkdir(parents=True, exist_ok=True)
    for p in PROBLEMS.glob("*.problem.py"):
        shutil.copyfile(p, out / "problems" / p.name)
    for li in load_index(index) if index else load_index():
        if (repos and li.repo not in repos) or (lineages and li.id not in lineages):
            continue
        variants = load_problem(PROBLEMS / f"{li.problem}.problem.py")["VARIANTS"] if li.problem else {}
        for i, v in enumerate(li.versions):
            key = f"{li.id}/{v.id}"
            base = {"id": key, "repo": li.repo, "lineage": li.id, "version": v.id}
            if not li.problem:
                not_run.append({**base, "why": "the lineage has no problem file"})
                continue
            spec = variants.get(key)
            if spec is None or "unsupported" in spec:
                not_run.append({**base, "why": (spec or {}).get("unsupported", "no variant in the problem file")})
                continue
            try:
                text = version_text(mirrors, li, v)
            except PublicIndexError as exc:
                not_run.append({**base, "why": str(exc)})
                continue
            text, pre = pre_extraction_shims(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)
            dev = device_source(text, Path(v.file).name)
            device_text, shims = compat_shims(dev.text, dev.dropped_includes)
            shims = pre + shims
            src = out / "sources" / li.id / f"{v.id}.cu"
            src.parent.mkdir(parents=True, exist_ok=True)
            src.write_text(device_text, encoding="utf-8")
            entries.append(
                {
                    **base,
                    "index": i,
                    "commit": li.commit,
                    "family": li.family,
                    "file": v.file,
                    "lines": list(v.lines) if v.lines else None,
                    "kernel": v.kernel,
                    "name_expression": spec.get("name_expression") or v.name_expression or v.kernel,
                    "source": str(src.relative_to(out)),
                    "problem": f"problems/{li.problem}.problem.py",
                    "dropped_host_functions": list(dev.dropped_functions),
                    "dropped_includes": list(dev.dropped_includes),
                    "shims": shims,
                    "reported": v.reported,
                }
            )
            version_entries = [entries[-1]]
            if roundtrips is not None:
                cards = {c for c, repos_of in mined.items() if li.repo not in repos_of}
                version_entries += _rewrite_entries(entries[-1], text, v.kernel, out, not_run, cards)
                if len(version_entries) == 1:
                    entries.pop()  # no mined card of another repository rewrites this version
                    continue
            elif rewrites and i + 1 < len(li.versions):
                cards = None if wanted is None else wanted.get((li.id, v.id), set())
                version_entries += _rewrite_entries(entries[-1], text, v.kernel, out, not_run, cards)
            entries.extend(version_entries[1:])
            if build:
                for ent in version_entries:
                    device = (out / ent["source"]).read_text(encoding="utf-8")
                    info = nvbuild(Source(device, ent["name_expression"], Path(v.file).name), "sm_90").info
                    ent["cpu_build"] = {
                        "ok": info.ok,
                        "registers": info.registers,
                        "log": "" if info.ok else info.log[-1500:],
                    }
    manifest = {
        "entries": entries,
        "not_run": not_run,
        "prepared": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python " + " ".join(sys.argv),
        "warpwise_commit": _git_head(),
        "cpu_build": toolkit_label() if build else None,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


# ---------------------------------------------------------------------------------------------------------------
# run: on the GPU machine (torch and the CUDA bindings only).


class Measure:
    """Check and time one manifest entry on the GPU (or on a stand-in device in tests)."""

    def __init__(self, gpu: Any, cc: ModuleType) -> None:
        self.gpu = gpu
        self.cc = cc

    def _args(self, params: list[Any], inputs: dict[str, Any], ns: dict[str, Any], outputs: set[str]) -> Any:
        """Return device copies of the pointer arguments (outputs poisoned unless inout) and the ctypes values."""
        tensors: dict[str, Any] = {}
        values: list[Any] = []
        inout = set(ns.get("inout", ()))
        for p in params:
            if p.pointer:
                if p.name not in inputs:
                    raise KeyError(f"the problem gives no input for pointer parameter `{p.name}`")
                t = inputs[p.name].detach().to(self.gpu.dev).contiguous().clone()
                if p.name in outputs and p.name not in inout:
                    self.cc._poison(t)
                tensors[p.name] = t
                values.append(ctypes.c_void_p(t.data_ptr()))
            else:
                values.append(self.cc._scalar(p, inputs[p.name] if p.name in inputs else ns[p.name]))
        return tensors, values

    def launch(self, fn: Any, geometry: Any, values: list[Any], args: dict[str, Any], ns: dict[str, Any]) -> None:
        """Launch the kernel (`args` holds the same arguments by name, for a stand-in device in tests)."""
        self.gpu.launch(fn, geometry, values)

    def _compare(self, ns: dict[str, Any], name: str, want: Any, got: Any) -> dict[str, Any]:
        if "tolerance" in ns and want.dtype.is_floating_point:
            saved = dict(self.cc.TOLERANCES)
            self.cc.TOLERANCES[str(want.dtype)] = tuple(ns["tolerance"])
            try:
                return dict(self.cc._compare(name, want, got))
            finally:
                self.cc.TOLERANCES.clear()
                self.cc.TOLERANCES.update(saved)
        return dict(self.cc._compare(name, want, got))

    def check(self, fn: Any, params: list[Any], ns: dict[str, Any], preset: str, seed: int) -> dict[str, Any]:
        """Run once on one seeded input and compare with the variant's reference."""
        torch = self.gpu.torch
        os.environ["WARPWISE_PROBLEM_SCALE"] = preset
        inputs = ns["make_inputs"](seed)
        ref = ns["reference"]({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
        expected = {k: v for k, v in ref.items() if isinstance(v, torch.Tensor)}
        tensors, values = self._args(params, inputs, ns, set(expected))
        scratch = set(ns.get("scratch", ()))
        pristine = {k: v.clone() for k, v in tensors.items() if k not in expected and k not in scratch}
        geometry = ns["launch"]({**inputs, **tensors})
        self.launch(fn, geometry, values, {**inputs, **tensors}, ns)
        self.gpu.sync()
        verdicts = [self._compare(ns, k, v.to(self.gpu.dev), tensors[k]) for k, v in expected.items()]
        problems = [v["why"] for v in verdicts if not v["ok"]]
        problems += [
            f"`{k}` was modified but is not an output" for k, v in pristine.items() if not torch.equal(v, tensors[k])
        ]
        worst = max((v.get("max_abs_error", 0.0) for v in verdicts), default=0.0)
        return {"preset": preset, "seed": seed, "ok": not problems, "problems": problems, "max_abs_error": worst}

    def time(self, fn: Any, params: list[Any], ns: dict[str, Any], preset: str) -> dict[str, Any]:
        """Time the kernel and torch eager on the inputs of seed 0."""
        os.environ["WARPWISE_PROBLEM_SCALE"] = preset
        inputs = ns["make_inputs"](0)
        tensors, values = self._args(params, inputs, ns, set())
        geometry = ns["launch"]({**inputs, **tensors})
        args = {**inputs, **tensors}
        kernel_t = self.gpu.bench(lambda: self.launch(fn, geometry, values, args, ns))
        out: dict[str, Any] = {
            "preset": preset,
            "kernel": kernel_t,
            "geometry": [list(map(int, g)) if isinstance(g, tuple | list) else int(g) for g in geometry],
        }
        if ns.get("eager") is not None:
            out["eager"] = self.gpu.bench(lambda: ns["eager"](inputs))
        if "bytes_moved" in ns:
            out["gb_per_s"] = ns["bytes_moved"](inputs) / (kernel_t["median_ms"] * 1e6)
        if "flops" in ns:
            out["tflop_per_s"] = ns["flops"](inputs) / (kernel_t["median_ms"] * 1e9)
        return out

    def run(self, carry: Path, entry: dict[str, Any]) -> dict[str, Any]:
        """Build, check on every preset (three seeds at full size) and time one entry."""
        ns = load_problem(carry / entry["problem"])["variant"](entry.get("variant", entry["id"]))
        if entry.get("rewrite_of"):
            ns["eager"] = None  # torch eager is timed once, beside the version itself
        factor = entry.get("grid_factor")
        if factor and factor > 1:
            ns["launch"] = _shrunk(ns["launch"], int(factor))
        if entry.get("launch_changes"):
            ns["launch"] = _changed(ns["launch"], entry["launch_changes"])
        source = (carry / entry["source"]).read_text(encoding="utf-8")
        result: dict[str, Any] = {
            "id": entry["id"],
            "kernel": entry["kernel"],
            "name_expression": entry["name_expression"],
        }
        built, report = self.gpu.build(source, entry["name_expression"], Path(entry["file"]).name)
        result["build"] = report
        if built is None:
            result["status"] = "compile_failed"
            return result
        fn = built[1]
        params = self.cc.parse_signature(source, entry["kernel"])
        sizes = list(ns.get("SIZES", {"full": None}))
        presets = [p for p in sizes if p != "full"] + (["full"] if "full" in sizes else [])
        checks = [self.check(fn, params, ns, p, s) for p in presets for s in (SEEDS if p == "full" else SEEDS[:1])]
        result["checks"] = checks
        if not all(c["ok"] for c in checks):
            result["status"] = "incorrect"
            return result
        result["timing"] = self.time(fn, params, ns, presets[-1])
        result["status"] = "ok"
        return result


def _shrunk(launch: Any, factor: int) -> Any:
    """Return a launch function whose grid's x is divided by `factor` (rounded up): a rewrite's fewer threads."""

    def shrunk(inputs: dict[str, Any]) -> Any:
        geometry = list(launch(inputs))
        grid = list(geometry[0]) if isinstance(geometry[0], tuple | list) else [geometry[0]]
        grid[0] = -(-int(grid[0]) // factor)
        geometry[0] = tuple(grid)
        return tuple(geometry)

    return shrunk


def _tdiv(a: int, b: int) -> int:
    """Divide integers as C does (truncating), as `verify/launch.py`'s generated launch does."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _changed(launch: Any, changes: list[dict[str, Any]]) -> Any:
    """Return a launch function with a card's launch changes applied in order (`verify.launch.LaunchChange`s as
    dicts: part, axis and a Python expression over `value`, `inputs` and the geometry `g`), as the gate's
    `launch_candidate` applies them to a problem file's launch."""
    fns = [
        (c["part"], int(c["axis"]), eval(f"lambda value, inputs, g: {c['python']}", {"_ww_tdiv": _tdiv}))
        for c in changes
    ]

    def dim3(v: Any) -> list[int]:
        t = tuple(int(x) for x in (v if isinstance(v, tuple | list) else (v,)))
        return list((*t, 1, 1, 1)[:3])

    def changed(inputs: dict[str, Any]) -> Any:
        g = launch(inputs)
        geo = [dim3(g[0]), dim3(g[1]), int(g[2]) if len(g) > 2 else 0]
        for part, axis, fn in fns:
            i = 0 if part == "grid" else 1
            geo[i][axis] = int(fn(geo[i][axis], inputs, geo))
        return tuple(geo[0]), tuple(geo[1]), geo[2]

    return changed


def child_main(carry: Path, idents: list[str]) -> int:
    """Measure entries in order in this one process, printing one JSON line per entry.

    One process measures many entries (starting Python, torch and a CUDA context once, not once per version);
    an entry that raises ends the process after its line (a kernel fault leaves the context unusable), and the
    parent starts a fresh one for the entries left.
    """
    cc = _corpus_check()
    by_id = {e["id"]: e for e in json.loads((carry / "manifest.json").read_text())["entries"]}
    gpu = cc.Gpu()
    for ident in idents:
        print(json.dumps({"start": ident}), flush=True)
        t0 = time.perf_counter()
        try:
            result = Measure(gpu, cc).run(carry, by_id[ident])
        except Exception as exc:
            result = {"id": ident, "status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
        result["seconds"] = round(time.perf_counter() - t0, 2)
        print(json.dumps({"result": result, "device": gpu.identity()}), flush=True)
        if result["status"] == "failed":
            return EXIT_CONTEXT_LOST
    return 0


def steps(results: list[dict[str, Any]], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return each lineage step k -> k+1 with the measured speedup of k+1 over k (when both timed)."""
    by_id = {r["id"]: r for r in results}
    out = []
    lineages: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        if not e.get("rewrite_of"):
            lineages.setdefault(e["lineage"], []).append(e)
    for lineage, es in lineages.items():
        es.sort(key=lambda e: e["index"])
        for a, b in itertools.pairwise(es):
            ra, rb = by_id.get(a["id"], {}), by_id.get(b["id"], {})
            ta = (ra.get("timing") or {}).get("kernel", {}).get("median_ms")
            tb = (rb.get("timing") or {}).get("kernel", {}).get("median_ms")
            row = {"lineage": lineage, "step": f"{a['version']} -> {b['version']}", "ms_before": ta, "ms_after": tb}
            row["speedup"] = round(ta / tb, 3) if ta and tb else None
            out.append(row)
    return out


def markdown(doc: dict[str, Any]) -> str:
    """Return one repository's results as Markdown."""
    out = [
        f"# Public lineages on the GPU: {doc['repo']} @ `{doc['commit'][:12]}`",
        "",
        f"Device: {doc.get('device')}. Command: `{doc['command']}`. Wall time {doc['seconds']} s.",
        "",
        "| version | status | ms (median) | GB/s | TFLOP/s | eager ms |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in doc["results"]:
        t = r.get("timing") or {}
        k = t.get("kernel", {})
        cells = [
            f"{k['median_ms']:.4g}" if k else "",
            f"{t['gb_per_s']:.0f}" if "gb_per_s" in t else "",
            f"{t['tflop_per_s']:.2f}" if "tflop_per_s" in t else "",
            f"{t['eager']['median_ms']:.4g}" if "eager" in t else "",
        ]
        why = r.get("error") or next((c["problems"][0] for c in r.get("checks", []) if c["problems"]), "")
        out.append(f"| {r['id']} | {r['status']}{': ' + why[:80] if why else ''} | " + " | ".join(cells) + " |")
    out += ["", "| lineage | step | ms before -> after | speedup |", "| --- | --- | --- | --- |"]
    for s in doc["steps"]:
        sp = f"{s['speedup']}x" if s["speedup"] else "not measured"
        out.append(f"| {s['lineage']} | {s['step']} | {s['ms_before']} -> {s['ms_after']} | {sp} |")
    if doc["not_run"]:
        out += ["", "Not run: " + "; ".join(f"{n['id']} ({n['why']})" for n in doc["not_run"]) + "."]
    return "\n".join(out) + "\n"


def _measure_all(
    carry: Path, entries: list[dict[str, Any]], per_entry_s: float, budget_s: float
) -> tuple[list[dict[str, Any]], Any]:
    """Measure entries in child processes: one child for as many entries as it survives, each under a deadline.

    A child that crashes or overruns an entry's deadline is killed; that entry is reported (`crashed`,
    `timed_out`) and a fresh child takes the rest. Entries not started once `budget_s` is spent are `skipped`.
    """
    t0 = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    device = None
    todo = [e["id"] for e in entries]
    while todo:
        if budget_s - (time.perf_counter() - t0) <= 5:
            break
        cmd = [sys.executable, str(Path(__file__).resolve()), "one", "--carry", str(carry), "--entry", *todo]
        errlog = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed below; a file, not a pipe: a chatty child cannot block)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errlog, text=True)
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        current: str | None = None
        started = False
        deadline = time.perf_counter() + per_entry_s + 30  # the first entry also pays for torch and the context
        buf = ""
        while True:
            left = min(deadline, t0 + budget_s) - time.perf_counter()
            if left <= 0:
                proc.kill()
                if current is not None:
                    results[current] = {
                        "id": current,
                        "status": "timed_out",
                        "error": f"no result within {per_entry_s:.0f} s",
                    }
                    todo.remove(current)
                break
            if not sel.select(timeout=left):
                continue
            chunk = proc.stdout.readline()
            if not chunk:
                proc.wait()
                errlog.seek(0)
                tail = errlog.read()[-1500:]
                if current is not None:
                    results[current] = {"id": current, "status": "crashed", "error": f"exit {proc.returncode}: {tail}"}
                    todo.remove(current)
                elif not started:
                    # The child died before its first entry (no device, a broken install): the same would happen
                    # to every fresh child, so every entry left is reported with the reason.
                    for ident in todo:
                        results[ident] = {"id": ident, "status": "crashed", "error": f"exit {proc.returncode}: {tail}"}
                    todo.clear()
                break
            buf = chunk.strip()
            if not buf.startswith("{"):
                continue
            msg = json.loads(buf)
            if "start" in msg:
                current = msg["start"]
                started = True
                deadline = time.perf_counter() + per_entry_s
                continue
            device = device or msg.get("device")
            results[msg["result"]["id"]] = msg["result"]
            todo.remove(msg["result"]["id"])
            current = None
        sel.close()
        errlog.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = []
    for e in entries:
        out.append(
            results.get(e["id"]) or {"id": e["id"], "status": "skipped", "error": "the batch's time budget was spent"}
        )
    return out, device


def run(carry: Path, repos: list[str], out: Path, per_entry_s: float, budget_s: float) -> list[dict[str, Any]]:
    """Measure every entry of the given repositories (in one batch, one child process while it lasts)."""
    manifest = json.loads((carry / "manifest.json").read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    entries = [e for e in manifest["entries"] if e["repo"] in repos]
    # The versions first, then our rewrites of them: a budget spent early costs comparisons, not versions.
    entries.sort(key=lambda e: bool(e.get("rewrite_of")))
    results, device = _measure_all(carry, entries, per_entry_s, budget_s)
    seconds = round(time.perf_counter() - t0, 1)
    docs = []
    for repo in repos:
        mine = [e for e in entries if e["repo"] == repo]
        ids = {e["id"] for e in mine}
        rs = [r for r in results if r["id"] in ids]
        doc = {
            "repo": repo,
            "commit": mine[0]["commit"] if mine else "",
            "device": device,
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "seconds": round(sum(r.get("seconds", 0.0) for r in rs), 1),
            "batch_seconds": seconds,
            "results": rs,
            "steps": steps(rs, mine),
            "not_run": [n for n in manifest["not_run"] if n["repo"] == repo],
        }
        out.mkdir(parents=True, exist_ok=True)
        stem = "public_lineages-" + repo.replace("/", "+")
        (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        (out / f"{stem}.md").write_text(markdown(doc), encoding="utf-8")
        docs.append(doc)
    return docs


def _git_head() -> str | None:
    proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def build_report(carry: Path, out: Path, date: str) -> dict[str, Any]:
    """Write what `prepare`'s NVRTC build check found (no public code: ids, shims, and compiler error lines only)."""
    manifest = json.loads((carry / "manifest.json").read_text(encoding="utf-8"))
    rows = []
    for e in manifest["entries"]:
        b = e.get("cpu_build") or {}
        errors = [ln.strip()[:200] for ln in b.get("log", "").splitlines() if "error" in ln][:3]
        rows.append(
            {
                "id": e["id"],
                "repo": e["repo"],
                "commit": e["commit"],
                "ok": b.get("ok"),
                "errors": errors,
                "registers": b.get("registers"),
                "shims": e["shims"],
                "dropped_host_functions": len(e["dropped_host_functions"]),
            }
        )
    doc = {
        "date": date,
        "toolkit": manifest.get("cpu_build"),
        "arch": "sm_90",
        "command": manifest.get("command"),
        "warpwise_commit": manifest.get("warpwise_commit"),
        "prepared": manifest.get("prepared"),
        "compiled": sum(1 for r in rows if r["ok"]),
        "entries": rows,
        "not_run": manifest["not_run"],
    }
    md = [
        f"# Public lineages: NVRTC build check ({date}, workstation, no GPU)",
        "",
        f"Command: `{doc['command']}` at {doc['prepared']} (warpwise `{doc['warpwise_commit']}`), then "
        f"`build-report`; compiler {doc['toolkit']}, sm_90. {doc['compiled']} of {len(rows)} versions "
        "compile; nothing was run or timed. Shims are the extraction gaps bridged by `prepare` (see its docstring).",
        "",
        "| version | compiles | registers | first errors | shims |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        md.append(
            f"| {r['id']} | {'yes' if r['ok'] else 'no'} | {r['registers'] or ''} | "
            f"{'; '.join(r['errors']).replace('|', '/')} | {'; '.join(r['shims'])} |"
        )
    md += ["", "Not runnable: " + "; ".join(f"{n['id']} ({n['why']})" for n in doc["not_run"]) + "."]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"public_lineages_build-{date}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (out / f"public_lineages_build-{date}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    return doc


def main(argv: list[str] | None = None) -> int:
    """Prepare the carry folder, list it, run one repository's versions, or (internally) one version."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--mirrors", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--repo", action="append", help="only these repositories (owner/name); repeatable")
    p.add_argument("--no-build", action="store_true", help="skip the NVRTC build check on this machine")
    p.add_argument("--no-rewrites", action="store_true", help="no candidates of our cards' rewrites of version k")
    p.add_argument("--rewrite-cards", type=Path, help="agreement result file: only its expected and first cards")
    p.add_argument("--lineage", action="append", help="only these lineages (ids of INDEX.yaml); repeatable")
    p.add_argument("--roundtrips", type=Path, help="public_steps result file: the admission roundtrips (see prepare)")
    lst = sub.add_parser("list")
    lst.add_argument("--carry", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--carry", type=Path, required=True)
    r.add_argument("--repo", action="append", required=True, help="owner/name; repeatable (one batch)")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--per-entry-s", type=float, default=90.0)
    r.add_argument("--budget-s", type=float, default=480.0)
    br = sub.add_parser("build-report")
    br.add_argument("--carry", type=Path, required=True)
    br.add_argument("--out", type=Path, required=True)
    br.add_argument("--date", default=time.strftime("%Y-%m-%d", time.gmtime()))
    one = sub.add_parser("one")
    one.add_argument("--carry", type=Path, required=True)
    one.add_argument("--entry", nargs="+", required=True)
    args = ap.parse_args(argv)
    if args.command == "prepare":
        m = prepare(
            args.mirrors,
            args.out,
            set(args.repo) if args.repo else None,
            build=not args.no_build,
            rewrites=not args.no_rewrites,
            rewrite_cards=args.rewrite_cards,
            lineages=set(args.lineage) if args.lineage else None,
            roundtrips=args.roundtrips,
        )
        failed = [e["id"] for e in m["entries"] if not e.get("cpu_build", {"ok": True})["ok"]]
        print(f"{len(m['entries'])} versions to measure, {len(m['not_run'])} not runnable (see manifest.json)")
        if failed:
            print(f"{len(failed)} do not compile with NVRTC for sm_90: {', '.join(failed)}")
        return 0
    if args.command == "list":
        m = json.loads((args.carry / "manifest.json").read_text(encoding="utf-8"))
        counts: dict[str, int] = {}
        for e in m["entries"]:
            counts[e["repo"]] = counts.get(e["repo"], 0) + 1
        for repo, n in sorted(counts.items()):
            print(f"{repo}: {n} versions")
        return 0
    if args.command == "build-report":
        d = build_report(args.carry, args.out, args.date)
        print(f"{d['compiled']} of {len(d['entries'])} compile")
        return 0
    if args.command == "one":
        return child_main(args.carry, args.entry)
    for doc in run(args.carry, args.repo, args.out, args.per_entry_s, args.budget_s):
        bad = sum(1 for x in doc["results"] if x["status"] != "ok")
        print(f"{doc['repo']}: {len(doc['results']) - bad} measured, {bad} not (see the .md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
