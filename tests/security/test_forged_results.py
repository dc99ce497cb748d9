"""Forged verification: an exported cache edited to claim "verified 9.99x on NVIDIA H200" and imported again.

Imported results read back as `reported` ("reported by HOST, not verified here") unless the team key signed
them; `warpwise cache import` validates every field and skips bad lines with their numbers; `warpwise verify`
never prints verified for a result it did not measure, and the editor's titles, hovers and fix-all agree.
"""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES
from warpwise.server.features.code_actions import title_suffix
from warpwise.server.features.hover import verification_line
from warpwise.server.verification import _verdict_state
from warpwise.verify import provenance
from warpwise.verify.cache import CacheKey, ResultCache, content_hash
from warpwise.verify.gate import Gate, PreparedJob
from warpwise.verify.types import (
    DeviceIdentity,
    Options,
    Source,
    Speedup,
    Status,
    Timing,
    VerificationResult,
    WorkerJob,
)

H200 = DeviceIdentity("NVIDIA H200", "13000", "NVRTC 13.0", "sm_90")
KEY = b"team-key-for-tests-0123456789abcdef"


def measured(device: DeviceIdentity = H200, speedup: float = 2.0) -> VerificationResult:
    t = Timing(1.0, 0.99, 1.01, 100)
    c = Timing(1.0 / speedup, 0.99 / speedup, 1.01 / speedup, 100)
    return VerificationResult(
        Status.VERIFIED,
        f"correct on every seed and {speedup:.2f}x faster",
        device=device,
        original_timing=t,
        candidate_timing=c,
        speedup=Speedup(speedup, speedup * 0.98, speedup * 1.02, 0.01),
        created=1.0,
    )


def key_on(device: DeviceIdentity = H200, i: int = 0) -> CacheKey:
    return CacheKey(content_hash(f"o{i}"), content_hash(f"c{i}"), content_hash("spec"), "", "", "").on(device)


def record(result: VerificationResult, key: CacheKey) -> dict[str, Any]:
    rec: dict[str, Any] = {k: getattr(key, k) for k in CacheKey.__dataclass_fields__}
    rec["result"] = result.to_dict()
    return rec


