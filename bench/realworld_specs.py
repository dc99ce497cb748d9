"""Run specs from real host code: how many kernels of the issue-17 corpus get a complete spec with no user input?

CPU only, no build. The spec part of `bench/realworld_build.py` on its own (the builds are another engineer's
measurement and take hours; a spec takes a fraction of a second): for every kernel of every `.cu` / `.cuh` file
under the repositories' CUDA roots, `resolve_spec` with nothing but the repository's files, and for a kernel
launched from host code in its own file (the target's denominator) either the spec's origin and notes (every
representative choice it made) or what is missing, each missing piece sorted into a cause.

Run: `python bench/realworld_specs.py MIRRORS [--tag T]` (MIRRORS as for realworld_build.py: exported repositories
and `commits.json`); writes bench/results/realworld_specs-<date><tag>.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, machine
from realworld_build import RECIPES, files_of, spec_record

CAUSES: tuple[tuple[str, str], ...] = (
    ("launch geometry beyond CUDA's limits", r"exceeds CUDA's limits|an empty launch"),
    ("argument count differs from the kernel's parameters (a templated launch helper)", r"passes \d+ arguments to"),
    ("pointer chosen by a condition (`p ? a : b`)", r"\(passed `[^`]*\?[^`]*:[^`]*`"),
    ("pointer from a container or tensor method (`v.data()`, `t.data_ptr()`)", r"\(passed `[^`]*\.\w+\([^`]*`, not"),
    (
        "pointer held in a class or struct member",
        r"\(passed `[^`]*(?:->|\.)\w+`|passed `(?:cuda_|m_)\w+`"
        r"|^size of `\w+` \(passed `[^`]*`: (?:`\w+` is initialized from )?member `",
    ),
    (
        "integer or float value held in a class or struct member",
        r"^value of `\w+` \(passed `[^`]*`: (?:`\w+` is initialized from )?member `",
    ),
    ("pointer with no allocation the host code shows", r"no cudaMalloc before the launch|not a plain allocation"),
    ("type of a template parameter unbound", r"template argument|element type of"),
    ("index buffer without a value range", r"value range of"),
    ("argument the gate cannot pass (a struct, texture, enum)", r"a value of type"),
    ("integer or float value a host parameter or member holds", r"value of `|an integer value for"),
    ("grid or block from a value the host code does not fix", r"^grid \(|^block \("),
    ("dynamic shared memory", r"dynamic shared memory"),
)
"""Each missing piece's cause, the first pattern that matches it (most specific first)."""


def cause_of(piece: str) -> str:
    """Return the cause of one missing piece of a `SpecMissing`."""
    for name, pattern in CAUSES:
        if re.search(pattern, piece):
            return name
    return "other"


def causes_of(rec: dict[str, Any]) -> list[str]:
    """Return the causes of a kernel without a spec (from its missing pieces, else its message)."""
    pieces = rec.get("spec_missing") or []
    found = list(dict.fromkeys(cause_of(p) for p in pieces))
    if not found or found == ["other"]:
        found = [cause_of(rec.get("spec_message", ""))]
    return found


def measure(mirrors: Path, repos: list[str]) -> list[dict[str, Any]]:
    """Resolve the spec of every kernel of every file; one record per kernel."""
    from warpwise.analyzers.build import analyze_text

    out: list[dict[str, Any]] = []
    for name in repos:
        root = mirrors / name
        for f in files_of(root, RECIPES[name]):
            text = f.read_text(encoding="utf-8", errors="replace")
            model = analyze_text(text, str(f))
            for k in dict.fromkeys(fn.name for fn in model.kernels):
                rec: dict[str, Any] = {"repo": name, "file": str(f.relative_to(root)), "kernel": k}
                try:
                    rec.update(spec_record(f, k, model, text))
                except Exception as exc:
                    rec.update({"spec": None, "spec_missing": ["(inference failed)"], "spec_message": f"{exc}"[:300]})
                    rec["launched_here"] = bool(model.launches_of(k))
                if rec["spec"] is None:
                    rec["causes"] = causes_of(rec)
                out.append(rec)
                print(f"{name}/{rec['file']}:{k}: {rec['spec'] or 'missing'}", file=sys.stderr, flush=True)
    return out


