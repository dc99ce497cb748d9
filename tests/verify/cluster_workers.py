"""Waiting for the workers a CPU cluster test started: on the scheduler's word, with a timeout and a clear failure.

A fixture that starts `warpwise worker` processes must not count the scheduler's workers once after a fixed sleep:
a worker is a fresh interpreter that imports warpwise and Dask, which on the shared 2-core machine under load
takes far longer than on an idle one. `wait_for_workers` asks the scheduler (Dask's `Client.wait_for_workers`)
until the workers the test asked for run, fails at once when a worker process exits, and fails after the timeout
with the workers that did join and the tail of each worker's log.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

JOIN_TIMEOUT_S = 180.0
"""How long the workers of one fixture may take to join (seconds)."""


def _tail(log: Path | None) -> str:
    if log is None or not log.is_file():
        return "(no log)"
    text = log.read_text(encoding="utf-8", errors="replace").strip()
    return text[-1500:] if text else "(empty log)"


def _names(client: Any) -> str:
    workers = client.scheduler_info()["workers"].values()
    return ", ".join(sorted(f"{w.get('name')} {w.get('status')} {w.get('resources', {})}" for w in workers)) or "none"


def wait_for_workers(
    client: Any,
    want: int,
    procs: Sequence[tuple[subprocess.Popen[bytes], Path | None]] = (),
    timeout_s: float = JOIN_TIMEOUT_S,
) -> None:
    """Return once the scheduler has `want` running workers; fail when a worker process exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        for proc, log in procs:
            if proc.poll() is not None:
                pytest.fail(
                    f"a `warpwise worker` exited with status {proc.returncode} before the cluster had {want} "
                    f"workers (joined: {_names(client)}); its log: {_tail(log)}"
                )
        left = deadline - time.monotonic()
        if left <= 0:
            logs = "; ".join(_tail(log) for _, log in procs) or "(no worker processes)"
            pytest.fail(
                f"the cluster has not {want} running workers after {timeout_s:.0f} s (joined: {_names(client)}); "
                f"worker logs: {logs}"
            )
        try:
            # Short waits, so that a worker that died is reported at once rather than at the deadline.
            client.wait_for_workers(want, timeout=min(left, 5.0))
            return
        except TimeoutError:
            continue


def start_logged(cmd: list[str], log: Path, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a worker process whose standard error goes to `log` (read back when it fails to join)."""
    with log.open("wb") as err:
        return subprocess.Popen(cmd, stderr=err, **kwargs)
