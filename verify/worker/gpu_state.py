"""The GPU's state around a measurement: SM clock, temperature, and other processes on the device.

A timing taken while the GPU throttled (its SM clock moved) or while another process ran on it cannot be told
from a real one by the numbers alone (NVBench and SOL-ExecBench record both for this reason). `Sampler` reads
the state before the timed runs, every few milliseconds while they run (on a thread), and after them; the gate
retries a measurement whose SM clock moved by more than `CLOCK_TOLERANCE` or that shared the GPU, and the result
carries the `TimingConditions` of the measurement it kept.

The readings come from NVML through `pynvml` (the `nvidia-ml-py` package) when it is installed, else from
`nvidia-smi`; where neither answers, the conditions say so and nothing is retried. Other processes are counted
as the compute processes NVML lists on the device beyond this one (process ids are not compared, since in a
container NVML reports the host's ids). Worker-side module: the standard library only, `pynvml` when present.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from typing import Any

from warpwise.verify.types import TimingConditions

CLOCK_TOLERANCE = 0.05
"""A measurement whose SM clock's lowest and highest readings differ by more than this fraction is retried."""
SAMPLE_INTERVAL_S = 0.01
SMI_INTERVAL_S = 0.25


@dataclass(frozen=True, slots=True)
class Reading:
    """One reading of the device: SM clock (MHz), temperature (C), compute processes on it (None: unknown)."""

    sm_mhz: float | None
    temp_c: float | None
    processes: int | None


class _Nvml:
    """Readings through NVML."""

    source = "nvml"
    interval_s = SAMPLE_INTERVAL_S

    def __init__(self, uuid: str) -> None:
        import pynvml

        self.nv: Any = pynvml
        pynvml.nvmlInit()
        ident = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        try:
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(ident)
        except Exception:
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(_visible_index())

    def read(self) -> Reading:
        nv, h = self.nv, self.handle
        try:
            sm = float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
        except Exception:
            sm = None
        try:
            temp = float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        except Exception:
            temp = None
        try:
            procs: int | None = len(nv.nvmlDeviceGetComputeRunningProcesses(h))
        except Exception:
            procs = None
        return Reading(sm, temp, procs)


class _Smi:
    """Readings through `nvidia-smi` (slower: one process per reading)."""

    source = "nvidia-smi"
    interval_s = SMI_INTERVAL_S

    def __init__(self, uuid: str) -> None:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            raise OSError("nvidia-smi is not on PATH")
        self.exe = exe
        self.ident = (uuid if uuid.startswith("GPU-") else f"GPU-{uuid}") if uuid else str(_visible_index())
        self.read()

    def _query(self, *args: str) -> list[str]:
        out = subprocess.run(
            [self.exe, *args, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10
        )
        if out.returncode != 0:
            raise OSError(out.stderr.strip() or f"nvidia-smi exited with {out.returncode}")
        return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]

    def read(self) -> Reading:
        rows = self._query("-i", self.ident, "--query-gpu=clocks.sm,temperature.gpu,uuid")
        sm = temp = None
        uuid = ""
        if rows:
            parts = [p.strip() for p in rows[0].split(",")]
            sm, temp = _number(parts[0]), _number(parts[1] if len(parts) > 1 else "")
            uuid = parts[2] if len(parts) > 2 else ""
        procs: int | None = None
        try:
            apps = self._query("--query-compute-apps=gpu_uuid")
            procs = sum(1 for a in apps if not uuid or a == uuid)
        except (OSError, subprocess.TimeoutExpired):
            procs = None
        return Reading(sm, temp, procs)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _visible_index() -> int:
    """Return the index of the first GPU this process may use (CUDA_VISIBLE_DEVICES, else 0)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def open_reader(uuid: str) -> tuple[Any | None, str]:
    """Return a reader for the device with this UUID (NVML, else nvidia-smi), or None and why there is none."""
    errors = []
    for cls in (_Nvml, _Smi):
        try:
            return cls(uuid), ""
        except Exception as exc:  # A missing library or tool is expected; the next one is tried.
            errors.append(f"{cls.source}: {type(exc).__name__}: {exc}")
    return None, "; ".join(errors)


class Sampler:
    """Read the device before, during (on a thread) and after a block of timed runs."""

    def __init__(self, reader: Any, why_none: str = "") -> None:
        self.reader = reader
        self.why_none = why_none
        self.readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> None:
        try:
            self.readings.append(self.reader.read())
        except Exception:  # A reading that fails is left out; the others still count.
            return

    def _loop(self) -> None:
        while not self._stop.wait(self.reader.interval_s):
            self._read()

    def __enter__(self) -> Sampler:
        if self.reader is not None:
            self._read()
            self._thread = threading.Thread(target=self._loop, daemon=True, name="gpu-sampler")
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.reader is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        self._read()

    def conditions(self, attempt: int, retried_because: tuple[str, ...] = ()) -> TimingConditions:
        """Return the conditions of this measurement."""
        if self.reader is None or not self.readings:
            return TimingConditions(
                source="none",
                attempts=attempt,
                retried_because=retried_because,
                note=f"GPU clocks and processes could not be read ({self.why_none or 'no readings'})",
            )
        clocks = [r.sm_mhz for r in self.readings if r.sm_mhz is not None]
        temps = [r.temp_c for r in self.readings if r.temp_c is not None]
        procs = [r.processes for r in self.readings if r.processes is not None]
        first, last = self.readings[0], self.readings[-1]
        # This process holds a context on the device while it times, so one compute process is expected.
        others = max(0, max(procs) - 1) if procs else -1
        return TimingConditions(
            source=self.reader.source,
            sm_mhz_before=first.sm_mhz or 0.0,
            sm_mhz_after=last.sm_mhz or 0.0,
            sm_mhz_min=min(clocks) if clocks else 0.0,
            sm_mhz_max=max(clocks) if clocks else 0.0,
            temp_c_before=first.temp_c or 0.0,
            temp_c_after=last.temp_c or 0.0,
            temp_c_max=max(temps) if temps else 0.0,
            other_processes=others,
            samples=len(self.readings),
            attempts=attempt,
            retried_because=retried_because,
        )


def unsettled(c: TimingConditions) -> str:
    """Return why a measurement must be retried (its clock moved, or it shared the GPU), or '' when it is clean."""
    if c.source == "none":
        return ""
    why = []
    if c.sm_mhz_max > 0 and (c.sm_mhz_max - c.sm_mhz_min) / c.sm_mhz_max > CLOCK_TOLERANCE:
        move = (c.sm_mhz_max - c.sm_mhz_min) / c.sm_mhz_max
        why.append(f"the SM clock moved {100 * move:.0f}% ({c.sm_mhz_min:.0f}-{c.sm_mhz_max:.0f} MHz)")
    if c.other_processes > 0:
        why.append(f"{c.other_processes} other process{'es' if c.other_processes != 1 else ''} used the GPU")
    return " and ".join(why)
