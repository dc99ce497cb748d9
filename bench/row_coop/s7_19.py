"""Time the naive kernel, its semantic rewrites and torch eager for the rows of issue 19 that missed their targets
(session 7): the two reductions whose per-block partials are the output, and the Welford layernorm; and (session 8)
the thread-per-column kernels (the column-major GEMV of the naive suite, the transposed GEMV with 2-D blocks and
the column sums of the out-of-distribution suite), which the thread-per-column-reduction card rewrites.

Two steps, because the rewrites need the kernel model (tree-sitter) and the GPU machine has only torch:

1. `prep OUT` (here, with warpwise and tree-sitter): for each row, writes the naive kernel and every candidate the
   transformations produce, in the layout of a suite folder (`OUT/<operator>/<style>__<key>.cu` with its problem
   file, the candidate's launch change applied to `launch`), and `OUT/manifest.json` (each candidate's mechanism,
   or why no transformation applied). The naive kernel is written as `<style>__naive`.
2. `run --prep PREP --out OUT` (on the GPU machine): runs `bench/gpu/corpus_check.py` over PREP (each kernel built
   with NVRTC, checked against the problem's torch reference on the small presets and three seeds at full size,
   timed with the L2 flushed, torch `eager()` timed the same way, the copy peak measured in the same run), then
   writes `s7_19.json` and `s7_19.md` under OUT: per row the naive kernel, the fastest correct candidate and torch
   eager, in ms, against eager and as a share of the measured copy bandwidth, with the target of the issue.

Usage:
    .venv/bin/python bench/row_coop/s7_19.py prep /tmp/s7_19_prep
    python3 bench/row_coop/s7_19.py run --prep /tmp/s7_19_prep --out "$OUT"
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

ROWS: dict[str, dict[str, Any]] = {
    "bench/suite_ood/reduce_sum/interleaved_partials.cu": {"kind": "reduction", "target": "85% of copy"},
    "bench/suite_ood/reduce_sum/sequential_two_loads.cu": {"kind": "reduction", "target": "85% of copy"},
    "bench/suite_ood/layernorm/welford_stats.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite/gemv_colmajor/naive.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite_ood/gemv/transposed_2d_block.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite_ood/column_sums/thread_per_col.cu": {"kind": "reduction", "target": "85% of copy"},
}
"""The rows of this batch: each kernel file, what kind of target the issue sets, and the target."""

REDUCTION_TARGET_PCT = 85.0
ROW_TARGET_X = 0.95


def _op_folder(rel: str) -> str:
    """Return the prep folder of a row's operator (`reduce_sum_ood`), as bench/row_cache/prep.py names them."""
    path = Path(rel)
    return path.parent.name + ("_ood" if "suite_ood" in rel else "")


def _block_partials(model: Any, fn: Any) -> tuple[list[tuple[str, bytes, tuple[Any, ...], str]], str]:
    """Return the block-partials-few-per-thread candidates (one per grid factor), or why there are none."""
    from warpwise.skills.library import builtin_library

    card = builtin_library().get("block-partials-few-per-thread")
    if card is None or card.rules is None:
        return [], "the block-partials-few-per-thread card did not load"
    rules = card.rules
    bp, why = rules.recognise(model, fn)
    if bp is None:
        return [], f"block-partials-few-per-thread: {why}"
    text = rules.rewrite_source(model, fn.name)
    if text is None:
        return [], "block-partials-few-per-thread: the rewrite refused"
    return [
        (
            f"bp{f}",
            text,
            rules.launch_changes(f),
            f"transformation block-partials-few-per-thread, params grid/{f} (a warp per partial, float4 where aligned)",
        )
        for f in rules.GRID_FACTORS
    ], ""


