"""Write the markdown report of the scalar-elementwise-map batch from its committed result files.

Reads RESULTS/candidates.json and RESULTS/naive.json (bench/gpu/corpus_check.py over the prepared candidates and
over the naive kernels, in the same run), RESULTS/gate.jsonl (bench/row_coop/gate_check.py) and
RESULTS/manifest.json (bench/elementwise_map/prep.py), and prints the report: the best measured variant of each
kernel against torch eager, the gate's verdict against the naive kernel, the share of the copy bandwidth, GPU
seconds, and every candidate.

Usage: python3 bench/elementwise_map/report.py bench/results/elementwise_map-2026-12-02 > REPORT.md
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def _rows(path: Path) -> dict[str, dict]:
    data = json.loads(path.read_text())
    return {r["entry"].removeprefix("naive/"): r for r in data["results"]}, data


def _vs_eager(r: dict) -> float | None:
    t = r.get("timing") or {}
    k, e = (t.get("kernel") or {}).get("median_ms"), (t.get("eager") or {}).get("median_ms")
    return e / k if k and e else None


def _share(r: dict, copy_gbps: float) -> float | None:
    t = r.get("timing") or {}
    return t["gbps"] / copy_gbps if t.get("gbps") else None


def main(folder: Path) -> int:
    """Print the report."""
    cands, cdata = _rows(folder / "candidates.json")
    naive, ndata = _rows(folder / "naive.json")
    manifest = json.loads((folder / "manifest.json").read_text())
    gate = {}
    for line in (folder / "gate.jsonl").read_text().splitlines():
        g = json.loads(line)
        gate[g["candidate"].removesuffix(".cu")] = g
    copy = cdata["peaks"]["copy_gbps"]
    by_kernel: dict[str, list[dict]] = {}
    for e in manifest["entries"]:
        by_kernel.setdefault(e["original"], []).append(e)
    incorrect = [
        k for k, r in cands.items() if r["status"] != "ok" or not all(c["ok"] for c in r.get("checks", []))
    ] + [k for k, g in gate.items() if g["status"] == "incorrect"]
    dev = cdata["device"]
    out = [
        "# Elementwise maps with lineage plans off: the scalar-elementwise-map transformation on both naive suites "
        "(H200, 2026-12-02)",
        "",
        "What: the transformation card `scalar-elementwise-map` (`skills/scalar-elementwise-map/`), applied alone by "
        "`bench/elementwise_map/prep.py` to every elementwise kernel of `bench/suite` and `bench/suite_ood` (operators "
        "bias_gelu, gelu_f16, bias_relu, gelu_tanh, silu_mul), once per parameter choice (V = 1, 2 or 4 vectors of 16 "
        "bytes per array per thread; the guarded forms launched with grid.x divided by the elements per thread, the "
        "stride loops with their launch). Mechanism of every row: that transformation with the parameter named (no "
        "lineage plan, no LLM, no other card). The search itself was not run: a kernel's row is the fastest of the "
        "transformation's variants measured here (what the search's transformation actions offer), not a search "
        "result. No public code.",
        "",
        "Commands: here `.venv/bin/python bench/elementwise_map/prep.py /work/main/.carry-wt19s/prep` (code: "
        f"commit {manifest['commit'][:10]} plus the card's folder as committed next, which regenerates the candidates "
        "byte for byte; a later commit also reads operands indexed through a quotient or a remainder of the element "
        "(`bias[i % cols]`, `in[(i / H) * 2 * H + i % H]`) as vector streams, which changes the candidates of "
        "bias_gelu, bias_relu/half_macro_hidden, bias_relu/modulo_col and silu_mul/concat_divmod: those are not "
        "measured here), then on the device machine `CARRY=.carry-wt19s bash .carry-wt19s/src/bench/elementwise_map/"
        "gpu_batch.sh` (run 1: `corpus_check.py --suite PREP` on the candidates and `--suite NAIVE` on the naive "
        "kernels, in the same process order and on the same GPU), and `python3 bench/row_coop/gate_check.py PREP "
        "gate.jsonl --mappings v1,v2 --budget-s 85` (run 2, same machine, wheels installed), then "
        "`python3 bench/elementwise_map/report.py bench/results/elementwise_map-2026-12-02`.",
        "",
        f"- Device: {dev['gpu']} ({dev['arch']}, {dev['sm_count']} SMs), torch {dev['torch']}, NVRTC {dev['nvrtc']}; "
        f"candidates started {cdata['started']} UTC ({cdata['seconds']:.0f} s), naive kernels started "
        f"{ndata['started']} UTC ({ndata['seconds']:.0f} s); copy peak {copy:.0f} GB/s (1 GiB device copy, same run).",
        "",
        "Checks (corpus_check): outputs against the problem's torch `reference()` on the `tiny` and `odd` presets "
        "(sizes that are not multiples of the vector width: tails and misaligned rows take the scalar path) and three "
        "seeds at full size, outputs poisoned first. Timing: CUDA events, warm-up, L2 flushed before every run, median "
        "of repetitions ([IQR] in the tables), torch `eager()` timed the same way; share of copy = the fewest bytes "
        "the operator must move per second against the measured device copy. Gate: `warpwise.verify.gate.Gate` (local "
        "backend), the naive kernel against the candidate, three seeds within the problem's tolerance; `verified` = "
        "correct on every seed and faster by more than the measured spread.",
        "",
        f"Candidates the reference check or the gate found incorrect: **{len(incorrect)}** of {len(cands)} "
        f"({len(gate)} of them also through the gate).",
        "",
        "## Best variant per kernel",
        "",
        "| kernel file | form | naive vs eager | best vs eager | share of copy | mechanism | gate vs naive | "
        "GPU s (naive + candidates + gate) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    naive_x, best_x = [], []
    for original, entries in sorted(by_kernel.items()):
        op = Path(original).parent.name + ("_ood" if "suite_ood" in original else "")
        n = naive.get(f"{op}/{Path(original).stem}") or (naive.get(op) if Path(original).stem == "naive" else None)
        scored = [(e, cands.get(e["candidate"].removesuffix(".cu"))) for e in entries]
        scored = [(e, r) for e, r in scored if r is not None and _vs_eager(r) is not None]
        if not scored or n is None:
            continue
        e, r = max(scored, key=lambda er: _vs_eager(er[1]) or 0.0)
        g = gate.get(e["candidate"].removesuffix(".cu"))
        gtext = "not run"
        if g is not None:
            sp = g.get("speedup") or {}
            gtext = f"{g['status']} {sp.get('median', 0):.2f}x [{sp.get('low', 0):.2f}..{sp.get('high', 0):.2f}]"
        secs = n.get("seconds", 0) + sum(rr.get("seconds", 0) for _, rr in scored)
        secs += sum(gate[k]["wall_s"] for k in gate if k.startswith(op + "/" + Path(original).stem + "__"))
        nv, bv = _vs_eager(n), _vs_eager(r)
        naive_x.append(nv)
        best_x.append(bv)
        out.append(
            f"| {original} | {e['form']} | {nv:.2f}x | {bv:.2f}x | {_share(r, copy):.0%} | {e['mechanism']} | {gtext} "
            f"| {secs:.1f} |"
        )
    gm = math.exp(sum(math.log(x) for x in best_x) / len(best_x))
    gn = math.exp(sum(math.log(x) for x in naive_x) / len(naive_x))
    out += [
        "",
        f"Geometric mean against torch eager over these {len(best_x)} kernels: naive {gn:.2f}x, best variant "
        f"**{gm:.2f}x**; at or above 0.95x: {sum(x >= 0.95 for x in best_x)} of {len(best_x)}.",
        "",
        "## Every candidate",
        "",
        "| candidate | mechanism | checks | kernel ms [IQR] | eager ms | vs eager | share of copy | gate vs naive |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in manifest["entries"]:
        key = e["candidate"].removesuffix(".cu")
        r = cands.get(key)
        if r is None:
            out.append(f"| {key} | {e['mechanism']} | not run | | | | | |")
            continue
        t = r["timing"]
        checks = f"{sum(c['ok'] for c in r['checks'])}/{len(r['checks'])}"
        g = gate.get(key)
        gtext = ""
        if g is not None:
            sp = g.get("speedup") or {}
            gtext = (
                f"{g['status']} {sp.get('median', 0):.2f}x ({g.get('original_ms', 0):.3f} -> "
                f"{g.get('candidate_ms', 0):.3f} ms)"
            )
        out.append(
            f"| {key} | {e['mechanism']} | {checks} | {t['kernel']['median_ms']:.3f} [{t['kernel']['iqr_ms']:.3f}] | "
            f"{t['eager']['median_ms']:.3f} | {_vs_eager(r):.2f}x | {_share(r, copy):.0%} | {gtext} |"
        )
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
