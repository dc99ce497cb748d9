"""Render the row-cooperative-reduction GPU results: every candidate against torch eager, and the gate's verdicts.

Reads the output folders of `bench/row_coop/gpu_batch.sh` runs (each with `corpus/corpus_check.json`, `gate.jsonl`
and `env.txt`) and the manifests of `bench/row_coop/prep.py` they ran, and writes one JSON (everything measured,
merged) and one Markdown table: per kernel, the mechanism of each candidate (transformation and parameters), its
check against the problem's torch reference, its time against torch eager, and the gate's verdict against the naive
kernel. The best mapping per kernel is the fastest candidate that matched the reference.

Usage: python3 bench/row_coop/report.py OUT_STEM RUN_DIR:MANIFEST [RUN_DIR:MANIFEST ...]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROW_OPERATORS = {"softmax", "layernorm", "rmsnorm", "cross_entropy", "gemv", "masked_softmax", "rmsnorm_residual"}


def _mechanism(mapping: str) -> str:
    """Return the mechanism of a candidate from its mapping key (`warp4`, `block256`, `tree`)."""
    if mapping == "tree":
        return "transformation barrier-per-step-tree-reduction (warp shuffles)"
    if mapping.startswith("warp"):
        return f"transformation row-cooperative-reduction, params mode=warp rows_per_block={mapping[4:]}"
    return f"transformation row-cooperative-reduction, params mode=block threads={mapping[5:]}"


def _by_card(kernels: dict[str, list[dict]]) -> list[str]:
    """Return one line per card: kernels, geometric mean of its best candidate per kernel against eager."""
    out = []
    for family in ("row-cooperative-reduction", "barrier-per-step-tree-reduction"):
        per = []
        for cands in kernels.values():
            good = [c for c in cands if family in c["mechanism"] and c.get("check", {}).get("status") == "ok"]
            if good:
                per.append(max(c["check"]["timing"]["speedup_vs_eager"] for c in good))
        if per:
            gm = math.exp(sum(map(math.log, per)) / len(per))
            at = sum(1 for x in per if x >= 0.95)
            out.append(f"- {family} alone: {len(per)} kernels, {gm:.2f}x of eager (geomean), {at} at or above 0.95x.")
    return out


def _load(run: Path, manifest: Path) -> tuple[dict, list[dict], list[dict], dict]:
    corpus = json.loads((run / "corpus" / "corpus_check.json").read_text())
    gate = [json.loads(line) for line in (run / "gate.jsonl").read_text().splitlines() if line.strip()]
    man = json.loads(manifest.read_text())
    return corpus, gate, man["entries"], man


def main(stem: str, pairs: list[str]) -> int:
    """Merge the runs and write STEM.json and STEM.md."""
    runs = []
    for pair in pairs:
        run, manifest = pair.split(":", 1)
        corpus, gate, entries, man = _load(Path(run), Path(manifest))
        runs.append(
            {
                "dir": run,
                "corpus": corpus,
                "gate": gate,
                "entries": entries,
                "commit": man["commit"],
                "env": (Path(run) / "env.txt").read_text(),
            }
        )
    by_candidate: dict[str, dict] = {}
    for r in runs:
        meta = {e["candidate"][: -len(".cu")]: e for e in r["entries"]}
        for res in r["corpus"]["results"]:
            key = res["entry"].removeprefix("naive/")
            e = meta.get(key)
            if e is None:
                continue
            prev = by_candidate.get(key, {})
            by_candidate[key] = {**prev, **e, "mechanism": _mechanism(e["mapping"]), "run": r["dir"], "check": res}
        for g in r["gate"]:
            key = g["candidate"][: -len(".cu")]
            by_candidate.setdefault(key, dict(g))["gate"] = {"run": r["dir"]} | {
                k: g.get(k)
                for k in ("status", "message", "speedup", "original_ms", "candidate_ms", "mismatch", "wall_s")
            }
    kernels: dict[str, list[dict]] = {}
    for c in by_candidate.values():
        kernels.setdefault(c["original"], []).append(c)
    lines = []
    incorrect = []
    best_rows = []
    for original, cands in sorted(kernels.items()):
        for c in sorted(cands, key=lambda c: c["mapping"]):
            chk = c.get("check", {})
            ok = chk.get("status") == "ok"
            checks = chk.get("checks", [])
            passed = sum(1 for x in checks if x.get("ok"))
            t = chk.get("timing") or {}
            g = c.get("gate") or {}
            if (checks and passed < len(checks)) or g.get("status") == "incorrect":
                incorrect.append(c["candidate"])
            sp = g.get("speedup") or {}
            gate_cell = (
                f"{g['status']} {sp['median']:.2f}x [{sp['low']:.2f}..{sp['high']:.2f}]"
                if g.get("status") and sp
                else (g.get("status") or "")
            )
            nan = float("nan")
            k_ms = t.get("kernel", {}).get("median_ms", nan)
            e_ms = t.get("eager", {}).get("median_ms", nan)
            head = f"| {original} | `{c['kernel']}` | {c['mechanism']} |"
            gpu_s = float(chk.get("seconds") or 0.0) + float(g.get("wall_s") or 0.0)
            if ok:
                lines.append(
                    f"{head} {passed}/{len(checks)} | {k_ms:.3f} | {e_ms:.3f} | "
                    f"{t.get('speedup_vs_eager', nan):.2f}x | {t.get('pct_copy', nan):.0f}% | {gate_cell} | "
                    f"{gpu_s:.1f} |"
                )
            else:
                lines.append(f"{head} {chk.get('status', 'not run')} | | | | | {gate_cell} | {gpu_s:.1f} |")
        good = [c for c in cands if c.get("check", {}).get("status") == "ok"]
        if good:
            b = max(good, key=lambda c: c["check"]["timing"]["speedup_vs_eager"])
            op = original.split("/")[2]
            best_rows.append((original, b, op))
    md = [
        "# Row-cooperative and tree reductions on the H200: both naive suites, against torch eager and through the "
        "gate (2026-12-01)",
        "",
        "What: the rewrites of the `row-cooperative-reduction` card (`skills/row-cooperative-reduction/`), applied by "
        "`bench/row_coop/prep.py` to every kernel of `bench/suite` and `bench/suite_ood` that the card recognises "
        "(14 of 67: the others are refused with a reason, listed in the JSON), once per mapping the search may "
        "choose, and of the `barrier-per-step-tree-reduction` card (`skills/barrier-per-step-tree-reduction/`) on "
        "every kernel it recognises (13). Mechanism of every row: the transformation named, with its parameters (no "
        "lineage, no LLM, no other card). Each card is applied alone to the naive kernel.",
        "",
        "Commands: here `.venv/bin/python bench/row_coop/prep.py .carry-wt19s/prep` (manifest and candidates), "
        "then on the device machine `CARRY=.carry-wt19s bash .carry-wt19s/src/bench/row_coop/gpu_batch.sh` (which "
        "runs `python3 bench/gpu/corpus_check.py --suite PREP --no-experts` and "
        "`python3 bench/row_coop/gate_check.py PREP`), then `python3 bench/row_coop/report.py` over the runs.",
        "",
    ]
    for r in runs:
        dev = r["corpus"]["device"]
        md.append(
            f"- Run `{Path(r['dir']).name}`: code at commit `{r['commit']}` (branch s2-19); {dev['gpu']} "
            f"({dev['arch']}, {dev['sm_count']} SMs), torch {dev['torch']}, NVRTC {dev['nvrtc']}; started "
            f"{r['corpus']['started']} UTC; copy peak {r['corpus']['peaks']['copy_gbps']:.0f} GB/s. No public code."
        )
    md += [
        "",
        "Checks (corpus_check): the candidate's outputs against the problem file's torch `reference()` on the "
        "`tiny` and `odd` presets and three seeds at full size, outputs poisoned before each run. Timing: CUDA "
        "events, warm-up, L2 flushed before every run, median of repetitions by time budget, torch `eager()` timed "
        "the same way. Gate: `warpwise.verify.gate.Gate` (local backend), the naive kernel against the candidate "
        "launched with the card's `LaunchChange`, three seeds, within the problem's tolerance; `verified` means "
        "correct on every seed and faster than the naive kernel by more than the measured spread.",
        "",
        f"Candidates the gate or the reference check found incorrect: **{len(incorrect)}**"
        + (f" ({', '.join(incorrect)})" if incorrect else "")
        + f" of {len(by_candidate)}.",
        "",
        "## Best mapping per kernel (fastest candidate that matched the reference)",
        "",
        "| kernel file | operator | mechanism | vs eager | share of copy bandwidth | row operator >= 0.95x eager |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    logs = []
    for original, b, op in best_rows:
        t = b["check"]["timing"]
        row_op = op in ROW_OPERATORS or op == "batched_gemv_bias"
        target = ("yes" if t["speedup_vs_eager"] >= 0.95 else "**no**") if row_op else ""
        logs.append(math.log(t["speedup_vs_eager"]))
        md.append(
            f"| {original} | {op} | {b['mechanism']} | {t['speedup_vs_eager']:.2f}x | {t['pct_copy']:.0f}% | {target} |"
        )
    gated = [c["gate"] for c in by_candidate.values() if c.get("gate")]
    below = [
        f"`{b['kernel']}` ({op}, {b['check']['timing']['speedup_vs_eager']:.2f}x)"
        for _, b, op in best_rows
        if b["check"]["timing"]["speedup_vs_eager"] < 0.95
    ]
    gate_maps = ", ".join(sorted({c["mapping"] for c in by_candidate.values() if c.get("gate")}))
    md += [
        "",
        f"Gate: {sum(1 for g in gated if g['status'] == 'verified')} of {len(gated)} candidates run through the gate "
        f"verified against their naive kernel ({gate_maps} mappings; the others were checked against the torch "
        "reference only).",
        "",
        "Below 0.95x of eager: " + (", ".join(below) if below else "none") + ".",
        "",
        f"Geometric mean of the best candidates against eager: {math.exp(sum(logs) / len(logs)):.2f}x over "
        f"{len(logs)} kernels. By card:",
        "",
        *_by_card(kernels),
        "",
        "## Every candidate",
        "",
        "| kernel file | kernel | mechanism | checks | kernel ms | eager ms | vs eager | share of copy "
        "| gate vs naive | GPU s (check + gate) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *lines,
        "",
    ]
    Path(stem + ".md").write_text("\n".join(md))
    Path(stem + ".json").write_text(
        json.dumps(
            {
                "candidates": by_candidate,
                "runs": [
                    {k: r[k] for k in ("dir", "commit", "env")}
                    | {"device": r["corpus"]["device"], "peaks": r["corpus"]["peaks"]}
                    for r in runs
                ],
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
