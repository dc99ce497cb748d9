"""Write the Markdown tables of one `realworld_aa.py` run (its JSON and env.txt from the GPU machine).

    python3 bench/gpu/realworld_aa_report.py OUT_DIR > bench/results/realworld_aa-DATE-TAG.tables.md

The prose around the tables (what ran, what it says) is written by hand into the result file beside them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _spec_from(origin: str | None) -> str:
    """Say where a spec came from, in a few words."""
    if not origin:
        return "-"
    if origin.startswith("inferred through the call"):
        return "caller in the project"
    if "torch binding" in origin:
        return "torch binding"
    return "host code"


def tables(result: dict[str, Any]) -> str:
    """Return the A/A and optimize tables."""
    lines = [
        "| repository | kernel | spec from | builder | status | speedup median [low, high] | A/A noise "
        "| kernel time (ms) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["aa"]:
        sp = (
            f"{r['speedup_median']:.4f} [{r['speedup_low']:.3f}, {r['speedup_high']:.3f}]"
            if r.get("speedup_median") is not None
            else "-"
        )
        lines.append(
            f"| {r['repo']} | `{r['kernel']}` | {_spec_from(r.get('spec'))} | {r.get('builder') or '-'} "
            f"| {r['status']} | {sp} | {r.get('aa_noise', '-')} | {r.get('original_median_ms', '-')} |"
        )
    timed = [r["speedup_median"] for r in result["aa"] if r.get("speedup_median") is not None]
    n = sum(r["status"] == "not_faster" for r in result["aa"])
    lines += ["", f"{n}/{len(result['aa'])} answered `not_faster`."]
    if timed:
        lines.append(f"Medians of the {len(timed)} timed kernels range over {min(timed):.4f} to {max(timed):.4f}.")
    others = [r for r in result["aa"] if r["status"] != "not_faster"]
    if others:
        lines += ["", "Not `not_faster`:"]
        lines += [f"- `{r['kernel']}` ({r['repo']}): `{r['status']}`: {r['message']}" for r in others]
    lines += [
        "",
        "| repository | kernel | exit | stop | best | mechanism | speedup median [low, high] |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["optimize"]:
        rep = r.get("report") or {}
        best = rep.get("best") or {}
        sp = best.get("speedup") or {}
        speed = f"{sp['median']:.4f} [{sp['low']:.4f}, {sp['high']:.4f}]" if sp.get("median") else "-"
        lines.append(
            f"| {r['repo']} | `{r['kernel']}` | {r['exit']} | {rep.get('stop_reason', '-')} "
            f"| {best.get('title', 'none verified') if best else 'none verified'} "
            f"| {_mechanism(rep)} | {speed} |"
        )
    return "\n".join(lines)


def _mechanism(rep: dict[str, Any]) -> str:
    """Return the mechanism of every step on the path to the best version (`kind:card`), or `-`."""
    if not rep.get("best"):
        return "-"
    steps = [n for n in rep.get("path") or [] if n.get("kind") not in (None, "start")] or [rep["best"]]
    return " + ".join(f"{n.get('kind')}:{n['card']}" if n.get("card") else str(n.get("kind")) for n in steps)


def main() -> int:
    out = Path(sys.argv[1])
    result = json.loads((out / "realworld_aa.json").read_text())
    env = (out / "env.txt").read_text() if (out / "env.txt").is_file() else ""
    print(f"Command: `{result['command']}` ({result['seconds']} s); warpwise from `{result['warpwise_module']}`  ")
    print("Environment: " + "; ".join(ln.strip() for ln in env.splitlines() if ln.strip()) + "\n")
    print(tables(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