def _row_cooperative(model: Any, fn: Any) -> tuple[list[tuple[str, bytes, tuple[Any, ...], str]], str]:
    """Return the row-cooperative-reduction candidates (one per mapping), or why there are none."""
    from warpwise.skills.library import builtin_library

    card = builtin_library().get("row-cooperative-reduction")
    if card is None or card.rules is None:
        return [], "the row-cooperative-reduction card did not load"
    rules = card.rules
    rk, why = rules.recognise(model, fn)
    if rk is None:
        return [], f"row-cooperative-reduction: {why}"
    out = []
    for mp in rules.MAPPING_CHOICES:
        text = rules.rewrite_source(model, fn.name, mp)
        if text is None:
            continue
        key = f"warp{mp.rows_per_block}" if mp.mode == "warp" else f"block{mp.threads}"
        params = (
            f"mode=warp rows_per_block={mp.rows_per_block}" if mp.mode == "warp" else f"mode=block threads={mp.threads}"
        )
        out.append((key, text, rules.launch_changes(mp), f"transformation row-cooperative-reduction, params {params}"))
    return out, "" if out else "row-cooperative-reduction: every mapping refused"


def _thread_per_column(model: Any, fn: Any) -> tuple[list[tuple[str, bytes, tuple[Any, ...], str]], str]:
    """Return the thread-per-column-reduction candidates (one per slice count), or why there are none."""
    from warpwise.skills.library import builtin_library

    card = builtin_library().get("thread-per-column-reduction")
    if card is None or card.rules is None:
        return [], "the thread-per-column-reduction card did not load"
    rules = card.rules
    ck, why = rules.recognise(model, fn)
    if ck is None:
        return [], f"thread-per-column-reduction: {why}"
    out = []
    for slices in rules.SLICE_CHOICES:
        text = rules.rewrite_source(model, fn.name, slices)
        if text is not None:
            mechanism = f"transformation thread-per-column-reduction, params slices={slices}"
            out.append((f"cols{slices}", text, rules.launch_changes(slices), mechanism))
    return out, "" if out else "thread-per-column-reduction: every slice count refused"


TRANSFORMATIONS: tuple[Callable[[Any, Any], tuple[list[tuple[str, bytes, tuple[Any, ...], str]], str]], ...] = (
    _block_partials,
    _row_cooperative,
    _thread_per_column,
)


def prep(out: Path, rows: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write the naive kernels, the candidates, their problem files and the manifest; return the manifest."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.analyzers.model import FunctionKind
    from warpwise.verify.launch import problem_source

    rows = ROWS if rows is None else rows
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout)
    entries: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for rel, row in rows.items():
        cu = ROOT / rel
        problem = cu.with_name(cu.stem + ".problem.py")
        model = analyze_text(cu.read_bytes(), str(cu))
        fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
        folder = out / _op_folder(rel)
        folder.mkdir(parents=True, exist_ok=True)

        candidates: list[tuple[str, bytes, tuple[Any, ...], str]] = [
            ("naive", cu.read_bytes(), (), "none: the naive kernel")
        ]
        reasons = []
        for transform in TRANSFORMATIONS:
            got, why = transform(model, fn)
            candidates += got
            if why:
                reasons.append(why)
        for key, text, changes, mechanism in candidates:
            name = f"{cu.stem}__{key}"
            (folder / f"{name}.cu").write_bytes(text)
            src = problem.read_text()
            (folder / f"{name}.problem.py").write_text(problem_source(src, changes, changes) if changes else src)
            entries.append(
                {
                    "original": rel,
                    "candidate": f"{folder.name}/{name}",
                    "kernel": fn.name,
                    "key": key,
                    "mechanism": mechanism,
                    "launch": [c.to_dict() for c in changes],
                    "kind": row["kind"],
                    "target": row["target"],
                }
            )
        if len(candidates) == 1:
            refused.append({"file": rel, "kernel": fn.name, "why": reasons})
    manifest = {"commit": commit, "dirty": dirty, "entries": entries, "refused": refused}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def _ident(candidate: str) -> str:
    """Return corpus_check's name of a prep entry (`naive/<operator>/<style>__<key>`)."""
    return f"naive/{candidate}"


