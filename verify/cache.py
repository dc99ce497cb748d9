"""The result cache: every verification result, keyed by what decides it, in one SQLite file.

A result is valid for the same original and candidate text (content hashes), the same problem spec (its
content hash), the same GPU, driver and compiler; the key hashes all six, and each is also stored as a column so
that results can be listed, shared and found for "any GPU". The file lives in the user's cache folder
(`$WARPWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/warpwise`, else `~/.cache/warpwise`), uses WAL so that the
server and the command line can read while a worker writes, and writes each result in one transaction.
Peak device figures (copy bandwidth, FMA rate), measured once per GPU, live in a second table.

`export` / `import_` move results between machines as JSON lines, so a team can share what it measured. Each row
remembers its origin: `local` (stored by this machine's gate) or `imported`. A row is read back through
`provenance.assess`: only results measured here or signed by the team key keep their status; anything else reads
as `reported` ("reported by HOST, not verified here"). Imported lines are validated field by field first
(`warpwise.verify.records`); bad lines are skipped with their line numbers. Rows of caches written before
origins existed are read as `legacy`, which is not trusted either.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from warpwise.verify import provenance, records
from warpwise.verify.types import DeviceIdentity, Status, VerificationResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    original_hash TEXT NOT NULL,
    candidate_hash TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    gpu TEXT NOT NULL,
    driver TEXT NOT NULL,
    toolkit TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    result TEXT NOT NULL,
    origin TEXT NOT NULL DEFAULT 'local'
);
CREATE INDEX IF NOT EXISTS results_pair ON results (original_hash, candidate_hash, spec_hash);
CREATE TABLE IF NOT EXISTS peaks (
    gpu TEXT NOT NULL,
    driver TEXT NOT NULL,
    measured REAL NOT NULL,
    peaks TEXT NOT NULL,
    PRIMARY KEY (gpu, driver)
);
"""

# Results that depend on the machine's state rather than on the code are not kept: a crash or a time-out may
# not happen again, and a missing spec is fixed by writing one.
UNCACHED = frozenset({Status.CRASHED, Status.TIMED_OUT, Status.SPEC_MISSING})


_KEY_COLUMNS = ("original_hash", "candidate_hash", "spec_hash", "gpu", "driver", "toolkit")


