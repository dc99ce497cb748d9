"""How long `warpwise check` takes over a big tree in each output format, and when its first line arrives.

    python bench/check_output.py [--copies 40] [--repeat 3] [--label after]

The tree is the shared anchor file (`anchor_kernels.cu`, 60 kernels) copied `--copies` times into nested
folders of a temporary directory. Each format (text, json, sarif) runs `--repeat` times as a fresh
`python -m warpwise check --format F TREE` process (stdout read through a pipe, so a terminal's speed does not
count); the result records the wall time (median, min), the time until the first byte of output (a streamed
format prints its first file long before the last is analysed) and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import anchor_path, write_result

FORMATS = ("text", "json", "sarif")


def make_tree(root: Path, copies: int) -> None:
    """Copy the anchor file `copies` times, ten files per folder."""
    anchor = anchor_path()
    for i in range(copies):
        folder = root / f"part{i // 10:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(anchor, folder / f"anchor_{i:04d}.cu")


def run_once(fmt: str, tree: Path) -> dict[str, Any]:
    """Run one `warpwise check` process; return wall time, time to first byte, peak RSS and output size."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "warpwise", "check", "--format", fmt, str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    t_first = time.perf_counter() - t0
    size = len(first) + sum(len(chunk) for chunk in iter(lambda: proc.stdout.read(1 << 16), b""))  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": round(wall, 3),
        "first_byte_s": round(t_first, 3),
        "max_rss_kib": usage.ru_maxrss,
        "bytes": size,
        "exit": proc.returncode,
    }


def main() -> int:
    """Run the benchmark and write bench/results/check_output-<label>-<date>.{json,md}."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--label", default="", help="a word for the result file's name (before / after)")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--note", default="", help="what code ran, when it is not the commit checked out")
    args = ap.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="warpwise-bench-") as tmp:
        tree = Path(tmp)
        make_tree(tree, args.copies)
        runs: dict[str, list[dict[str, Any]]] = {f: [] for f in formats}
        for _ in range(args.repeat):
            for fmt in formats:  # Interleaved, so that a slow moment of the machine hits every format alike.
                runs[fmt].append(run_once(fmt, tree))
                print(fmt, runs[fmt][-1], file=sys.stderr)
    ratios = (
        [round(t["wall_s"] / j["wall_s"], 3) for t, j in zip(runs["text"], runs["json"], strict=True)]
        if "text" in runs and "json" in runs
        else []
    )
    summary = {
        fmt: {
            "wall_median_s": round(statistics.median(r["wall_s"] for r in rs), 3),
            "wall_min_s": round(min(r["wall_s"] for r in rs), 3),
            "first_byte_median_s": round(statistics.median(r["first_byte_s"] for r in rs), 3),
            "max_rss_kib": max(r["max_rss_kib"] for r in rs),
            "bytes": rs[0]["bytes"],
            "exit": rs[0]["exit"],
        }
        for fmt, rs in runs.items()
    }
    rows = "\n".join(
        f"| {fmt} | {s['wall_median_s']:.2f} | {s['wall_min_s']:.2f} | {s['first_byte_median_s']:.2f} | "
        f"{s['max_rss_kib'] / 1024:.0f} | {s['bytes']} |"
        for fmt, s in summary.items()
    )
    anchor = anchor_path()
    md = (
        f"Tree: `{anchor.name}` copied {args.copies} times ({args.copies * anchor.stat().st_size / 2**20:.1f} MiB, "
        f"{args.copies * 60} kernels); {args.repeat} runs per format, interleaved; stdout to a pipe.\n\n"
        "| format | wall median s | wall min s | first byte median s | peak RSS MiB | output bytes |\n"
        "| --- | --- | --- | --- | --- | --- |\n" + rows
    )
    if ratios:
        md += (
            f"\n\nText over JSON wall time, run by run (each pair ran back to back): "
            f"{', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}."
        )
    md += f"\n\nLoad average (1 min) before and after: {load[0]:.1f}, {os.getloadavg()[0]:.1f} (a shared machine)."
    if args.note:
        md = f"Code: {args.note}\n\n" + md
    data = {
        "note": args.note,
        "copies": args.copies,
        "repeat": args.repeat,
        "anchor": anchor.name,
        "summary": summary,
        "text_over_json": ratios,
        "load_average_1min": [load[0], os.getloadavg()[0]],
        "runs": runs,
    }
    name = "check_output" + (f"-{args.label}" if args.label else "")
    out = write_result(name, data, md)
    print(md)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
