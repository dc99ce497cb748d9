"""The SQLite result cache: keys, statuses that are not kept, stats, export and import, concurrent writers."""

from __future__ import annotations

import io
import sqlite3
import threading
from pathlib import Path

from warpwise.verify.cache import CacheKey, ResultCache, content_hash
from warpwise.verify.types import DeviceIdentity, Speedup, Status, Timing, VerificationResult

H200 = DeviceIdentity("NVIDIA H200", "13000", "NVRTC 13.0", "sm_90")


def key(i: int = 0) -> CacheKey:
    return CacheKey(content_hash(f"orig{i}"), content_hash(f"cand{i}"), content_hash("spec"), "", "", "").on(H200)


def result(status: Status = Status.VERIFIED) -> VerificationResult:
    t = Timing(1.0, 0.9, 1.1, 100)
    return VerificationResult(
        status, "msg", device=H200, original_timing=t, speedup=Speedup(2.0, 1.8, 2.2, 0.01), created=1.0
    )


def test_round_trip_and_key_parts(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    assert cache.get(key()) is None
    assert cache.put(key(), result())
    got = cache.get(key())
    assert got is not None and got.cached and got.status is Status.VERIFIED
    assert got.speedup == Speedup(2.0, 1.8, 2.2, 0.01)
    other_gpu = key().on(DeviceIdentity("NVIDIA A100", "1", "x", "sm_80"))
    assert cache.get(other_gpu) is None
    assert [r.status for r in cache.find(key().original_hash, key().candidate_hash, key().spec_hash)] == [
        Status.VERIFIED
    ]


def test_machine_dependent_results_are_not_kept(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    for st in (Status.CRASHED, Status.TIMED_OUT, Status.SPEC_MISSING):
        assert not cache.put(key(), result(st))
    assert cache.get(key()) is None


def test_wal_stats_export_import_clear(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    for i in range(3):
        cache.put(key(i), result(Status.VERIFIED if i else Status.INCORRECT))
    mode = sqlite3.connect(tmp_path / "r.sqlite3").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    st = cache.stats()
    assert st.results == 3 and st.by_status == {"verified": 2, "incorrect": 1} and st.gpus == {"NVIDIA H200": 3}
    buf = io.StringIO()
    assert cache.export(buf) == 3
    other = ResultCache(tmp_path / "other.sqlite3")
    stored, problems = other.import_(io.StringIO(buf.getvalue() + "not json\n"))
    assert stored == 3 and len(problems) == 1 and problems[0].startswith("line 4")
    imported = other.get(key(1))
    # Unsigned results of another cache are kept, but only as reported (tests/security/test_forged_results.py).
    assert imported is not None and imported.status is Status.REPORTED and imported.reported_status == "verified"
    assert cache.clear() == 3 and cache.stats().results == 0


def test_concurrent_writers(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")

    def write(base: int) -> None:
        for i in range(25):
            cache.put(key(base + i), result())

    threads = [threading.Thread(target=write, args=(b * 100,)) for b in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.stats().results == 100


def test_peaks_are_kept_per_gpu_and_driver(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    assert cache.get_peaks("NVIDIA H200", "13000") is None
    cache.put_peaks("NVIDIA H200", "13000", {"copy_gbps": 4300.0, "fp32_gflops": 60000.0})
    assert cache.get_peaks("NVIDIA H200", "13000") == {"copy_gbps": 4300.0, "fp32_gflops": 60000.0}