def report(manifest: dict[str, Any], corpus: dict[str, Any]) -> dict[str, Any]:
    """Return one row per kernel file: the naive kernel, the fastest correct candidate and eager, with targets."""
    results = {r["entry"]: r for r in corpus.get("results", [])}
    peaks = corpus.get("peaks") or {}
    rows: dict[str, dict[str, Any]] = {}
    bad: list[dict[str, Any]] = []
    for e in manifest["entries"]:
        r = results.get(_ident(e["candidate"]), {"status": "not_run"})
        row = rows.setdefault(
            e["original"],
            {"file": e["original"], "kernel": e["kernel"], "kind": e["kind"], "target": e["target"], "candidates": []},
        )
        t = r.get("timing") if r.get("status") == "ok" else None
        item = {
            "key": e["key"],
            "mechanism": e["mechanism"],
            "status": r.get("status", "not_run"),
            "ms": t["kernel"]["median_ms"] if t else None,
            "eager_ms": t["eager"]["median_ms"] if t else None,
            "vs_eager": t["speedup_vs_eager"] if t else None,
            "pct_copy": t["pct_copy"] if t else None,
            "geometry": t["geometry"] if t else None,
        }
        if e["key"] == "naive":
            row["naive"] = item
        else:
            row["candidates"].append(item)
            if item["status"] in ("incorrect", "compile_failed"):
                bad.append({"candidate": e["candidate"], "status": item["status"], "error": r.get("error", "")})
    for row in rows.values():
        timed = [c for c in row["candidates"] if c["ms"] is not None]
        best = min(timed, key=lambda c: c["ms"]) if timed else None
        row["best"] = best
        naive = row.get("naive") or {}
        if best is not None and naive.get("ms"):
            row["best_vs_naive"] = naive["ms"] / best["ms"]
        shown = best or naive
        if row["kind"] == "reduction":
            row["met"] = shown.get("pct_copy") is not None and shown["pct_copy"] >= REDUCTION_TARGET_PCT
        else:
            row["met"] = shown.get("vs_eager") is not None and shown["vs_eager"] >= ROW_TARGET_X
    incorrect = sum(1 for b in bad if b["status"] == "incorrect")
    return {
        "what": "issue 19, session 7: naive kernel, semantic rewrites and torch eager for the rows that missed targets",
        "commit": manifest.get("commit"),
        "dirty": manifest.get("dirty"),
        "device": corpus.get("device"),
        "peaks": peaks,
        "seconds": corpus.get("seconds"),
        "rows": list(rows.values()),
        "refused": manifest.get("refused", []),
        "incorrect_candidates": incorrect,
        "failed_candidates": bad,
    }


def _fmt(v: float | None, spec: str, suffix: str = "") -> str:
    return "" if v is None else f"{v:{spec}}{suffix}"


