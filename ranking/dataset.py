"""The training set: every measured outcome of a card's rewrite warpwise has, with the features of its code.

Sources, read in this order (an outcome already read from an earlier source is not read again):

1. **Result files** of the gate: JSON documents under `bench/results/` and `lineages/` whose `results`
   (or `steps`, `roundtrips`, `records`) rows name a `file`, `kernel`, `card` and `status`, such as
   `bench/card_evidence.py`'s output. Every status is kept: `verified`, `not_faster`, `incorrect`, build and launch
   failures; `spec_missing` and `not_run` rows are kept too but carry no label (nothing was measured).
2. **Evidence records on the cards** (`evidence:` in `skills/*/card.md`), which lineage mining and admission
   roundtrips append; a record names its source file in `context.file`.
3. **The verification cache** (`warpwise.verify.cache.ResultCache`), whose results are keyed by content hashes
   only: a cached result is tied to a (file, kernel, card) by hashing the files under the roots and the candidate
   each card's rewrite makes of them, exactly as `bench/card_evidence.py` and the server build candidates.

For each outcome the source file named in the record is analysed again and the card re-matched in the kernel,
so the features are those of the code as it is now. A lineage record (`source: lineage PATH K<i> PASS`) is about
the simpler kernel of its step, not the expert file it names: the forward step's `from` kernel, or for a rejected
deoptimization the kernel the pass made of `K<i>` (the pass is run again; it is deterministic). A record whose file
is gone is kept out of the set and listed in `TrainingSet.problems`. A record whose card does not bind in that code
is kept out and listed in `TrainingSet.unbound`: the model only ranks regions a card binds to. For lineage steps
this measures a gap of the cards' matchers (they do not recognise most deoptimized forms; the evaluation counts
them); for other records, a precondition added since excludes the region, so the card no longer proposes it.

Compiler reports (registers, spills) and launch geometry that the source does not show are taken from recorded
results where they exist: the corpus check's builds and problem-file launches (`bench/results/corpus_check-*.json`)
and the builds in cached results.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from warpwise.ranking.features import GpuProfile, PairFeatures, pair_features

# Outcomes that say something about the card on that code (the label); the others are about the setup.
LABELLED = frozenset({"verified", "not_faster", "incorrect", "compile_failed", "launch_failed"})
MEASURED = frozenset({"verified", "not_faster"})
ROW_LISTS = ("results", "steps", "roundtrips", "records")
CACHE_SOURCE = "verification cache"
RESULT_GLOBS = ("bench/results/*.json", "lineages/**/*.json")
# A record's file on a public repository (issue 21): `public:<owner>/<name>@<commit>:<path>`.
PUBLIC_PREFIX = "public:"
PUBLIC_FEATURES = Path("lineages") / "public" / "features.json"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the gate measured for one candidate."""

    status: str
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    noise: float | None = None
    original_ms: float | None = None
    candidate_ms: float | None = None
    durations: dict[str, float] | None = None

    @property
    def labelled(self) -> bool:
        """Return whether the outcome is a verdict on the rewrite (not a missing spec or a skipped run)."""
        return self.status in LABELLED

    @property
    def measured(self) -> bool:
        """Return whether the outcome has a speedup with its spread."""
        return self.status in MEASURED and self.speedup is not None and self.speedup > 0


