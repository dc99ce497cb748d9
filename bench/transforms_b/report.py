"""Render the GPU results of issue 19 part B: tiled transposes and block-private histograms.

Reads the output folders of `bench/transforms_b/gpu_batch.sh` runs (each with `corpus/corpus_check.json`,
`gate.jsonl` and `env.txt`), takes from each run the operator folders named for it (a later run of fixed code
replaces an earlier one's rows), and the manifest of `bench/transforms_b/prep.py` (the candidates' mechanisms), and
writes one JSON (every row) and one Markdown table: per candidate its mechanism (transformation and parameters),
its check against the problem's torch reference, its time against torch eager and the copy bandwidth, and the
gate's verdict against the naive kernel (with both medians).

Usage: python3 bench/transforms_b/report.py OUT_STEM MANIFEST RUN_DIR=COMMIT=op1,op2 [RUN_DIR=COMMIT=ops ...]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def main(stem: str, manifest: str, specs: list[str]) -> int:
    """Merge the runs and write STEM.json and STEM.md."""
    man = json.loads(Path(manifest).read_text())
    meta = {e["candidate"][: -len(".cu")]: e for e in man["entries"]}
    rows: dict[str, dict] = {}
    runs = []
    for spec in specs:
        run, commit, ops = spec.split("=", 2)
        wanted = set(ops.split(","))
        corpus = json.loads((Path(run) / "corpus" / "corpus_check.json").read_text())
        gate = [json.loads(x) for x in (Path(run) / "gate.jsonl").read_text().splitlines() if x.strip()]
        runs.append({"dir": Path(run).name, "commit": commit, "operators": sorted(wanted), "corpus": corpus})
        for res in corpus["results"]:
            key = res["entry"].removeprefix("naive/")
            if key.split("/")[0] in wanted and key in meta:
                rows.setdefault(key, dict(meta[key]))
                rows[key].update({"run": Path(run).name, "commit": commit, "check": res})
        for g in gate:
            key = g["candidate"][: -len(".cu")]
            if key.split("/")[0] in wanted and key in meta:
                rows.setdefault(key, dict(meta[key]))
                rows[key]["gate"] = {"run": Path(run).name, "commit": commit} | {
                    k: g.get(k) for k in ("status", "message", "speedup", "original_ms", "candidate_ms", "wall_s")
                }
    incorrect = []
    table = []
    best: dict[str, dict] = {}
    for key in sorted(rows):
        c = rows[key]
        chk, g = c.get("check", {}), c.get("gate") or {}
        checks = chk.get("checks", [])
        passed = sum(1 for x in checks if x.get("ok"))
        if (checks and passed < len(checks)) or g.get("status") == "incorrect":
            incorrect.append(key)
        t = chk.get("timing") or {}
        sp = g.get("speedup") or {}
        gpu_s = float(chk.get("seconds") or 0.0) + float(g.get("wall_s") or 0.0)
        gate_cell = (
            f"{g['status']} {sp['median']:.2f}x [{sp['low']:.2f}..{sp['high']:.2f}] "
            f"({g['original_ms']:.3f} -> {g['candidate_ms']:.3f} ms)"
            if g.get("status") and sp and g.get("candidate_ms")
            else (g.get("status") or "")
        )
        if chk.get("status") == "ok":
            k_ms, e_ms = t["kernel"]["median_ms"], t["eager"]["median_ms"]
            table.append(
                f"| {c['original']} | `{c['kernel']}` | {c['mechanism']} | {passed}/{len(checks)} | {k_ms:.3f} | "
                f"{e_ms:.3f} | {t['speedup_vs_eager']:.2f}x | {t['pct_copy']:.0f}% | {gate_cell} | {gpu_s:.1f} | "
                f"{c['run']} |"
            )
            if (
                c["original"] not in best
                or t["speedup_vs_eager"] > best[c["original"]]["check"]["timing"]["speedup_vs_eager"]
            ):
                best[c["original"]] = c
        else:
            status = str(chk.get("status", "not run")).splitlines()[0][:80]
            table.append(
                f"| {c['original']} | `{c['kernel']}` | {c['mechanism']} | {status} | | | | | {gate_cell} | "
                f"{gpu_s:.1f} | {c.get('run', '')} |"
            )
    md = [
        "# Tiled transposes and block-private histograms on the H200, against torch eager and through the gate "
        "(2026-12-02)",
        "",
        "What: the rewrites of two transformations of issue 19 (part B), each applied alone to the naive kernels of "
        "`bench/suite` and `bench/suite_ood` it recognises, once per parameter choice: the tiled copy of "
        "`strided-transpose-access` (`recognise_transpose`, `tiled_body`: tile 32 or 64, the launch kept or one "
        "block of 32 x 8 / 32 x 16 threads per tile) on the 4 transposes, and the block-private copy of "
        "`per-thread-global-atomics` (`recognise_histogram`, `private_histogram_body`: the launch kept, or "
        "coarsened with the grid capped) on the 3 integer histograms (`scatter_add_rows` has float counters and is "
        "refused, as listed in the manifest). Mechanism of every row: the transformation named with its parameters "
        "(no lineage plan, no LLM, no other card). No public code.",
        "",
        "Commands: here `.venv/bin/python bench/transforms_b/prep.py /work/main/.carry-wt16/prep`, then on the device "
        "machine `CARRY=.carry-wt16 bash .carry-wt16/src/bench/transforms_b/gpu_batch.sh` (which runs "
        "`python3 bench/gpu/corpus_check.py --suite PREP --no-experts` and `python3 bench/row_coop/gate_check.py "
        "PREP`), then `python3 bench/transforms_b/report.py` over the runs. Run `9`: `RUN_TESTS=0 CORPUS_BUDGET=42 "
        "GATE_BUDGET=35` (gate on `t32_kept,t64_b32x8,priv_kept,priv_coarse_cap1024`); run `10`: `RUN_TESTS=0 "
        "CORPUS_ARGS='--only transpose,transpose_ood' GATE_MAPPINGS=t32_kept,t64_b32x8`.",
        "",
    ]
    for r in runs:
        dev = r["corpus"]["device"]
        md.append(
            f"- Run `{r['dir']}`: code at commit `{r['commit']}` (branch s3-19b), rows of {', '.join(r['operators'])}; "
            f"{dev['gpu']} ({dev['arch']}, {dev['sm_count']} SMs), torch {dev['torch']}, NVRTC {dev['nvrtc']}; "
            f"started {r['corpus']['started']} UTC; copy peak {r['corpus']['peaks']['copy_gbps']:.0f} GB/s."
        )
    md += [
        "",
        "Earlier runs, not in the tables: a first batch at 02:16 UTC timed a scalar-only version of the tiled copy "
        "(never committed; 66-69% of copy at best, all 24 candidates correct); run `9` also built the transposes of "
        "commit `f919628`, whose `__builtin_memcpy` NVRTC does not declare (compile failed in corpus_check; the "
        "gate had fallen back to nvcc and verified them), fixed in `c27884d` and re-run as run `10`. Device time "
        "of the three batches: 31.6 s, 60.2 s and 33.3 s of command wall time.",
    ]
    logs = [math.log(b["check"]["timing"]["speedup_vs_eager"]) for b in best.values()]
    md += [
        "",
        "Checks (corpus_check): outputs against the problem's torch `reference()` on the `tiny` and `odd` presets "
        "and three seeds at full size, outputs poisoned first. Timing: CUDA events, warm-up, L2 flushed before every "
        "run, median of repetitions, torch `eager()` timed the same way; share of copy = bytes the operator must "
        "move / time, against the 1 GiB device copy measured in the same run. Gate: `warpwise.verify.gate.Gate` "
        "(local backend), naive kernel against candidate, three seeds; `verified` = correct on every seed and "
        "faster by more than the measured spread.",
        "",
        f"Candidates the gate or the reference check found incorrect: **{len(incorrect)}**"
        + (f" ({', '.join(incorrect)})" if incorrect else "")
        + f" of {len(rows)}.",
        "",
        "## Best candidate per kernel",
        "",
        "| kernel file | mechanism | vs eager | share of copy bandwidth |",
        "| --- | --- | --- | --- |",
    ]
    for original, b in sorted(best.items()):
        t = b["check"]["timing"]
        md.append(f"| {original} | {b['mechanism']} | {t['speedup_vs_eager']:.2f}x | {t['pct_copy']:.0f}% |")
    md += [
        "",
        f"Geometric mean of the best candidates against eager: {math.exp(sum(logs) / len(logs)):.2f}x over "
        f"{len(logs)} kernels.",
        "",
        "## Every candidate",
        "",
        "| kernel file | kernel | mechanism | checks | kernel ms | eager ms | vs eager | share of copy | gate vs naive "
        "| GPU s (check + gate) | run |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *table,
        "",
    ]
    Path(f"{stem}.md").write_text("\n".join(md))
    Path(f"{stem}.json").write_text(
        json.dumps({"runs": runs, "rows": rows, "incorrect": incorrect, "refused": man.get("refused", [])}, indent=1)
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