def render(rep: dict[str, Any], command: str) -> str:
    """Return the Markdown report."""
    peaks = rep.get("peaks") or {}
    lines = [
        "# Issue 19, session 7: reductions with per-block partials and the Welford layernorm on the GPU",
        "",
        f"Command: `{command}`. Warpwise commit `{rep.get('commit')}`"
        + (" (working tree with changes)" if rep.get("dirty") else "")
        + f"; device: {json.dumps(rep.get('device'))}; copy peak (read + write) measured in the same run: "
        + (f"{peaks['copy_gbps']:.0f} GB/s" if "copy_gbps" in peaks else "not measured")
        + f"; {rep.get('seconds')} s in corpus_check. No public code, no lineage plan, no LLM.",
        "",
        "Checks: bench/gpu/corpus_check.py (outputs against the problem's torch `reference()` on the small presets and"
        " three seeds at full size, outputs poisoned first); timing: CUDA events, L2 flushed before every run, median."
        " Share of copy: the bytes the operator must move (`bytes_moved`) per second against the measured copy.",
        "",
        f"Candidates found incorrect: **{rep['incorrect_candidates']}** (target 0).",
        "",
        "| kernel file | naive ms | best ms | eager ms | naive vs eager | best vs eager | best vs naive | share of copy"
        " | mechanism | target | met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rep["rows"]:
        naive = row.get("naive") or {}
        best = row.get("best") or {}
        shown = best or naive
        lines.append(
            f"| {row['file']} | {_fmt(naive.get('ms'), '.4f')} | {_fmt(best.get('ms'), '.4f')} "
            f"| {_fmt(shown.get('eager_ms'), '.4f')} | {_fmt(naive.get('vs_eager'), '.2f', 'x')} "
            f"| {_fmt(best.get('vs_eager'), '.2f', 'x')} | {_fmt(row.get('best_vs_naive'), '.2f', 'x')} "
            f"| {_fmt(shown.get('pct_copy'), '.0f', '%')} | {best.get('mechanism', 'none: no candidate ran')} "
            f"| {row['target']} | {'yes' if row['met'] else '**no**'} |"
        )
    lines += [
        "",
        "## Every candidate",
        "",
        "| kernel file | key | status | ms | vs eager | share of copy | grid, block |",
    ]
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rep["rows"]:
        for c in [row.get("naive") or {}, *row["candidates"]]:
            lines.append(
                f"| {row['file']} | {c.get('key', '')} | {c.get('status', '')} | {_fmt(c.get('ms'), '.4f')} "
                f"| {_fmt(c.get('vs_eager'), '.2f', 'x')} | {_fmt(c.get('pct_copy'), '.0f', '%')} "
                f"| {c.get('geometry') and c['geometry'][:2]} |"
            )
    if rep["refused"]:
        lines += ["", "## Rows no transformation took", ""]
        lines += [f"- `{r['file']}` (`{r['kernel']}`): " + "; ".join(r["why"]) for r in rep["refused"]]
    if rep["failed_candidates"]:
        lines += ["", "## Candidates that failed", ""]
        lines += [f"- `{b['candidate']}`: {b['status']} {b['error'][:200]}" for b in rep["failed_candidates"]]
    return "\n".join(lines) + "\n"


def run(prep_dir: Path, out: Path, budget_s: float, command: str) -> int:
    """Run corpus_check over the prep folder on the GPU, then write s7_19.json and s7_19.md under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    corpus_out = out / "corpus"
    check = ROOT / "bench" / "gpu" / "corpus_check.py"
    cmd = [sys.executable, str(check), "--suite", str(prep_dir), "--no-experts", "--out", str(corpus_out)]
    cmd += ["--budget-s", str(budget_s), "--deadline-s", "30"]
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    corpus_file = corpus_out / "corpus_check.json"
    if not corpus_file.is_file():
        print(f"corpus_check wrote no results (exit {proc.returncode})", file=sys.stderr)
        return 1
    manifest = json.loads((prep_dir / "manifest.json").read_text())
    rep = report(manifest, json.loads(corpus_file.read_text()))
    rep["command"] = command
    (out / "s7_19.json").write_text(json.dumps(rep, indent=1, sort_keys=True))
    (out / "s7_19.md").write_text(render(rep, command))
    shutil.rmtree(corpus_out / "__pycache__", ignore_errors=True)
    (corpus_out / "corpus_check.md").unlink(missing_ok=True)
    print((out / "s7_19.md").read_text())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one step."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prep", help="write the candidates (needs warpwise with tree-sitter)")
    p.add_argument("out", type=Path)
    r = sub.add_parser("run", help="check and time on the GPU, write s7_19.json and s7_19.md")
    r.add_argument("--prep", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--budget-s", type=float, default=120.0)
    args = ap.parse_args(argv)
    if args.step == "prep":
        m = prep(args.out)
        got = len([e for e in m["entries"] if e["key"] != "naive"])
        print(f"{got} candidates for {len(ROWS)} rows; refused: {[r['file'] for r in m['refused']]}")
        return 0
    command = "python3 bench/row_coop/s7_19.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return run(args.prep, args.out, args.budget_s, command)


if __name__ == "__main__":
    sys.exit(main())
