"""Peak memory of `warpwise check` as the number of files grows: flat, and at most 200 MiB for 5,000 files.

Generates N files (three distinct kernels each, `tests/security/sources.py`) in a temporary folder and runs
`python -m warpwise check FOLDER --format F` as a child process for each N and format, with its output written to a
file; the peak resident memory of that process (`ru_maxrss` from `wait4`) is the figure. Issue 16 found 1.1 GB
for 5,000 files; the promise is at most 200 MiB, and that the peak does not grow with the number of files.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import write_result

from tests.security.sources import many_kernels

BOUND_MIB = 200.0


def make_files(folder: Path, count: int) -> None:
    """Write `count` files of three distinct kernels each."""
    for k in range(count):
        sub = folder / f"d{k // 500:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"k{k:05d}.cu").write_text(many_kernels(3, salt=k))


def peak_mib(argv: list[str], out: Path) -> tuple[float, int, float]:
    """Run a command; return its peak resident memory in MiB, its exit status and its wall time in seconds."""
    t0 = time.perf_counter()
    with out.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, proc.returncode, time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,1000,5000")
    parser.add_argument("--formats", default="text,json,sarif")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    formats = args.formats.split(",")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for count in counts:
            folder = Path(tmp) / f"files{count}"
            folder.mkdir()
            make_files(folder, count)
            for fmt in formats:
                out = Path(tmp) / f"out-{count}.{fmt}"
                argv = [sys.executable, "-m", "warpwise", "check", str(folder), "--format", fmt]
                mib, rc, wall = peak_mib(argv, out)
                size = out.stat().st_size
                rows.append(
                    {
                        "files": count,
                        "format": fmt,
                        "peak_mib": round(mib, 1),
                        "exit": rc,
                        "wall_s": round(wall, 1),
                        "output_bytes": size,
                    }
                )
                print(rows[-1], flush=True)
    worst = max(r["peak_mib"] for r in rows if r["files"] == max(counts))
    by_format = {fmt: [r["peak_mib"] for r in rows if r["format"] == fmt] for fmt in formats}
    growth = {fmt: round(v[-1] - v[0], 1) for fmt, v in by_format.items()}
    table = ["| files | format | peak RSS | exit | wall | output |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        table.append(
            f"| {r['files']} | {r['format']} | {r['peak_mib']:.1f} MiB | {r['exit']} | {r['wall_s']:.1f} s | "
            f"{r['output_bytes']:,} B |"
        )
    md = (
        "Each run: `python -m warpwise check FOLDER --format F > file`, a child process; peak RSS is its "
        "`ru_maxrss`. Files: three generated kernels each (`tests/security/sources.py`).\n\n"
        + "\n".join(table)
        + f"\n\nPeak at {max(counts)} files: {worst:.1f} MiB (bound {BOUND_MIB:g} MiB). Growth from "
        f"{min(counts)} to {max(counts)} files: " + ", ".join(f"{fmt} {g:+.1f} MiB" for fmt, g in growth.items()) + "."
    )
    name = "check_memory" + (f"-{args.label}" if args.label else "")
    path = write_result(name, {"rows": rows, "bound_mib": BOUND_MIB, "growth_mib": growth}, md)
    print(md)
    print(path)
    return 0 if worst <= BOUND_MIB else 1


if __name__ == "__main__":
    raise SystemExit(main())
