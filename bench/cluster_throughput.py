"""Verification on a Dask cluster: one GPU worker against two, identical results, and a worker killed mid-run.

On one machine with two GPUs, this starts a Dask scheduler (`python -m distributed.cli.dask_scheduler`) and
`warpwise worker` processes, one per GPU, each pinned with `CUDA_VISIBLE_DEVICES` and declaring `--gpus 1`. The
verification queue submits through the `cluster` backend (`ClusterBackend`), exactly as `warpwise verify
--backend cluster` does. The pairs are those of `bench/verify_throughput.py` (pair k: a strided original and a
coalesced candidate of `op<k>`, every pair distinct text).

Phases (each with fresh workers, a fresh build cache and a fresh result cache, so that nothing is reused):

- `1gpu`: one worker (GPU 0); `2gpu`: two workers (GPU 0 and 1); repeated `--reps` times, alternating. Every
  worker first runs one warm-up pair (outside the measured set) so that its start (importing torch, creating the
  CUDA context) is not counted. Throughput is the measured pairs over the wall clock from the first submission
  to the last result.
- `kill`: two workers; once `--kill-after` pairs are done and the second worker is executing a job, that worker
  process is sent SIGKILL. Its job must be re-run on the other worker, every pair must come back with its result,
  no pair may be completed twice, and the SQLite cache must hold exactly one result per key.

Every execution is counted on the worker side: a Dask worker plugin appends one JSON line when a job starts
executing and one when it ends (`done` when its result reached worker memory), with the worker's name and pid.

Results of the `2gpu` and `kill` phases are compared with the first `1gpu` phase's pair by pair: the same status,
and speedup ranges (original's quartiles over candidate's) that overlap.

Run on the two-GPU machine: `python3 bench/cluster_throughput.py --out $OUT`. Without a GPU,
`--compile-only --pairs 12` runs the same machinery with compile-only jobs (a dry run; nothing is written to
`bench/results` unless `--write`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result
from distributed import Client
from distributed.diagnostics.plugin import WorkerPlugin
from verify_throughput import N, candidate_of

from warpwise.verify.backends import GPU_RESOURCE, ClusterBackend, remote_run
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate, PreparedJob, prepare
from warpwise.verify.jobqueue import VerificationQueue
from warpwise.verify.types import Options, Status, VerificationResult

T_START = time.monotonic()


def say(msg: str) -> None:
    """Print a progress line with the seconds since the start."""
    print(f"[{time.monotonic() - T_START:7.1f}s] {msg}", flush=True)


class JobLog(WorkerPlugin):
    """Worker-side record of every execution of a warpwise job: one JSON line at its start and one at its end."""

    name = "warpwise-job-log"

    def __init__(self, path: str) -> None:
        self.path = path
        self.worker_name = ""

    def setup(self, worker: Any) -> None:
        """Remember which worker this is."""
        self.worker_name = str(worker.name)

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        """Log `start` when a job begins executing, `done` (or `left:STATE`) when it stops."""
        k = str(key)
        if not k.startswith("warpwise-"):
            return
        if finish == "executing":
            ev = "start"
        elif start == "executing":
            ev = "done" if finish == "memory" else f"left:{finish}"
        else:
            return
        line = json.dumps({"t": time.time(), "ev": ev, "key": k, "worker": self.worker_name, "pid": os.getpid()})
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def read_log(path: Path) -> list[dict[str, Any]]:
    """Return the job log's records (none when it does not exist yet)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


@dataclass
class WorkerProc:
    """A `warpwise worker` process."""

    name: str
    gpu: str | None
    proc: subprocess.Popen[bytes]
    log: Path


