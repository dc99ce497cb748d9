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
import shutil
import subprocess
import sys
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
    return blanked, shims


def prepare(
    mirrors: Path, out: Path, repos: set[str] | None = None, build: bool = True, index: Path | None = None
) -> dict[str, Any]:
    """Write device sources, our problem files and the manifest for the GPU run into `out`.

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
    (out / "problems").mkdir(parents=True, exist_ok=True)
    for p in PROBLEMS.glob("*.problem.py"):
        shutil.copyfile(p, out / "problems" / p.name)
    for li in load_index(index) if index else load_index():
        if repos and li.repo not in repos:
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
            dev = device_source(text, Path(v.file).name)
            device_text, shims = compat_shims(dev.text, dev.dropped_includes)
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
            if build:
                info = nvbuild(Source(device_text, entries[-1]["name_expression"], Path(v.file).name), "sm_90").info
                entries[-1]["cpu_build"] = {
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
        ns = load_problem(carry / entry["problem"])["variant"](entry["id"])
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


def child_main(carry: Path, ident: str) -> int:
    """Measure one entry and print its result as one JSON line."""
    cc = _corpus_check()
    entry = next(e for e in json.loads((carry / "manifest.json").read_text())["entries"] if e["id"] == ident)
    gpu = cc.Gpu()
    t0 = time.perf_counter()
    try:
        result = Measure(gpu, cc).run(carry, entry)
    except Exception as exc:
        result = {"id": ident, "status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    result["seconds"] = round(time.perf_counter() - t0, 2)
    print(json.dumps({"result": result, "device": gpu.identity()}), flush=True)
    return 0


def steps(results: list[dict[str, Any]], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return each lineage step k -> k+1 with the measured speedup of k+1 over k (when both timed)."""
    by_id = {r["id"]: r for r in results}
    out = []
    lineages: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
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


def run(carry: Path, repo: str, out: Path, per_entry_s: float, budget_s: float) -> dict[str, Any]:
    """Measure every entry of one repository, each in a fresh child process, within a total budget."""
    manifest = json.loads((carry / "manifest.json").read_text(encoding="utf-8"))
    entries = [e for e in manifest["entries"] if e["repo"] == repo]
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    device = None
    for e in entries:
        left = budget_s - (time.perf_counter() - t0)
        if left <= 5:
            results.append({"id": e["id"], "status": "skipped", "error": "the batch's time budget was spent"})
            continue
        cmd = [sys.executable, str(Path(__file__).resolve()), "one", "--carry", str(carry), "--entry", e["id"]]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=min(per_entry_s, left), check=False)
        except subprocess.TimeoutExpired:
            results.append(
                {"id": e["id"], "status": "timed_out", "error": f"no result within {min(per_entry_s, left):.0f} s"}
            )
            continue
        line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
        if line is None:
            tail = (proc.stderr or proc.stdout)[-1500:]
            results.append({"id": e["id"], "status": "crashed", "error": f"exit {proc.returncode}: {tail}"})
            continue
        msg = json.loads(line)
        device = device or msg.get("device")
        results.append(msg["result"])
    commit = entries[0]["commit"] if entries else ""
    doc = {
        "repo": repo,
        "commit": commit,
        "device": device,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "seconds": round(time.perf_counter() - t0, 1),
        "results": results,
        "steps": steps(results, entries),
        "not_run": [n for n in manifest["not_run"] if n["repo"] == repo],
    }
    out.mkdir(parents=True, exist_ok=True)
    stem = "public_lineages-" + repo.replace("/", "+")
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(markdown(doc), encoding="utf-8")
    return doc


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
    lst = sub.add_parser("list")
    lst.add_argument("--carry", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--carry", type=Path, required=True)
    r.add_argument("--repo", required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--per-entry-s", type=float, default=90.0)
    r.add_argument("--budget-s", type=float, default=480.0)
    br = sub.add_parser("build-report")
    br.add_argument("--carry", type=Path, required=True)
    br.add_argument("--out", type=Path, required=True)
    br.add_argument("--date", default=time.strftime("%Y-%m-%d", time.gmtime()))
    one = sub.add_parser("one")
    one.add_argument("--carry", type=Path, required=True)
    one.add_argument("--entry", required=True)
    args = ap.parse_args(argv)
    if args.command == "prepare":
        m = prepare(args.mirrors, args.out, set(args.repo) if args.repo else None, build=not args.no_build)
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
    doc = run(args.carry, args.repo, args.out, args.per_entry_s, args.budget_s)
    bad = sum(1 for x in doc["results"] if x["status"] != "ok")
    print(f"{args.repo}: {len(doc['results']) - bad} measured, {bad} not (see the .md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
