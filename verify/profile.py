"""Profiling and sanitizing a job's kernels with NVIDIA's tools, and classifying the bottleneck.

Both tools wrap a separate run of the worker in `--once` mode (each side launched once on seed 0), so neither
the long-lived worker nor the timing is disturbed:

- `ncu --clock-control none --csv --metrics ...` reads duration, DRAM and SM throughput (% of peak), achieved
  occupancy, registers, DRAM bytes and FP32 instruction counts. The clocks are left as the machine has them.
- `compute-sanitizer --tool memcheck` and `--tool racecheck` run the candidate; any reported error turns a
  passing result into `incorrect`.

The bottleneck is judged against the device's *measured* peaks (a large device-to-device copy for bandwidth, a
chain of independent FMAs for the FP32 rate), measured once per GPU and driver and kept in the result cache:
a kernel that reaches `BOUND_FRACTION` of one ceiling is bound by it; one that reaches neither is latency-bound.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable

from warpwise.verify.types import ProfileReport, Side, Status, VerificationResult, WorkerJob

METRICS = (
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "dram__bytes.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
)
BOUND_FRACTION = 0.6
"""A kernel reaching this fraction of a measured ceiling is called bound by it."""

_TIME_UNITS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1.0}
_BYTE_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def _once_command(job_file: str, side: str) -> list[str]:
    """Return the command that runs a job's kernels once."""
    return [sys.executable, "-P", "-m", "warpwise.verify.worker", "--once", job_file, "--side", side]