@dataclass(frozen=True, slots=True)
class Example:
    """One training example: a card on a kernel, its features, the GPU and the outcome."""

    source: str
    file: str
    kernel: str
    card: str
    operator: str
    gpu: str
    outcome: Outcome
    features: PairFeatures

    def to_dict(self) -> dict[str, Any]:
        """Return JSON data."""
        return {
            "source": self.source,
            "file": self.file,
            "kernel": self.kernel,
            "card": self.card,
            "operator": self.operator,
            "gpu": self.gpu,
            "outcome": {k: v for k, v in asdict(self.outcome).items() if v is not None},
            "features": self.features.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Example:
        """Return an example from JSON data."""
        return cls(
            source=d["source"],
            file=d["file"],
            kernel=d["kernel"],
            card=d["card"],
            operator=d["operator"],
            gpu=d["gpu"],
            outcome=Outcome(**d["outcome"]),
            features=PairFeatures.from_dict(d["features"]),
        )


@dataclass
class TrainingSet:
    """The examples, the GPUs they were measured on, and the records that could not become examples."""

    examples: list[Example] = field(default_factory=list)
    gpus: dict[str, GpuProfile] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    unbound: list[str] = field(default_factory=list)

    @property
    def labelled(self) -> list[Example]:
        """Return the examples whose outcome is a verdict on the rewrite."""
        return [e for e in self.examples if e.outcome.labelled]

    def counts(self) -> dict[str, int]:
        """Return the number of examples per status."""
        out: dict[str, int] = {}
        for e in self.examples:
            out[e.outcome.status] = out.get(e.outcome.status, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        """Return JSON data."""
        return {
            "examples": [e.to_dict() for e in self.examples],
            "gpus": {k: g.to_dict() for k, g in sorted(self.gpus.items())},
            "problems": self.problems,
            "sources": self.sources,
            "unbound": self.unbound,
        }


def operator_of(file: str, kernel: str) -> str:
    """Return the operator a kernel implements: its folder in a suite or corpus, else the kernel's own name."""
    parts = Path(file).parts
    for anchor in ("suite", "corpus"):
        if anchor in parts and parts.index(anchor) + 1 < len(parts) - 1:
            return parts[parts.index(anchor) + 1]
    return kernel


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _outcome(row: Mapping[str, Any]) -> Outcome:
    sp = row.get("speedup")
    if isinstance(sp, Mapping):
        speedup, low, high, noise = (_num(sp.get(k)) for k in ("median", "low", "high", "noise"))
    else:
        speedup, low, high, noise = _num(sp), _num(row.get("speedup_low")), _num(row.get("speedup_high")), None
    dur = row.get("durations")
    durations = {k: float(v) for k, v in dur.items() if _num(v) is not None} if isinstance(dur, Mapping) else None
    return Outcome(
        status=str(row.get("status", "")),
        speedup=speedup,
        low=low,
        high=high,
        noise=noise,
        original_ms=_num(row.get("original_ms")),
        candidate_ms=_num(row.get("candidate_ms")),
        durations=durations or None,
    )


@dataclass(frozen=True, slots=True)
class _Record:
    source: str
    file: str
    kernel: str
    card: str
    gpu: str
    outcome: Outcome
    # The code the card's rewrite applied to, when it is not the named file as committed (a lineage step).
    text: str | None = None
    # A public lineage's record (`public:` file): the features computed from the mirror when it was mined, and the
    # operator (its family); the public code is not in the repository to be analysed again.
    features: Mapping[str, Any] | None = None
    operator: str | None = None


_LINEAGE_REF = re.compile(r"^lineage (\S+) K(\d+) (\S+)$")


def lineage_text(root: Path, source: str, lineages: dict[str, Any] | None = None) -> str | None:
    """Return the simpler kernel a lineage evidence record measured the card's optimization on (None if unknown).

    For a forward step K<i-1> -> K<i> it is K<i-1>; for a rejected deoptimization of K<i> it is what the pass made of
    K<i> (passes are deterministic, so running it again gives the kernel that was measured).
    """
    m = _LINEAGE_REF.match(source)
    if m is None:
        return None
    rel, at, key = m.group(1), int(m.group(2)), m.group(3)
    cache = lineages if lineages is not None else {}
    if rel not in cache:
        cache[rel] = _load_json(root / rel)
    lin = cache[rel]
    if not isinstance(lin, dict):
        return None
    kernels = {int(k["index"]): k for k in lin.get("kernels", []) if isinstance(k, dict) and "index" in k}
    for step in lin.get("steps", []):
        if step.get("key") == key and int(step.get("to", -1)) == at:
            before = kernels.get(int(step.get("from", -1)))
            return str(before["source"]) if before else None
    for att in lin.get("rejected", []):
        if att.get("key") != key or int(att.get("at_kernel", -1)) != at or at not in kernels:
            continue
        from warpwise.lineages.deopt import candidates
        from warpwise.lineages.deopt.base import KernelSource

        current = str(kernels[at]["source"])
        src = KernelSource.parse(current, str(lin.get("kernel")), str(lin.get("expert")))
        for d in candidates(src):
            if d.key == key:
                return d.apply(current)
    return None


# -- GPUs and recorded reports -------------------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _corpus_entry_file(entry: str) -> str | None:
    kind, _, op = entry.partition("/")
    if kind == "naive":
        return f"bench/suite/{op}/naive.cu"
    if kind == "expert":
        return f"lineages/corpus/{op}/expert.cu"
    return None


def recorded_gpus(root: Path) -> dict[str, GpuProfile]:
    """Return the measured GPUs in the committed corpus checks (copy bandwidth, cuBLAS FP32 rate)."""
    out: dict[str, GpuProfile] = {}
    for path in sorted(root.glob("bench/results/corpus_check-*.json")):
        doc = _load_json(path)
        if not isinstance(doc, dict) or not isinstance(doc.get("device"), dict) or not doc.get("peaks"):
            continue
        dev, peaks = doc["device"], doc["peaks"]
        copy, flops = _num(peaks.get("copy_gbps")), _num(peaks.get("cublas_sgemm_tflops"))
        if copy is None or flops is None:
            continue
        name = str(dev.get("gpu") or "unknown GPU")
        out[name] = GpuProfile(
            name=name,
            arch=str(dev.get("arch", "")),
            copy_gbps=round(copy, 1),
            fp32_tflops=round(flops, 2),
            sm_count=int(dev.get("sm_count") or 0),
            l2_bytes=int(dev.get("l2_bytes") or 0),
            source=path.relative_to(root).as_posix(),
        )
    return out


def recorded_reports(root: Path) -> dict[tuple[str, str], dict[str, float]]:
    """Return, per (file, kernel), the compiler report and launch geometry recorded by the corpus checks."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for path in sorted(root.glob("bench/results/corpus_check-*.json")):
        doc = _load_json(path)
        if not isinstance(doc, dict):
            continue
        for r in doc.get("results") or []:
            file = _corpus_entry_file(str(r.get("entry", "")))
            if file is None or not r.get("kernel"):
                continue
            rep: dict[str, float] = {}
            build = r.get("build") or {}
            if _num(build.get("registers")) is not None:
                rep["k_registers"] = float(build["registers"])
                rep["k_spills"] = float((build.get("spill_loads") or 0) + (build.get("spill_stores") or 0))
            geom = (r.get("timing") or {}).get("geometry")
            if isinstance(geom, list) and len(geom) >= 2:
                block = math.prod(int(v) for v in geom[1])
                grid = math.prod(int(v) for v in geom[0])
                rep["k_block_log2"] = math.log2(block)
                rep["k_threads_log2"] = math.log2(block * grid)
            out[(file, str(r["kernel"]))] = rep
    return out


# -- sources ---------------------------------------------------------------------------------------------------------


def _gpu_name(row: Mapping[str, Any]) -> str:
    dev = row.get("device")
    if isinstance(dev, Mapping):
        return str(dev.get("gpu") or dev.get("name") or "")
    return str(row.get("gpu") or "")


def launch_not_adapted(source: str, file: str, card: str, launch: str | None) -> bool:
    """Return whether a record measured a launch-shrinking rewrite with the problem file's grid left unshrunk.

    The card-evidence run of 2026-11-29 launched every candidate with its problem file's geometry (its rows say
    nothing of the launch), so coarsening and 16-byte vector rewrites of problem-file kernels ran with 4 or 8 times
    the threads they need: a measurement of that launch, not of the rewrite as it is meant to run. Such records are
    kept on the cards, marked, but are not evidence for the ranking. Later runs record the launch they used.
    """
    from warpwise.skills.launches import grid_factor_cards

    unrecorded = launch is None or launch.startswith(UNADAPTED)
    return unrecorded and card in grid_factor_cards() and "card_evidence" in source and file.startswith("bench/suite/")


# How the records of that run are marked on the cards.
UNADAPTED = "the problem file's grid was not shrunk for this rewrite"


def result_file_records(root: Path, globs: Iterable[str] = RESULT_GLOBS) -> list[_Record]:
    """Return the outcome rows of every gate result file under the roots (sorted by path)."""
    out: list[_Record] = []
    paths = sorted({p for g in globs for p in root.glob(g) if p.is_file()})
    for path in paths:
        doc = _load_json(path)
        if not isinstance(doc, dict):
            continue
        rel = path.relative_to(root).as_posix()
        for name in ROW_LISTS:
            rows = doc.get(name)
            if not isinstance(rows, list):
                continue
            for row in rows:
                if not isinstance(row, dict) or not all(row.get(k) for k in ("file", "kernel", "card", "status")):
                    continue
                if launch_not_adapted(rel, str(row["file"]), str(row["card"]), row.get("launch")):
                    continue
                out.append(
                    _Record(rel, str(row["file"]), str(row["kernel"]), str(row["card"]), _gpu_name(row), _outcome(row))
                )
    return out


# Transformation benchmarks whose every candidate is ONE card's rewrite of the named naive kernel, run through the
# gate against that kernel (`bench/row_coop/`: "each card is applied alone to the naive kernel"): their gate results
# are evidence like any other. Files of chained candidates (one card after another) are not listed.
TRANSFORMATION_RESULTS = ("bench/results/row_coop-*.json",)
_MECHANISM = re.compile(r"^transformation ([a-z0-9-]+)(?: \([^)]*\))?(?:, params (.*))?$")


def transformation_records(root: Path, library: Any, globs: Iterable[str] = TRANSFORMATION_RESULTS) -> list[_Record]:
    """Return the gate results of single-card transformation benchmarks, for the card's own parameters only.

    A candidate (`candidates` of the file: `original`, `kernel`, `mechanism` "transformation <card>, params k=v
    ...", `gate`) is kept when the gate ran it and its parameters are the card's anchor arguments: the rewrite the
    editor's quick fix makes, which is what the ranking ranks (the search's other parameter choices are not).
    """
    out: list[_Record] = []
    for path in sorted({p for g in globs for p in root.glob(g) if p.is_file()}):
        doc = _load_json(path)
        if not isinstance(doc, dict) or not isinstance(doc.get("candidates"), dict):
            continue
        rel = path.relative_to(root).as_posix()
        runs = doc.get("runs")
        gpus = {
            str(r.get("dir")): _gpu_name(r) for r in (runs if isinstance(runs, list) else []) if isinstance(r, dict)
        }
        for cand in doc["candidates"].values():
            if not isinstance(cand, dict) or not isinstance(cand.get("gate"), dict):
                continue
            gate: dict[str, Any] = cand["gate"]
            m = _MECHANISM.match(str(cand.get("mechanism", "")))
            if m is None or not cand.get("original") or not cand.get("kernel") or not gate.get("status"):
                continue
            card = library.get(m.group(1))
            if card is None:
                continue
            params = dict(kv.split("=", 1) for kv in (m.group(2) or "").split() if "=" in kv)
            defaults = {k: str(v).lower() for k, v in dict(card.header.anchor.args).items()}
            if any(defaults.get(k) != v.lower() for k, v in params.items()):
                continue  # another parameter choice than the quick fix's
            gpu = gpus.get(str(gate.get("run") or cand.get("run")), "")
            out.append(_Record(rel, str(cand["original"]), str(cand["kernel"]), card.skill_id, gpu, _outcome(gate)))
    return out


def public_features(root: Path) -> dict[str, Any]:
    """Return the features of version k per public lineage record (`source|card`), as mined from the mirrors.

    `lineages/public/features.json` (written by `bench/public_steps.py --write`): public code is not in the
    repository, so the features its records need are stored beside the index instead of re-derived.
    """
    doc = _load_json(root / PUBLIC_FEATURES)
    return doc.get("features", {}) if isinstance(doc, dict) else {}


def card_records(library: Any, root: Path = Path(".")) -> list[_Record]:
    """Return the evidence records on the cards that name their source file."""
    out: list[_Record] = []
    lineages: dict[str, Any] = {}
    pf = public_features(root)
    for card in sorted(library, key=lambda c: c.skill_id):
        for rec in card.header.evidence:
            ctx = dict(rec.context or {})
            file = ctx.get("file")
            if not file or launch_not_adapted(rec.source, str(file), card.skill_id, ctx.get("launch")):
                continue
            status = str(ctx.get("status") or "")
            if not status:
                # A record without a status is a measurement; "verified" needs the spread to clear 1.
                low = _num(ctx.get("speedup_low"))
                status = "verified" if low is not None and low > 1.0 else "not_faster"
            row = {
                "status": status,
                "speedup": rec.speedup,
                "speedup_low": ctx.get("speedup_low"),
                "speedup_high": ctx.get("speedup_high"),
                "original_ms": rec.baseline_ms,
                "candidate_ms": rec.candidate_ms,
            }
            oc = _outcome(row)
            if ctx.get("noise") is not None:
                oc = replace(oc, noise=_num(ctx.get("noise")))
            text = lineage_text(root, rec.source, lineages) if rec.source.startswith("lineage ") else None
            feats = pf.get(f"{rec.source}|{card.skill_id}") if str(file).startswith(PUBLIC_PREFIX) else None
            out.append(
                _Record(
                    rec.source,
                    str(file),
                    rec.kernel,
                    card.skill_id,
                    rec.gpu,
                    oc,
                    text,
                    feats if isinstance(feats, Mapping) else None,
                    rec.operator if str(file).startswith(PUBLIC_PREFIX) else None,
                )
            )
    return out


def card_candidates(text: bytes, path: str, library: Any = None) -> dict[tuple[str, str], bytes]:
    """Return, per (kernel, card), the file with all of that card's fixes in that kernel applied."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import card_rewrites

    return {key: new for key, (_, new) in card_rewrites(analyze_text(text, path), library).items()}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cache_records(
    root: Path, cache: Any, files: Iterable[Path] | None = None, library: Any = None
) -> tuple[list[_Record], dict[tuple[str, str], dict[str, float]], int]:
    """Return the cached results that a file under the root and a card's rewrite of it explain.

    Also returns the compiler reports of the originals found in those results, and how many cached results
    matched no file and card.
    """
    from warpwise.verify.types import VerificationResult

    rows = list(cache._db().execute("SELECT original_hash, candidate_hash, result FROM results ORDER BY created"))
    if not rows:
        return [], {}, 0
    wanted = {r[0] for r in rows}
    paths = sorted(files) if files is not None else sorted(_cuda_files(root))
    by_hash: dict[str, list[Path]] = {}
    for p in paths:
        try:
            h = _sha(p.read_bytes())
        except OSError:
            continue
        if h in wanted:
            by_hash.setdefault(h, []).append(p)
    cands: dict[str, tuple[str, str, str]] = {}
    for h, ps in by_hash.items():
        p = ps[0]
        rel = p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)
        for (kernel, card), text in card_candidates(p.read_bytes(), rel, library).items():
            cands[h + _sha(text)] = (rel, kernel, card)
    out: list[_Record] = []
    reports: dict[tuple[str, str], dict[str, float]] = {}
    unmatched = 0
    for orig, cand, doc in rows:
        hit = cands.get(orig + cand)
        if hit is None:
            unmatched += 1
            continue
        try:
            result = VerificationResult.from_dict(json.loads(doc))
        except (ValueError, TypeError, KeyError):
            unmatched += 1
            continue
        d = result.to_dict()
        row: dict[str, Any] = {"status": result.status.value, "speedup": d.get("speedup"), "device": d.get("device")}
        if result.original_timing is not None and result.candidate_timing is not None:
            row["original_ms"] = result.original_timing.median_ms
            row["candidate_ms"] = result.candidate_timing.median_ms
        row["durations"] = d.get("durations")
        file, kernel, card = hit
        out.append(_Record(CACHE_SOURCE, file, kernel, card, _gpu_name(row), _outcome(row)))
        b = result.original_build
        if b is not None and b.registers is not None:
            spills = (b.spill_loads or 0) + (b.spill_stores or 0)
            reports[(file, kernel)] = {"k_registers": float(b.registers), "k_spills": float(spills)}
    return out, reports, unmatched