def lines(*recs: Any) -> io.StringIO:
    return io.StringIO("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs))


def test_a_forged_verified_record_is_reported_never_verified(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    forged = measured(speedup=9.99)
    stored, problems = cache.import_(lines(record(forged, key_on())))
    assert stored == 1 and problems == []
    got = cache.get(key_on())
    assert got is not None and got.status is Status.REPORTED and got.reported_status == "verified"
    assert not got.verified
    assert got.message.startswith("reported by an imported file (verified 9.99x on NVIDIA H200), not verified here")
    assert "not signed" in got.message
    assert [
        r.status for r in cache.find(*(getattr(key_on(), k) for k in ("original_hash", "candidate_hash", "spec_hash")))
    ] == [Status.REPORTED]
    # The editor's words for it: never "verified", never preferred, never in fix-all (state `reported`).
    state = _verdict_state(got)
    assert state.state == "reported" and state.speedup is None and state.gpu is None
    assert title_suffix(state) == "reported by an imported file, not verified here"
    assert "not verified here" in verification_line(state) and not verification_line(state).startswith("verified")


def test_a_forged_provenance_naming_this_machine_does_not_make_an_import_local(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    forged = provenance.stamp(measured(speedup=9.99), key=b"")
    assert forged.provenance is not None and forged.provenance.machine_id == provenance.machine_id()
    cache.import_(lines(record(forged, key_on())))
    got = cache.get(key_on())
    assert got is not None and got.status is Status.REPORTED


def test_results_signed_by_the_team_key_keep_their_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    signed = provenance.stamp(measured(), key=KEY)
    assert signed.provenance is not None and signed.provenance.key_id == provenance.key_id(KEY)
    assert KEY.decode() not in json.dumps(signed.to_dict())
    monkeypatch.setenv(provenance.KEY_ENV, KEY.decode())
    cache = ResultCache(tmp_path / "r.sqlite3")
    tampered = copy.deepcopy(record(signed, key_on(i=1)))
    tampered["result"]["speedup"]["median"] = 9.99
    tampered["result"]["speedup"]["high"] = 10.0
    other_key = record(provenance.stamp(measured(), key=b"another team"), key_on(i=2))
    stored, problems = cache.import_(lines(record(signed, key_on()), tampered, other_key))
    assert stored == 3 and problems == []
    assert cache.get(key_on()).status is Status.VERIFIED  # type: ignore[union-attr]
    bad = cache.get(key_on(i=1))
    assert bad is not None and bad.status is Status.REPORTED and "signature does not match" in bad.message
    other = cache.get(key_on(i=2))
    assert other is not None and other.status is Status.REPORTED and "signed by another key" in other.message
    monkeypatch.delenv(provenance.KEY_ENV)
    unchecked = cache.get(key_on())
    assert unchecked is not None and unchecked.status is Status.REPORTED and "no team key" in unchecked.message


def test_the_team_key_can_come_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "team.key"
    path.write_bytes(KEY + b"\n")
    path.chmod(0o600)  # Only its owner may read a key file (tests/security/test_team_key.py).
    monkeypatch.delenv(provenance.KEY_ENV, raising=False)
    monkeypatch.setenv(provenance.KEY_FILE_ENV, str(path))
    assert provenance.team_key() == KEY
    monkeypatch.setenv(provenance.KEY_FILE_ENV, str(tmp_path / "missing.key"))
    assert provenance.team_key() is None


def test_a_local_result_is_never_replaced_by_an_import(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    mine = provenance.stamp(measured(speedup=1.5), key=b"")
    cache.put(key_on(), mine)
    stored, problems = cache.import_(lines(record(measured(speedup=9.99), key_on())))
    assert stored == 0 and problems == ["line 1: this machine has its own result for that key; kept it"]
    got = cache.get(key_on())
    assert got is not None and got.status is Status.VERIFIED and got.speedup is not None and got.speedup.median == 1.5


BAD_LINES: list[tuple[str, Any]] = []


def _bad(name: str, edit: Any) -> None:
    BAD_LINES.append((name, edit))


_bad("not json", "{not json")
_bad("not an object", [1, 2])
_bad("unknown status", lambda r: r["result"].__setitem__("status", "verified!"))
_bad("speedup is a string", lambda r: r["result"]["speedup"].__setitem__("median", "9.99"))
_bad("NaN speedup", lambda r: r["result"]["speedup"].__setitem__("median", float("nan")))
_bad("low above median", lambda r: r["result"]["speedup"].__setitem__("low", 50.0))
_bad("negative time", lambda r: r["result"]["original_timing"].__setitem__("q1_ms", -1.0))
_bad("reps is a bool", lambda r: r["result"]["original_timing"].__setitem__("reps", True))
_bad("bad hash", lambda r: r.__setitem__("original_hash", "orig0"))
_bad("key names another GPU", lambda r: r.__setitem__("gpu", "NVIDIA B200"))
_bad("verified without a GPU", lambda r: r["result"]["device"].__setitem__("compile_only", True))
_bad("reported is imported", lambda r: r["result"].__setitem__("reported_status", "verified"))
_bad("unknown field", lambda r: r["result"].__setitem__("trust_me", True))
_bad("missing result", lambda r: r.pop("result"))
_bad("bad signature format", lambda r: r["result"].__setitem__("signature", "zz"))
_bad("created in the future", lambda r: r["result"].__setitem__("created", 1e12))
_bad("message is a list", lambda r: r["result"].__setitem__("message", ["x"]))


def test_import_validates_every_field_and_names_bad_lines(tmp_path: Path) -> None:
    good = record(measured(), key_on())
    recs: list[Any] = []
    for _, edit in BAD_LINES:
        if isinstance(edit, str | list):
            recs.append(edit if isinstance(edit, str) else json.dumps(edit))
            continue
        r = copy.deepcopy(good)
        edit(r)
        recs.append(json.dumps(r))
    recs.append(good)
    cache = ResultCache(tmp_path / "r.sqlite3")
    stored, problems = cache.import_(lines(*recs))
    assert stored == 1
    numbers = [int(p.split(":")[0].removeprefix("line ")) for p in problems]
    assert numbers == list(range(1, len(BAD_LINES) + 1)), "\n".join(problems)
    assert any("status" in p and "not one of" in p for p in problems)
    assert any("original_hash: expected a SHA-256 hash" in p for p in problems)


class _Backend:
    """A backend that counts runs and measures a fixed result on a given identity."""

    name = "fake"

    def __init__(self, identity: DeviceIdentity | None) -> None:
        self._identity = identity
        self.runs = 0

    def identity(self) -> DeviceIdentity | None:
        return self._identity

    def capacity(self) -> int:
        return 1

    def run(self, job: WorkerJob, progress: Any = None) -> VerificationResult:
        self.runs += 1
        return provenance.stamp(measured(speedup=1.2), key=b"")

    def close(self) -> None:
        pass


def _prepared(key: CacheKey) -> PreparedJob:
    src = Source("__global__ void k() {}", "k")
    job = WorkerJob("j", "k", src, src, None, Options())
    return PreparedJob(job, CacheKey(key.original_hash, key.candidate_hash, key.spec_hash, "", "", ""), None, "")


@pytest.mark.parametrize("identity", [H200, None], ids=["known-device", "any-device"])
def test_a_gate_that_can_measure_measures_again_instead_of_trusting_a_report(
    tmp_path: Path, identity: DeviceIdentity | None
) -> None:
    cache = ResultCache(tmp_path / "r.sqlite3")
    cache.import_(lines(record(measured(speedup=9.99), key_on())))
    backend = _Backend(identity)
    gate = Gate(backend, cache)  # type: ignore[arg-type]
    prepared = _prepared(key_on())
    assert gate.lookup(prepared) is None
    result = gate.run(prepared)
    assert backend.runs == 1 and result.verified and result.speedup is not None and result.speedup.median == 1.2
    again = gate.lookup(prepared)
    assert again is not None and again.verified and again.cached


def _cli(*args: str, cache: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WARPWISE_CACHE_DIR": str(cache), "PATH": "/usr/local/cuda/bin:/usr/bin:/bin"}
    env.pop(provenance.KEY_ENV, None)
    env.pop(provenance.KEY_FILE_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "warpwise", *args], capture_output=True, text=True, env=env, input=stdin
    )


def test_cli_verify_does_not_say_verified_for_an_edited_export(tmp_path: Path) -> None:
    cand = tmp_path / "saxpy_candidate.cu"
    cand.write_text(
        "__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = fmaf(a, x[i], y[i]);\n}\n"
    )
    verify = ("verify", str(EXAMPLES / "vector_ops.cu"), "--kernel", "saxpy", "--candidate", str(cand))
    first = _cli(*verify, "--backend", "compile-only", cache=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    exported = _cli("cache", "export", cache=tmp_path).stdout.splitlines()
    assert len(exported) == 1
    rec = json.loads(exported[0])
    prov = rec["result"]["provenance"]
    assert prov["machine_id"] == provenance.machine_id() and prov["warpwise_version"]
    # The adversary's edit: verified 9.99x, with timings, on a device that claims not to be compile-only.
    res = rec["result"]
    res["status"] = "verified"
    res["message"] = "correct on every seed and 9.99x faster"
    res["device"]["compile_only"] = False
    res["original_timing"] = {"median_ms": 1.0, "q1_ms": 0.99, "q3_ms": 1.01, "reps": 100}
    res["candidate_timing"] = {"median_ms": 0.1, "q1_ms": 0.099, "q3_ms": 0.101, "reps": 100}
    res["speedup"] = {"median": 9.99, "low": 9.8, "high": 10.2, "noise": 0.01}
    bad = copy.deepcopy(rec)
    bad["result"]["speedup"]["median"] = "fast"
    assert _cli("cache", "clear", cache=tmp_path).returncode == 0
    imported = _cli("cache", "import", cache=tmp_path, stdin=json.dumps(bad) + "\n" + json.dumps(rec) + "\n")
    assert imported.returncode == 0 and "imported 1 results" in imported.stdout
    assert "skipped line 1: result.speedup.median: expected a finite number" in imported.stderr
    again = _cli(*verify, "--backend", "compile-only", cache=tmp_path)
    assert again.returncode != 0
    assert "status: reported (cached): reported by" in again.stdout and "not verified here" in again.stdout
    assert "status: verified" not in again.stdout