def _pct(a: int, b: int) -> str:
    """Return `a/b (p%)`."""
    return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else f"{a}/0 (-)"


def markdown(result: dict[str, Any]) -> str:
    """Return the human-readable report."""
    recs = result["kernels"]
    lines = [
        f"# Run specs from real host code ({result['date']})",
        "",
        f"Command: `{result['command']}` (warpwise {result['machine']['commit']}; {result['seconds']:.0f} s on "
        f"{result['machine']['cpu']})",
        "",
        "| repository | commit |",
        "| --- | --- |",
    ]
    for r in result["repositories"].values():
        lines.append(f"| {r['repo']} | `{r['commit'][:12]}` |")
    lines += [
        "",
        "Denominator: kernels launched from host code in their own file (`<<<...>>>` there, or through a macro "
        "there). A spec counts when `resolve_spec` returns a complete `ProblemSpec` from the repository's files "
        "alone (no problem file, no annotation); every representative value it chose is in its notes (JSON).",
        "",
        "| repository | kernels | launched here | spec from host code | spec_missing with an annotation |",
        "| --- | --- | --- | --- | --- |",
    ]
    for repo in [*result["repositories"], "all"]:
        rs = [r for r in recs if repo == "all" or r["repo"] == repo]
        here = [r for r in rs if r["launched_here"]]
        ok = [r for r in here if r["spec"]]
        ann = [r for r in here if not r["spec"] and r.get("spec_annotation")]
        lines.append(
            f"| {repo} | {len(rs)} | {len(here)} | {_pct(len(ok), len(here))} | {_pct(len(ann), len(here) - len(ok))} |"
        )
    missing = [r for r in recs if r["launched_here"] and not r["spec"]]
    every: Counter[str] = Counter(c for r in missing for c in r["causes"])
    only: Counter[str] = Counter(r["causes"][0] for r in missing if len(r["causes"]) == 1)
    first: Counter[str] = Counter(r["causes"][0] for r in missing)
    lines += [
        "",
        f"## The {len(missing)} launched kernels without a spec, by cause",
        "",
        "A kernel's causes are those of its missing pieces (one kernel may have several); `only cause`: the kernels "
        "that would get a spec if that cause alone were fixed.",
        "",
        "| cause | kernels | first cause | only cause |",
        "| --- | --- | --- | --- |",
    ]
    for cause, n in every.most_common():
        lines.append(f"| {cause} | {n} | {first[cause]} | {only[cause]} |")
    lines += ["", "| repository | file | kernel | causes | first missing pieces |", "| --- | --- | --- | --- | --- |"]
    for r in sorted(missing, key=lambda r: (r["repo"], r["file"], r["kernel"])):
        pieces = "; ".join(p.replace("|", "\\|") for p in (r.get("spec_missing") or [])[:3])
        lines.append(
            f"| {r['repo']} | {r['file'].split('/')[-1]} | `{r['kernel']}` | {'; '.join(r['causes'])} | {pieces} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirrors", type=Path, help="folder of exported repositories with commits.json")
    parser.add_argument("--repos", default=",".join(RECIPES), help="comma-separated repository names")
    parser.add_argument("--tag", default="", help="suffix of the result files' name")
    args = parser.parse_args()
    repos = [r for r in args.repos.split(",") if r in RECIPES and (args.mirrors / r).is_dir()]
    commits_file = args.mirrors / "commits.json"
    commits = json.loads(commits_file.read_text()) if commits_file.is_file() else {}
    t0 = time.perf_counter()
    recs = measure(args.mirrors, repos)
    date = dt.date.today().isoformat()
    result = {
        "date": date,
        "command": "python " + " ".join(sys.argv),
        "machine": machine(),
        "seconds": round(time.perf_counter() - t0, 1),
        "repositories": {
            r: {"repo": commits.get(r, ["?", "?"])[0], "commit": commits.get(r, ["?", "?"])[1]} for r in repos
        },
        "kernels": recs,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"realworld_specs-{date}{args.tag}"
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    out.with_suffix(".md").write_text(markdown(result) + "\n")
    print(f"wrote {out}.json and .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
