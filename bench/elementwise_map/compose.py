"""Compose the two-suite headline (lineage plans off) from committed per-transformation result files.

Each source is a committed report whose table gives, per naive kernel, the best measured candidate of one batch of
transformations against torch eager (measured in that batch's run, eager timed in the same run, so ratios from
different runs are comparable; the absolute times are not mixed): `row_cache-2026-12-02.md` (the 60 naive kernels,
row operators and reductions transformed, everything else as its naive kernel), `transforms_b-2026-12-02.md`
(tiled transposes, block-private histograms) and `elementwise_map-2026-12-02.md` (elementwise maps). A kernel's row
is the source with the highest ratio. This is a composition of best measured parameters per kernel, NOT an
end-to-end search: which variant a budgeted search would reach is another measurement.

Usage: python3 bench/elementwise_map/compose.py > bench/results/headline_composed-2026-12-02.md
"""

from __future__ import annotations

import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
ROW_OPERATORS = {
    "softmax",
    "layernorm",
    "rmsnorm",
    "rmsnorm_residual",
    "cross_entropy",
    "gemv",
    "batched_gemv_bias",
    "masked_softmax",
}
"""The operators the issue's row-operator target (>= 0.95x eager) counts."""


def _table(path: Path, heading: str) -> list[list[str]]:
    text = path.read_text()
    part = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in part.splitlines():
        if line.startswith("| bench/"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _x(cell: str) -> float:
    m = re.match(r"([0-9.]+)x", cell)
    assert m is not None, cell
    return float(m.group(1))


def _pct(cell: str) -> float | None:
    m = re.match(r"([0-9.]+)%", cell)
    return float(m.group(1)) if m else None


def main() -> int:
    """Print the composed headline."""
    base = RESULTS / "row_cache-2026-12-02.md"
    rows: dict[str, dict] = {}
    for r in _table(base, "## Headline"):
        rows[r[0]] = {
            "operator": r[1],
            "naive": _x(r[2]),
            "best": _x(r[3]),
            "share": _pct(r[4]),
            "mechanism": r[5],
            "source": f"{base.name} ({r[6]})",
        }
    others = (
        (RESULTS / "transforms_b-2026-12-02.md", "## Best candidate per kernel", 2, 3, 1),
        (RESULTS / "elementwise_map-2026-12-02.md", "## Best variant per kernel", 3, 4, 5),
    )
    for path, heading, best_col, share_col, mech_col in others:
        for r in _table(path, heading):
            row = rows.get(r[0])
            if row is None:
                continue
            best = _x(r[best_col])
            if best > row["best"]:
                row.update(best=best, share=_pct(r[share_col]), mechanism=r[mech_col], source=path.name)
    names = sorted(rows)
    gm = math.exp(sum(math.log(rows[n]["best"]) for n in names) / len(names))
    gn = math.exp(sum(math.log(rows[n]["naive"]) for n in names) / len(names))
    row_ops = [n for n in names if rows[n]["operator"] in ROW_OPERATORS]
    below = [n for n in row_ops if rows[n]["best"] < 0.95]
    transposes = [n for n in names if rows[n]["operator"] == "transpose"]
    reductions = [n for n in names if rows[n]["operator"] in ("sum", "reduce_sum")]
    out = [
        "# Two-suite headline with lineage plans off, composed from committed batch results (H200, 2026-12-02)",
        "",
        "What: for each of the 60 naive kernels of `bench/suite` and `bench/suite_ood` (contractions left to issue "
        "20), the best candidate against torch eager among three committed batches of transformations, each measured "
        "on an H200 with its eager baseline timed in the same run: `bench/results/row_cache-2026-12-02.md` (row "
        "operators and reductions; every other kernel as its naive kernel), `bench/results/transforms_b-2026-12-02.md`"
        " (tiled transposes, block-private histograms), `bench/results/elementwise_map-2026-12-02.md` (elementwise "
        "maps). Each row names the mechanism (transformation and parameter) and the file it comes from. No lineage "
        "plan, no LLM. **Not an end-to-end search**: every row is the best measured parameter of a transformation, "
        "not what a budgeted `warpwise optimize` reached; that measurement (`bench/search_compare.py --lineage off` "
        "over both suites) was not run in this session.",
        "",
        "Command: `python3 bench/elementwise_map/compose.py > bench/results/headline_composed-2026-12-02.md`.",
        "",
        f"Geometric mean against torch eager over {len(names)} kernels: naive {gn:.2f}x, best **{gm:.2f}x** "
        "(target >= 1.0x).",
        f"Row operators at or above 0.95x: {len(row_ops) - len(below)} of {len(row_ops)}; below: "
        + (", ".join(f"`{n}` ({rows[n]['best']:.2f}x)" for n in below) or "none")
        + ".",
        "Transposes (share of the copy bandwidth, target 85%): "
        + ", ".join(f"`{n}` {rows[n]['share']:.0f}%" for n in transposes if rows[n]["share"] is not None)
        + ".",
        "Reductions (share of the copy rate, target 85%): "
        + ", ".join(f"`{n}` {rows[n]['share']:.0f}%" for n in reductions if rows[n]["share"] is not None)
        + ".",
        "",
        "| kernel file | operator | naive vs eager | best vs eager | share of copy | mechanism | from |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n in names:
        r = rows[n]
        share = f"{r['share']:.0f}%" if r["share"] is not None else ""
        out.append(
            f"| {n} | {r['operator']} | {r['naive']:.2f}x | {r['best']:.2f}x | {share} | {r['mechanism']} | "
            f"{r['source']} |"
        )
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