def cache_gpus(cache: Any) -> dict[str, GpuProfile]:
    """Return the GPUs whose peaks the cache measured (copy bandwidth, FP32 FMA rate)."""
    out: dict[str, GpuProfile] = {}
    for gpu, peaks in cache._db().execute("SELECT gpu, peaks FROM peaks ORDER BY measured"):
        p = json.loads(peaks)
        copy, flops = _num(p.get("copy_gbps")), _num(p.get("fp32_gflops"))
        if copy is None or flops is None:
            continue
        out[gpu] = GpuProfile(gpu, "", round(copy, 1), round(flops / 1000, 2), 0, 0, "verification cache")
    return out


_SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "build", "dist", "__pycache__", ".e2e"})
MAX_FILES = 20000


def _cuda_files(root: Path) -> list[Path]:
    """Return the CUDA files under a root (hidden and build folders skipped; at most MAX_FILES)."""
    out: list[Path] = []
    stack = [root]
    while stack and len(out) < MAX_FILES:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for p in entries:
            if p.is_dir():
                if p.name not in _SKIP_DIRS and not p.name.startswith("."):
                    stack.append(p)
            elif p.suffix in (".cu", ".cuh"):
                out.append(p)
    return out


# -- building --------------------------------------------------------------------------------------------------------