def _write_job(job: WorkerJob) -> str:
    """Write a job to a temporary file and return its path."""
    fd, path = tempfile.mkstemp(prefix="warpwise-job-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(job.to_dict(), fh)
    return path


def _number(text: str) -> float | None:
    """Parse a metric value such as `1,234.5` (None when it is not a number)."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_ncu_csv(text: str) -> list[dict[str, tuple[str, str]]]:
    """Return, per profiled kernel launch in order, metric name -> (unit, value) from `ncu --csv` output."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = csv.DictReader(io.StringIO(text[start:]))
    launches: dict[str, dict[str, tuple[str, str]]] = {}
    for row in rows:
        launch_id = row.get("ID")
        name = row.get("Metric Name")
        if launch_id is None or not name:
            continue
        launches.setdefault(launch_id, {})[name] = (row.get("Metric Unit") or "", row.get("Metric Value") or "")
    return [launches[k] for k in sorted(launches, key=lambda s: int(s) if s.isdigit() else 0)]


def classify(metrics: dict[str, tuple[str, str]], peaks: dict[str, float] | None) -> ProfileReport:
    """Turn one launch's metrics into a report with its bottleneck."""

    def value(name: str) -> float | None:
        unit_val = metrics.get(name)
        return _number(unit_val[1]) if unit_val else None

    dur = metrics.get("gpu__time_duration.sum")
    duration_ms = None
    if dur and _number(dur[1]) is not None:
        duration_ms = (_number(dur[1]) or 0.0) * _TIME_UNITS.get(dur[0], 1e-6)
    dram = metrics.get("dram__bytes.sum")
    dram_bytes = (_number(dram[1]) or 0.0) * _BYTE_UNITS.get(dram[0], 1) if dram and _number(dram[1]) else None
    ffma = value("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") or 0.0
    fadd = value("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum") or 0.0
    fmul = value("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum") or 0.0
    seconds = duration_ms / 1e3 if duration_ms else None
    gbps = dram_bytes / seconds / 1e9 if seconds and dram_bytes is not None else None
    gflops = (2 * ffma + fadd + fmul) / seconds / 1e9 if seconds else None
    dram_pct = value("dram__throughput.avg.pct_of_peak_sustained_elapsed")
    sm_pct = value("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    occupancy = value("sm__warps_active.avg.pct_of_peak_sustained_active")
    regs = value("launch__registers_per_thread")
    bw_frac = gbps / peaks["copy_gbps"] if peaks and gbps is not None and peaks.get("copy_gbps") else None
    fl_frac = gflops / peaks["fp32_gflops"] if peaks and gflops is not None and peaks.get("fp32_gflops") else None
    if bw_frac is not None and bw_frac >= BOUND_FRACTION:
        kind, why = "memory-bound", f"moves {gbps:.0f} GB/s, {100 * bw_frac:.0f}% of the measured copy bandwidth"
    elif fl_frac is not None and fl_frac >= BOUND_FRACTION:
        kind, why = "compute-bound", f"runs {gflops:.0f} GFLOP/s, {100 * fl_frac:.0f}% of the measured FP32 FMA rate"
    elif bw_frac is None and dram_pct is not None and dram_pct >= 100 * BOUND_FRACTION:
        kind, why = "memory-bound", f"DRAM throughput at {dram_pct:.0f}% of peak (no measured peaks)"
    elif fl_frac is None and sm_pct is not None and sm_pct >= 100 * BOUND_FRACTION:
        kind, why = "compute-bound", f"SM throughput at {sm_pct:.0f}% of peak (no measured peaks)"
    else:
        parts = []
        if bw_frac is not None:
            parts.append(f"DRAM at {100 * bw_frac:.0f}% of measured bandwidth")
        if fl_frac is not None:
            parts.append(f"FP32 at {100 * fl_frac:.0f}% of measured FMA rate")
        if occupancy is not None:
            parts.append(f"achieved occupancy {occupancy:.0f}%")
        kind = "latency-bound"
        why = "neither ceiling is near: " + (", ".join(parts) or "no throughput metrics were read")
    return ProfileReport(
        duration_ms=duration_ms,
        dram_pct=dram_pct,
        sm_pct=sm_pct,
        occupancy_pct=occupancy,
        registers=int(regs) if regs is not None else None,
        dram_gbps=gbps,
        gflops=gflops,
        bottleneck=kind,
        explanation=why,
        metrics=tuple(sorted((k, u, v) for k, (u, v) in metrics.items())),
    )


def _base_name(name_expression: str) -> str:
    """Return the plain function name of a name expression (`ns::k<float>` -> `k`)."""
    return name_expression.split("<", 1)[0].split("::")[-1].strip()


def profile(job: WorkerJob, result: VerificationResult, peaks: dict[str, float] | None) -> VerificationResult:
    """Profile both kernels with ncu and attach the reports (the result is unchanged when ncu is missing)."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return result.with_(message=result.message + "; not profiled: ncu is not installed")
    names = {_base_name(job.original.name_expression), _base_name(job.candidate.name_expression)}
    job_file = _write_job(job)
    try:
        cmd = [ncu, "--clock-control", "none", "--csv", "--kernel-name-base", "function"]
        cmd += ["-k", "regex:^(" + "|".join(re.escape(n) for n in sorted(names)) + ")$"]
        cmd += ["--metrics", ",".join(METRICS), *_once_command(job_file, "both")]
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=job.options.time_limit_s * 2,
                check=False,
                cwd=tempfile.gettempdir(),
            )
        except subprocess.TimeoutExpired:
            return result.with_(message=result.message + "; ncu ran past its time limit")
    finally:
        os.unlink(job_file)
    launches = parse_ncu_csv(proc.stdout)
    if len(launches) < 2:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        return result.with_(message=result.message + "; ncu gave no metrics: " + " | ".join(tail))
    return result.with_(original_profile=classify(launches[0], peaks), candidate_profile=classify(launches[1], peaks))


def sanitize(job: WorkerJob, result: VerificationResult) -> VerificationResult:
    """Run the candidate under compute-sanitizer (memcheck, then racecheck); errors make the result incorrect."""
    tool = shutil.which("compute-sanitizer")
    if tool is None:
        return result.with_(message=result.message + "; not sanitized: compute-sanitizer is not installed")
    job_file = _write_job(job)
    logs: list[str] = []
    try:
        for check in ("memcheck", "racecheck"):
            # API errors of the host program (PyTorch probing the driver) are not the kernel's; only device
            # errors count.
            cmd = [tool, "--tool", check, "--report-api-errors", "no", "--error-exitcode", "86"]
            cmd += ["--print-limit", "20"]
            cmd += _once_command(job_file, Side.CANDIDATE.value)
            try:
                proc = subprocess.run(
                    cmd,
                    capture_output=True,
                    text=True,
                    timeout=job.options.time_limit_s * 4,
                    check=False,
                    cwd=tempfile.gettempdir(),
                )
            except subprocess.TimeoutExpired:
                logs.append(f"{check}: ran past its time limit")
                continue
            out = proc.stdout + proc.stderr
            logs.append(f"== {check} ==\n{out.strip()[-4000:]}")
            m = re.search(r"ERROR SUMMARY: (\d+) error", out)
            errors = int(m.group(1)) if m else (1 if proc.returncode == 86 else 0)
            if errors:
                first = next((ln for ln in out.splitlines() if "=========" in ln and "rror" in ln), "")
                msg = f"compute-sanitizer {check} found {errors} error(s) in the candidate: {first.strip('= ')}"
                return result.with_(status=Status.INCORRECT, message=msg, sanitizer_log="\n".join(logs))
    finally:
        os.unlink(job_file)
    return result.with_(sanitizer_log="\n".join(logs))


PeaksSource = Callable[[], dict[str, float] | None]