@dataclass
class Cluster:
    """A scheduler process, a client, and the current worker processes."""

    work: Path
    compile_only: bool
    scheduler: subprocess.Popen[bytes] | None = None
    address: str = ""
    client: Any = None
    workers: dict[str, WorkerProc] = field(default_factory=dict)

    def start(self) -> None:
        """Start the scheduler and connect a client."""
        sched_file = self.work / "scheduler.json"
        log = open(self.work / "scheduler.log", "wb")  # noqa: SIM115 - kept open for the process's life
        self.scheduler = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(sched_file),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(self.work),
        )
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            if self.scheduler.poll() is not None:
                raise RuntimeError("the scheduler exited: " + (self.work / "scheduler.log").read_text()[-2000:])
            time.sleep(0.1)
        time.sleep(0.2)
        self.address = json.loads(sched_file.read_text())["address"]
        self.client = Client(self.address, timeout="30s")
        say(f"scheduler at {self.address}")

    def start_workers(self, phase: str, gpus: list[str], joblog: Path) -> list[WorkerProc]:
        """Start one `warpwise worker` per GPU (fresh build cache each) and wait until all joined."""
        self.client.register_plugin(JobLog(str(joblog)), name=JobLog.name)
        started = []
        for i, gpu in enumerate(gpus):
            name = f"{phase}-gpu{gpu}" if not self.compile_only else f"{phase}-w{i}"
            cache = self.work / phase / name
            cache.mkdir(parents=True, exist_ok=True)
            env = {**os.environ, "WARPWISE_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}
            if not self.compile_only:
                env["CUDA_VISIBLE_DEVICES"] = gpu
            log = self.work / f"worker-{name}.log"
            cmd = [sys.executable, "-P", "-m", "warpwise", "worker", "--scheduler", self.address, "--gpus", "1"]
            proc = subprocess.Popen(
                [*cmd, "--name", name],
                env=env,
                stdout=open(log, "wb"),  # noqa: SIM115 - the child holds it
                stderr=subprocess.STDOUT,
                cwd=str(cache),
            )
            w = WorkerProc(name, gpu, proc, log)
            self.workers[name] = w
            started.append(w)
        deadline = time.monotonic() + 90
        want = {w.name for w in started}
        while time.monotonic() < deadline:
            names = {v.get("name") for v in self.client.scheduler_info(n_workers=-1)["workers"].values()}
            if want <= names:
                break
            for w in started:
                if w.proc.poll() is not None:
                    raise RuntimeError(f"worker {w.name} exited: {w.log.read_text()[-2000:]}")
            time.sleep(0.1)
        else:
            raise RuntimeError(f"workers {want} did not join in 90 s")
        return started

    def address_of(self, name: str) -> str:
        """Return the Dask address of a worker by name."""
        for addr, info in self.client.scheduler_info(n_workers=-1)["workers"].items():
            if info.get("name") == name:
                return str(addr)
        raise KeyError(name)

    def stop_workers(self) -> None:
        """Stop every worker process (SIGTERM, then SIGKILL) and wait until the scheduler forgot them."""
        for w in self.workers.values():
            if w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        for w in self.workers.values():
            try:
                w.proc.wait(15)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait(5)
        self.workers.clear()
        deadline = time.monotonic() + 30
        while self.client.scheduler_info(n_workers=-1)["workers"] and time.monotonic() < deadline:
            time.sleep(0.1)

    def close(self) -> None:
        """Stop workers, client and scheduler."""
        with contextlib.suppress(Exception):
            self.stop_workers()
        with contextlib.suppress(Exception):
            self.client.close()
        if self.scheduler is not None and self.scheduler.poll() is None:
            self.scheduler.terminate()
            try:
                self.scheduler.wait(10)
            except subprocess.TimeoutExpired:
                self.scheduler.kill()


def warm_up(cluster: Cluster, workers: list[WorkerProc], options: Options, base: int) -> dict[str, float]:
    """Run one warm-up pair on each worker (outside the measured set); return seconds per worker."""
    futures = {}
    t0 = time.perf_counter()
    for i, w in enumerate(workers):
        prepared = prepare(candidate_of(base + i), options)
        assert isinstance(prepared, PreparedJob)
        futures[w.name] = cluster.client.submit(
            remote_run,
            prepared.job.to_dict(),
            options.compile_only,
            resources={GPU_RESOURCE: 1},
            workers=[cluster.address_of(w.name)],
            allow_other_workers=False,
            pure=False,
            key=f"warmup-{w.name}",
        )
    out = {}
    for name, f in futures.items():
        doc = f.result(timeout=300)
        out[name] = round(time.perf_counter() - t0, 2)
        say(f"warm-up on {name}: {doc['status']} after {out[name]} s")
    return out


@dataclass
class Kill:
    """When and whom to kill during a phase, and what happened."""

    victim: str
    after_done: int
    joblog: Path
    pid: int = 0
    killed_at: float = 0.0
    in_flight: list[str] = field(default_factory=list)
    children: list[int] = field(default_factory=list)
    done_before: int = 0
    fresh_s: float = 0.05
    children_gone_s: float | None = None
    children_left: list[int] = field(default_factory=list)


def kill_watch(cluster: Cluster, kill: Kill, stop: threading.Event) -> None:
    """Kill the victim (SIGKILL) once enough jobs are done and it has just started one; time its orphans."""
    import psutil

    w = cluster.workers[kill.victim]
    while not stop.is_set():
        recs = read_log(kill.joblog)
        done = sum(1 for r in recs if r["ev"] == "done")
        mine = [r for r in recs if r["worker"] == kill.victim]
        ended = {r["key"] for r in mine if r["ev"] != "start"}
        running = {r["key"]: r["t"] for r in mine if r["ev"] == "start" and r["key"] not in ended}
        # Only a job that started within the last `fresh_s` is surely still running when the signal lands.
        if done >= kill.after_done and running and time.time() - max(running.values()) < kill.fresh_s:
            with contextlib.suppress(psutil.Error):
                kill.children = [c.pid for c in psutil.Process(w.proc.pid).children(recursive=True)]
            os.kill(w.proc.pid, signal.SIGKILL)
            kill.pid = w.proc.pid
            kill.killed_at = time.time()
            kill.in_flight = sorted(running)
            kill.done_before = done
            w.proc.wait()
            deadline = time.monotonic() + 30
            while any(_alive(p) for p in kill.children) and time.monotonic() < deadline:
                time.sleep(0.01)
            kill.children_gone_s = round(time.time() - kill.killed_at, 3)
            kill.children_left = [p for p in kill.children if _alive(p)]
            say(
                f"SIGKILL {kill.victim} (pid {kill.pid}) after {done} done, executing {kill.in_flight}; its job "
                f"processes {kill.children} gone after {kill.children_gone_s} s (left: {kill.children_left})"
            )
            return
        time.sleep(0.005)


def _alive(pid: int) -> bool:
    """Return whether a process exists and is not a zombie."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def run_phase(
    cluster: Cluster,
    label: str,
    gpus: list[str],
    pairs: list[int],
    options: Options,
    warm_base: int,
    kill_after: int | None = None,
) -> dict[str, Any]:
    """Start workers, warm them up, verify every pair through the queue and the cluster backend; return figures."""
    phase_dir = cluster.work / label
    phase_dir.mkdir(parents=True, exist_ok=True)
    joblog = phase_dir / "joblog.jsonl"
    workers = cluster.start_workers(label, gpus, joblog)
    warm = warm_up(cluster, workers, options, warm_base)
    cache_path = phase_dir / "results.sqlite3"
    cache = ResultCache(cache_path)
    backend = ClusterBackend(cluster.client)
    capacity = backend.capacity()
    queue = VerificationQueue(Gate(backend, cache))
    kill = Kill(workers[-1].name, kill_after, joblog) if kill_after is not None else None
    stop = threading.Event()
    watcher = None
    if kill is not None:
        watcher = threading.Thread(target=kill_watch, args=(cluster, kill, stop), daemon=True)
        watcher.start()
    t0 = time.perf_counter()
    handles = [queue.submit(candidate_of(k), options) for k in pairs]
    results: list[VerificationResult | None] = [h.wait(timeout=600) for h in handles]
    wall = time.perf_counter() - t0
    stop.set()
    if watcher is not None:
        watcher.join(5)
    queue.close()
    time.sleep(0.5)  # let the last `done` lines land
    recs = [r for r in read_log(joblog) if r["key"].startswith("warpwise-")]
    key_of = {f"warpwise-{h.job_id}": k for h, k in zip(handles, pairs, strict=True)}
    starts: Counter[str] = Counter(r["key"] for r in recs if r["ev"] == "start")
    dones: Counter[str] = Counter(r["key"] for r in recs if r["ev"] == "done")
    done_on: dict[str, list[str]] = defaultdict(list)
    for r in recs:
        if r["ev"] == "done":
            done_on[r["key"]].append(r["worker"])
    statuses = Counter(r.status.value if r is not None else "lost" for r in results)
    per_worker = Counter(done_on[k][0] if done_on.get(k) else "none" for k in key_of)
    # The cache: rows, distinct keys, and rows per pair (original, candidate, spec) on any device.
    import sqlite3

    db = sqlite3.connect(cache_path)
    rows = db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM results").fetchone()
    per_pair = db.execute(
        "SELECT MAX(c), MIN(c), COUNT(*) FROM (SELECT COUNT(*) AS c FROM results "
        "GROUP BY original_hash, candidate_hash, spec_hash)"
    ).fetchone()
    cache_status = dict(db.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall())
    db.close()
    out: dict[str, Any] = {
        "label": label,
        "gpus": gpus,
        "workers": [w.name for w in workers],
        "capacity": capacity,
        "pairs": len(pairs),
        "warm_up_s": warm,
        "wall_s": round(wall, 3),
        "jobs_per_min": round(60 * len(pairs) / wall, 1),
        "statuses": dict(statuses),
        "lost": sum(1 for r in results if r is None or r.status in (Status.CRASHED, Status.TIMED_OUT)),
        "done_per_worker": dict(per_worker),
        "executions_started": sum(starts[k] for k in key_of),
        "executions_done": sum(dones[k] for k in key_of),
        "jobs_done_once": sum(1 for k in key_of if dones[k] == 1),
        "jobs_done_twice_or_more": sorted(key_of[k] for k in key_of if dones[k] > 1),
        "jobs_never_done": sorted(key_of[k] for k in key_of if dones[k] == 0),
        "cache_rows": rows[0],
        "cache_distinct_keys": rows[1],
        "cache_pairs": per_pair[2],
        "cache_rows_per_pair_max": per_pair[0],
        "cache_rows_per_pair_min": per_pair[1],
        "cache_statuses": cache_status,
        "stage_medians_s": _stage_medians(results),
        "by_pair": {k: _summary(r) for k, r in zip(pairs, results, strict=True)},
    }
    if kill is not None:
        out["kill"] = _kill_report(kill, recs, key_of, results, pairs)
        shutil.copy(joblog, cluster.work / f"joblog-{label}.jsonl")
    cluster.stop_workers()
    say(
        f"{label}: {len(pairs)} pairs in {wall:.2f} s = {out['jobs_per_min']} jobs/min on {capacity} GPU(s); "
        f"statuses {dict(statuses)}; per worker {dict(per_worker)}; cache rows {rows[0]}"
    )
    return out


def _kill_report(
    kill: Kill,
    recs: list[dict[str, Any]],
    key_of: dict[str, int],
    results: list[VerificationResult | None],
    pairs: list[int],
) -> dict[str, Any]:
    """Return what happened to the killed worker's jobs and processes."""
    rerun = {}
    for key in kill.in_flight:
        later = [r for r in recs if r["key"] == key and r["t"] >= kill.killed_at]
        rerun[str(key_of.get(key, key))] = {
            "started_on": [r["worker"] for r in recs if r["key"] == key and r["ev"] == "start"],
            "done_on": [r["worker"] for r in later if r["ev"] == "done"],
        }
    victim_done_after = [r for r in recs if r["worker"] == kill.victim and r["t"] > kill.killed_at]
    by_k = dict(zip(pairs, results, strict=True))
    return {
        "victim": kill.victim,
        "victim_pid": kill.pid,
        "killed_after_done": kill.done_before,
        "in_flight_at_kill": [key_of.get(k, k) for k in kill.in_flight],
        "rerun": rerun,
        "in_flight_results": {str(key_of[k]): _status(by_k.get(key_of[k])) for k in kill.in_flight if k in key_of},
        "victim_records_after_kill": len(victim_done_after),
        "victim_children": kill.children,
        "victim_children_gone_after_s": kill.children_gone_s,
        "victim_children_left": kill.children_left,
    }


def _status(r: VerificationResult | None) -> str:
    """Return a result's status, or `lost`."""
    return r.status.value if r is not None else "lost"


def _stage_medians(results: list[VerificationResult | None]) -> dict[str, float]:
    """Return the median build, check and time durations."""
    ds = [r.durations for r in results if r is not None]
    if not ds:
        return {}
    return {
        "build": round(statistics.median(d.build_s for d in ds), 4),
        "check": round(statistics.median(d.check_s for d in ds), 4),
        "time": round(statistics.median(d.time_s for d in ds), 4),
    }


def _summary(r: VerificationResult | None) -> dict[str, Any]:
    """Return what the comparison needs of one result."""
    if r is None:
        return {"status": "lost"}
    s = r.speedup
    return {
        "status": r.status.value,
        "gpu": r.device.gpu if r.device else "",
        "worker": r.worker.split(" (")[0],
        "speedup": None if s is None else [round(s.median, 4), round(s.low, 4), round(s.high, 4)],
    }


def compare(ref: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Compare two phases pair by pair: same status, overlapping speedup ranges."""
    same_status = 0
    overlap = 0
    median_inside = 0
    with_speedup = 0
    differing: list[dict[str, Any]] = []
    for k, a in ref["by_pair"].items():
        b = other["by_pair"][k]
        ok = a["status"] == b["status"]
        same_status += ok
        sa, sb = a.get("speedup"), b.get("speedup")
        if sa and sb:
            with_speedup += 1
            ov = sa[1] <= sb[2] and sb[1] <= sa[2]
            overlap += ov
            median_inside += sa[1] <= sb[0] <= sa[2]
            ok = ok and ov
        if not ok:
            differing.append({"pair": k, ref["label"]: a, other["label"]: b})
    ratios = [
        other["by_pair"][k]["speedup"][0] / a["speedup"][0]
        for k, a in ref["by_pair"].items()
        if a.get("speedup") and other["by_pair"][k].get("speedup")
    ]
    return {
        "pairs": len(ref["by_pair"]),
        "same_status": same_status,
        "with_speedup": with_speedup,
        "speedup_ranges_overlap": overlap,
        "median_inside_reference_range": median_inside,
        "median_speedup_ratio": round(statistics.median(ratios), 4) if ratios else None,
        "differing": differing[:10],
    }


def gpu_names() -> list[str]:
    """Return `name, driver` of every GPU that nvidia-smi lists (empty without one)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name,driver_version,pci.bus_id", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.strip() for ln in out.splitlines() if ln.strip()]


def main() -> int:
    """Run the phases and write the dated result files."""
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=100, help="distinct pairs per phase")
    p.add_argument("--start", type=int, default=2000, help="first pair number")
    p.add_argument("--reps", type=int, default=3, help="1gpu/2gpu repetitions (order alternating)")
    p.add_argument("--warm-pairs", type=int, default=40, help="pairs of a throwaway phase before measuring")
    p.add_argument("--kill-after", type=int, default=30, help="jobs done before the second worker is killed")
    p.add_argument("--budget-s", type=float, default=240, help="skip repetitions that would start after this")
    p.add_argument("--compile-only", action="store_true", help="dry run without a GPU (compile-only jobs)")
    p.add_argument("--write", action="store_true", help="write bench/results even in a compile-only dry run")
    p.add_argument("--out", default=os.environ.get("OUT"), help="also copy the result files and logs here")
    args = p.parse_args()
    names = gpu_names()
    say(f"GPUs: {names}")
    if not args.compile_only and len(names) < 2:
        print("cluster_throughput: needs two GPUs (or --compile-only)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="warpwise-cluster-"))
    os.environ["WARPWISE_CACHE_DIR"] = str(work / "client")
    options = Options(compile_only=args.compile_only)
    pairs = list(range(args.start, args.start + args.pairs))
    cluster = Cluster(work, args.compile_only)
    phases: list[dict[str, Any]] = []
    errors: list[str] = []
    warm_phase: dict[str, Any] = {}
    try:
        cluster.start()
        if args.warm_pairs:
            # A fresh machine is slower at first (its memory grows as it is used, files are read for the first
            # time): a throwaway phase on both GPUs, over other pairs, before anything is measured.
            w = run_phase(
                cluster, "machine-warm-up", ["0", "1"], list(range(80000, 80000 + args.warm_pairs)), options, 89000
            )
            warm_phase.update({k: w[k] for k in ("pairs", "wall_s", "jobs_per_min", "statuses", "stage_medians_s")})
        for rep in range(args.reps):
            if rep > 0 and time.monotonic() - T_START > args.budget_s:
                say(f"skipping repetition {rep + 1}: past the {args.budget_s:.0f} s budget")
                break
            order = [(f"1gpu-r{rep + 1}", ["0"]), (f"2gpu-r{rep + 1}", ["0", "1"])]
            for label, gpus in order if rep % 2 == 0 else order[::-1]:
                phases.append(run_phase(cluster, label, gpus, pairs, options, 90000 + 10 * len(phases)))
                save_partial(args.out, phases)
            if rep == 0:
                phases.append(
                    run_phase(cluster, "kill", ["0", "1"], pairs, options, 90000 + 10 * len(phases), args.kill_after)
                )
                save_partial(args.out, phases)
    except Exception as exc:
        import traceback

        traceback.print_exc()
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        cluster.close()
    data = summarize(phases, names, args, errors)
    data["machine_warm_up"] = warm_phase
    md = markdown(data)
    if args.out:
        out_dir = Path(args.out)
        logs = [*sorted(work.glob("worker-*.log")), work / "scheduler.log"]
        with open(out_dir / "workers.log", "w") as fh:
            for f in logs:
                if f.exists():
                    fh.write(f"===== {f.name}\n{f.read_text(errors='replace')[-20000:]}\n")
        for f in work.glob("joblog-*.jsonl"):
            shutil.copy(f, out_dir / f.name)
    if not args.compile_only or args.write:
        res = write_result("cluster_throughput", data, md)
        if args.out:
            for f in (res, res.with_suffix(".md")):
                shutil.copy(f, Path(args.out) / f.name)
    else:
        (work / "dry-run.json").write_text(json.dumps(data, indent=2))
        say(f"dry run: {work / 'dry-run.json'}")
    print(md)
    return 0 if not errors else 1


def save_partial(out: str | None, phases: list[dict[str, Any]]) -> None:
    """Write the phases so far to OUT/partial.json (kept if a later phase never ends)."""
    if out:
        (Path(out) / "partial.json").write_text(json.dumps(phases, indent=1))


def summarize(
    phases: list[dict[str, Any]], names: list[str], args: argparse.Namespace, errors: list[str]
) -> dict[str, Any]:
    """Return the result document: phases, throughput ratio, comparisons and the kill test's verdict."""
    one = [p for p in phases if p["label"].startswith("1gpu")]
    two = [p for p in phases if p["label"].startswith("2gpu")]
    kill = next((p for p in phases if p["label"] == "kill"), None)
    data: dict[str, Any] = {
        "gpus": names,
        "elements": N,
        "pairs": args.pairs,
        "compile_only": args.compile_only,
        "errors": errors,
        "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),
    }
    if one and two:
        j1 = [p["jobs_per_min"] for p in one]
        j2 = [p["jobs_per_min"] for p in two]
        data["throughput"] = {
            "1gpu_jobs_per_min": j1,
            "2gpu_jobs_per_min": j2,
            "ratio_of_medians": round(statistics.median(j2) / statistics.median(j1), 3),
            "ratio_per_rep": [round(b / a, 3) for a, b in zip(j1, j2, strict=False)],
            "target": 1.8,
        }
        data["equality"] = {p["label"]: compare(one[0], p) for p in [*one[1:], *two, *([kill] if kill else [])]}
    if kill is not None:
        k = kill["kill"]
        data["kill_test"] = {
            **k,
            "pairs": kill["pairs"],
            "lost": kill["lost"],
            "statuses": kill["statuses"],
            "executions_started": kill["executions_started"],
            "executions_done": kill["executions_done"],
            "jobs_done_once": kill["jobs_done_once"],
            "jobs_done_twice_or_more": kill["jobs_done_twice_or_more"],
            "jobs_never_done": kill["jobs_never_done"],
            "cache_rows": kill["cache_rows"],
            "cache_distinct_keys": kill["cache_distinct_keys"],
            "cache_rows_per_pair_max": kill["cache_rows_per_pair_max"],
            "passed": bool(
                k["in_flight_at_kill"]
                and kill["lost"] == 0
                and kill["jobs_done_once"] == kill["pairs"]
                and not kill["jobs_done_twice_or_more"]
                and kill["cache_rows"] == kill["cache_distinct_keys"] == kill["pairs"]
                and kill["cache_rows_per_pair_max"] == 1
                and not k["victim_children_left"]
                and all(v["done_on"] and kill["kill"]["victim"] not in v["done_on"] for v in k["rerun"].values())
            ),
        }
    data["phases"] = phases
    return data


def markdown(data: dict[str, Any]) -> str:
    """Return the short Markdown summary."""
    lines = [f"GPUs: {'; '.join(data['gpus']) or 'none (compile-only dry run)'}.", ""]
    lines.append(
        f"{data['pairs']} distinct pairs (elementwise kernels over {data['elements']} floats, strided original, "
        "coalesced candidate) through `VerificationQueue` and the `cluster` backend; a Dask scheduler and one "
        "`warpwise worker --gpus 1` per GPU (`CUDA_VISIBLE_DEVICES`), fresh caches for every phase."
    )
    w = data.get("machine_warm_up")
    if w:
        lines += [
            "",
            f"Before measuring, a throwaway phase of {w['pairs']} other pairs on both GPUs: {w['jobs_per_min']} "
            f"jobs/min, stage medians {w['stage_medians_s']}.",
        ]
    lines += [
        "",
        "| phase | GPUs | wall (s) | jobs/min | median build / check / time (s) | statuses | done per worker | "
        "cache rows |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in data["phases"]:
        st = p["stage_medians_s"]
        stages = f"{st.get('build')} / {st.get('check')} / {st.get('time')}"
        lines.append(
            f"| {p['label']} | {len(p['gpus'])} | {p['wall_s']} | {p['jobs_per_min']} | {stages} | {p['statuses']} | "
            f"{p['done_per_worker']} | {p['cache_rows']} |"
        )
    t = data.get("throughput")
    if t:
        lines += [
            "",
            f"Throughput, 2 GPUs over 1 GPU (median of repetitions): **{t['ratio_of_medians']}x** "
            f"(per repetition {t['ratio_per_rep']}; target >= {t['target']}).",
        ]
    for label, c in data.get("equality", {}).items():
        lines.append(
            f"- {label} against the first 1-GPU run: same status {c['same_status']}/{c['pairs']}, speedup ranges "
            f"overlap {c['speedup_ranges_overlap']}/{c['with_speedup']}, median speedup ratio "
            f"{c['median_speedup_ratio']}."
        )
    k = data.get("kill_test")
    if k:
        lines += [
            "",
            f"Kill test: `{k['victim']}` (pid {k['victim_pid']}) got SIGKILL after {k['killed_after_done']} jobs were "
            f"done, while executing pair(s) {k['in_flight_at_kill']}; re-runs {k['rerun']}. "
            f"{k['pairs']} pairs, lost {k['lost']}, statuses {k['statuses']}; executions started "
            f"{k['executions_started']}, completed {k['executions_done']}; jobs completed exactly once "
            f"{k['jobs_done_once']}, more than once {k['jobs_done_twice_or_more']}, never {k['jobs_never_done']}; "
            f"cache rows {k['cache_rows']} ({k['cache_distinct_keys']} distinct keys, at most "
            f"{k['cache_rows_per_pair_max']} per pair); the killed worker's job processes {k['victim_children']} "
            f"were gone {k['victim_children_gone_after_s']} s after the kill (left: {k['victim_children_left']}). "
            f"**{'passed' if k['passed'] else 'FAILED'}**.",
        ]
    if data["errors"]:
        lines += ["", f"Errors: {data['errors']}"]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