def build(
    root: Path,
    *,
    library: Any = None,
    cache: Any = None,
    result_globs: Iterable[str] = RESULT_GLOBS,
    include_cards: bool = True,
    include_public: bool = False,
) -> TrainingSet:
    """Return the training set from every evidence record under `root` (and the cache, when one is given).

    The public lineages' records (`public:` files, issue 21) come in only with `include_public`, which
    `warpwise ranking train` passes (the shipped default model is trained on them; bench/public_ranking.py
    evaluates models trained without each public repository in turn).
    """
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import match_file
    from warpwise.skills.library import builtin_library

    lib = library if library is not None else builtin_library()
    ts = TrainingSet()
    ts.gpus.update(recorded_gpus(root))
    reports = recorded_reports(root)
    records = result_file_records(root, result_globs)
    ts.sources["result files"] = len(records)
    transformations = transformation_records(root, lib)
    ts.sources["transformation benchmarks"] = len(transformations)
    records += transformations
    from_cards = card_records(lib, root) if include_cards else []
    if not include_public:
        from_cards = [r for r in from_cards if not r.file.startswith(PUBLIC_PREFIX)]
    ts.sources["card evidence records"] = len(from_cards)
    records += from_cards
    if cache is not None:
        cached, cache_reports, unmatched = cache_records(root, cache, library=lib)
        ts.sources["verification cache"] = len(cached)
        if unmatched:
            ts.problems.append(f"{unmatched} cached results match no file and card under {root}")
        records += cached
        for k, v in cache_reports.items():
            reports.setdefault(k, v)
        for name, g in cache_gpus(cache).items():
            ts.gpus.setdefault(name, g)

    seen: set[tuple[str, ...]] = set()
    committed: set[tuple[str, ...]] = set()
    # The same measurement reported by two committed files (a cached result repeated by a later run) is one example.
    measured: set[tuple[Any, ...]] = set()
    models: dict[str, Any] = {}
    matches: dict[str, list[Any]] = {}
    for rec in records:
        # The same measurement reaches us from its result file and from the card it was added to (same source),
        # and perhaps from the cache: the first one read is kept. Another committed source measuring the same pair
        # (a lineage step, an admission roundtrip) is a new measurement and is kept.
        pair = (rec.file, rec.kernel, rec.card, rec.gpu)
        key = (*pair, rec.source)
        if key in seen or (rec.source == CACHE_SOURCE and pair in committed):
            continue
        seen.add(key)
        oc = rec.outcome
        if oc.measured and oc.original_ms and oc.candidate_ms:
            same = (*pair, oc.status, round(oc.original_ms, 4), round(oc.candidate_ms, 4))
            if same in measured:
                continue
            measured.add(same)
        if rec.source != CACHE_SOURCE:
            committed.add(pair)
        if rec.file.startswith(PUBLIC_PREFIX):
            # Public code is read from mirrors when mined, never stored: the record carries the features of the
            # card's matches in version k, or none when the card did not bind there.
            if rec.features is None:
                ts.unbound.append(f"{rec.source}: `{rec.card}` does not bind in `{rec.kernel}` of {rec.file}; left out")
                continue
            ts.examples.append(
                Example(
                    rec.source,
                    rec.file,
                    rec.kernel,
                    rec.card,
                    rec.operator or rec.kernel,
                    rec.gpu,
                    rec.outcome,
                    PairFeatures.from_dict(rec.features),
                )
            )
            continue
        path = root / rec.file
        mkey = rec.file if rec.text is None else f"{rec.file}#{_sha(rec.text.encode('utf-8', 'surrogatepass'))}"
        if rec.source.startswith("lineage ") and rec.text is None:
            ts.problems.append(f"{rec.source}: the step's kernel is not in the lineage file; `{rec.card}` left out")
            continue
        if mkey not in models:
            try:
                data = path.read_bytes() if rec.text is None else rec.text.encode("utf-8", "surrogatepass")
            except OSError:
                ts.problems.append(f"{rec.source}: {rec.file} is not readable; `{rec.kernel}`/{rec.card} left out")
                continue
            models[mkey] = analyze_text(data, rec.file)
            matches[mkey] = match_file(models[mkey], lib)
        model = models[mkey]
        fn = model.function(rec.kernel)
        ms = [m for m in matches[mkey] if m.function == rec.kernel and m.card_id == rec.card]
        if fn is None or not ms:
            # The model only ever ranks regions a card binds to; a pair without one is outside what it predicts.
            where = f"the simpler kernel of {rec.file}" if rec.text is not None else rec.file
            ts.unbound.append(f"{rec.source}: `{rec.card}` does not bind in `{rec.kernel}` of {where}; left out")
            continue
        gpu = ts.gpus.get(rec.gpu)
        # A lineage step's kernel is not the file's: the expert's recorded build and launch do not describe it.
        report = reports.get((rec.file, rec.kernel)) if rec.text is None else None
        feats = pair_features(model, fn, ms, gpu, report)
        ts.examples.append(
            Example(
                rec.source,
                rec.file,
                rec.kernel,
                rec.card,
                operator_of(rec.file, rec.kernel),
                rec.gpu,
                rec.outcome,
                feats,
            )
        )
    return ts


SHIPPED_TRAINING_SET = Path(__file__).resolve().parent / "default_training_set.json"


def write_training_set(ts: TrainingSet, path: Path) -> Path:
    """Write a training set as JSON (sorted, so that regenerating it from the same evidence gives the same file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = ts.to_dict()
    doc["examples"] = sorted(doc["examples"], key=lambda d: (d["file"], d["kernel"], d["card"], d["gpu"], d["source"]))
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_training_set(path: Path) -> TrainingSet:
    """Return a training set written by `write_training_set` (ValueError when it does not read)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return TrainingSet(
            examples=[Example.from_dict(d) for d in doc["examples"]],
            gpus={k: GpuProfile.from_dict(v) for k, v in doc.get("gpus", {}).items()},
            problems=list(doc.get("problems", [])),
            sources=dict(doc.get("sources", {})),
            unbound=list(doc.get("unbound", [])),
        )
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a training set ({type(exc).__name__}: {exc})") from exc


def load_shipped() -> TrainingSet | None:
    """Return the training set the default model was trained on (None when the package does not have it)."""
    if not SHIPPED_TRAINING_SET.is_file():
        return None
    return read_training_set(SHIPPED_TRAINING_SET)
