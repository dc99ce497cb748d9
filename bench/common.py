"""Helpers shared by the benchmarks: machine description, percentiles, and writing dated result files."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
ANCHOR = ROOT.parent / "shared" / "bench" / "anchor_kernels.cu"


def anchor_path() -> Path:
    """Return the shared anchor file (the `ANCHOR_KERNELS` environment variable overrides it)."""
    return Path(os.environ.get("ANCHOR_KERNELS", ANCHOR))


def percentile(values: list[float], q: float) -> float:
    """Return the q-th percentile (0..100) by linear interpolation."""
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def summary_ms(seconds: list[float]) -> dict[str, float]:
    """Return median, p99, min and max in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return {
        "median_ms": round(statistics.median(ms), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "min_ms": round(min(ms), 3),
        "max_ms": round(max(ms), 3),
        "runs": len(ms),
    }


def machine() -> dict[str, Any]:
    """Describe the machine a CPU benchmark ran on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "commit": commit,
    }


def write_result(name: str, data: dict[str, Any], markdown: str) -> Path:
    """Write `bench/results/<name>-<date>.json` and `.md`, stamped with date, machine and command."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    now = _dt.datetime.now(_dt.UTC)
    stamp = now.strftime("%Y-%m-%d")
    command = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    meta = {"date": now.isoformat(timespec="seconds"), "command": command, "machine": machine()}
    doc = {"meta": meta, **data}
    out = RESULTS / f"{name}-{stamp}.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    md = RESULTS / f"{name}-{stamp}.md"
    md.write_text(
        f"# {name} ({stamp})\n\nCommand: `{command}`  \nMachine: {meta['machine']['cpu']}, "
        f"{meta['machine']['cores']} cores, Python {meta['machine']['python']}, commit {meta['machine']['commit']}\n\n"
        + markdown
        + "\n"
    )
    return out