def cache_dir() -> Path:
    """Return the user's warpwise cache folder."""
    if os.environ.get("WARPWISE_CACHE_DIR"):
        return Path(os.environ["WARPWISE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "warpwise"


def content_hash(text: str | bytes) -> str:
    """Return the content hash of a source text."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class CacheKey:
    """The parts of a result's identity, and the key that hashes them."""

    original_hash: str
    candidate_hash: str
    spec_hash: str
    gpu: str
    driver: str
    toolkit: str

    @property
    def key(self) -> str:
        """Return the primary key."""
        parts = (self.original_hash, self.candidate_hash, self.spec_hash, self.gpu, self.driver, self.toolkit)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def on(self, device: DeviceIdentity) -> CacheKey:
        """Return this key for results measured on `device`."""
        return CacheKey(
            self.original_hash, self.candidate_hash, self.spec_hash, device.gpu, device.driver, device.toolkit
        )


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What the cache holds."""

    path: str
    results: int
    by_status: dict[str, int]
    gpus: dict[str, int]
    bytes: int


class ResultCache:
    """Verification results in SQLite (thread-safe; one connection per thread)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "results.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        db = self._db()
        db.executescript(SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(results)")}
        if "origin" not in columns:
            db.execute("ALTER TABLE results ADD COLUMN origin TEXT NOT NULL DEFAULT 'legacy'")

    def _db(self) -> sqlite3.Connection:
        """Return this thread's connection."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """Run statements in one immediate transaction."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def get(self, key: CacheKey) -> VerificationResult | None:
        """Return the cached result for an exact key."""
        row = self._db().execute("SELECT result, origin FROM results WHERE key = ?", (key.key,)).fetchone()
        return _load(row[0], row[1]) if row else None

    def find(self, original_hash: str, candidate_hash: str, spec_hash: str) -> list[VerificationResult]:
        """Return every cached result for a pair and spec, on any device, newest first."""
        rows = self._db().execute(
            "SELECT result, origin FROM results WHERE original_hash = ? AND candidate_hash = ? AND spec_hash = ? "
            "ORDER BY created DESC",
            (original_hash, candidate_hash, spec_hash),
        )
        found = [r for r in (_load(row[0], row[1]) for row in rows) if r is not None]
        # Results that speak for themselves come before reported ones.
        return sorted(found, key=lambda r: r.status is Status.REPORTED)

    def put(self, key: CacheKey, result: VerificationResult, origin: str = "local") -> bool:
        """Store a result (atomically); return False for results that are not cached."""
        if result.status in UNCACHED or result.status is Status.REPORTED:
            return False
        doc = result.with_(cached=False).to_json()
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key.key,
                    key.original_hash,
                    key.candidate_hash,
                    key.spec_hash,
                    key.gpu,
                    key.driver,
                    key.toolkit,
                    result.status.value,
                    result.created or time.time(),
                    doc,
                    origin,
                ),
            )
        return True

    def stats(self) -> CacheStats:
        """Return counts by status and GPU."""
        db = self._db()
        total = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        by_status = dict(db.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall())
        gpus = dict(db.execute("SELECT gpu, COUNT(*) FROM results GROUP BY gpu").fetchall())
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(str(self.path), int(total), by_status, gpus, size)

    def clear(self) -> int:
        """Delete every result; return how many there were."""
        with self._tx() as db:
            n = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            db.execute("DELETE FROM results")
        return int(n)

    def export(self, out: IO[str]) -> int:
        """Write every result as one JSON line with its key parts; return the count."""
        n = 0
        for row in self._db().execute(
            "SELECT original_hash, candidate_hash, spec_hash, gpu, driver, toolkit, result FROM results"
        ):
            rec = dict(zip(_KEY_COLUMNS, row[:6], strict=True))
            rec["result"] = json.loads(row[6])
            out.write(json.dumps(rec, sort_keys=True) + "\n")
            n += 1
        return n

    def import_(self, lines: IO[str], max_line: int = 4 << 20) -> tuple[int, list[str]]:
        """Read results written by `export`; return how many were stored and the problems with the others.

        Every line is validated field by field; a bad line is skipped and named by its number. Imported results
        are stored with origin `imported`: they read back as `reported` unless signed by the team key. A local
        result is never replaced by an imported one.
        """
        stored = 0
        problems: list[str] = []
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            if len(line) > max_line:
                problems.append(f"line {i}: longer than {max_line} characters")
                continue
            try:
                rec: Any = json.loads(line)
            except (ValueError, RecursionError) as exc:
                problems.append(f"line {i}: not JSON: {str(exc)[:120]}")
                continue
            result, errors = records.check_record(rec)
            if result is None:
                shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
                problems.append(f"line {i}: {shown}")
                continue
            key = CacheKey(*(str(rec[k]) for k in CacheKey.__dataclass_fields__))
            row = self._db().execute("SELECT origin FROM results WHERE key = ?", (key.key,)).fetchone()
            if row is not None and row[0] == "local":
                problems.append(f"line {i}: this machine has its own result for that key; kept it")
                continue
            if self.put(key, result, origin="imported"):
                stored += 1
        return stored, problems

    def get_peaks(self, gpu: str, driver: str) -> dict[str, float] | None:
        """Return the measured peaks of a device, if measured."""
        row = self._db().execute("SELECT peaks FROM peaks WHERE gpu = ? AND driver = ?", (gpu, driver)).fetchone()
        return dict(json.loads(row[0])) if row else None

    def put_peaks(self, gpu: str, driver: str, peaks: dict[str, float]) -> None:
        """Store the measured peaks of a device."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO peaks VALUES (?, ?, ?, ?)", (gpu, driver, time.time(), json.dumps(peaks))
            )


def _load(doc: str, origin: str) -> VerificationResult | None:
    """Rebuild a result from its stored JSON (None when it no longer reads), as far as it can be trusted here."""
    try:
        result = VerificationResult.from_dict(json.loads(doc))
    except (ValueError, TypeError, KeyError):
        return None
    return provenance.assess(result, origin).with_(cached=True)
