"""The training set: every evidence record, re-analysed, deduplicated, failures kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT
from warpwise.ranking import dataset
from warpwise.verify.cache import CacheKey, ResultCache, content_hash
from warpwise.verify.types import DeviceIdentity, Speedup, Status, Timing, VerificationResult

KERNEL = b"""
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}
"""


def _root(tmp_path: Path, rows: list[dict]) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "saxpy.cu").write_bytes(KERNEL)
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "card_evidence-x.json").write_text(json.dumps({"results": rows}))
    return tmp_path


def _row(card: str, status: str, speedup: float | None = None) -> dict:
    row = {"file": "src/saxpy.cu", "kernel": "saxpy", "card": card, "status": status, "device": {"gpu": "G"}}
    if speedup is not None:
        row["speedup"] = {"median": speedup, "low": speedup * 0.98, "high": speedup * 1.02, "noise": 0.001}
        row["original_ms"], row["candidate_ms"] = 1.0, 1.0 / speedup
    return row


def test_result_rows_become_examples_with_every_status(tmp_path: Path) -> None:
    root = _root(
        tmp_path,
        [
            _row("scalar-global-access", "verified", 1.4),
            _row("missing-restrict", "not_faster", 1.0),
            _row("one-element-per-thread", "incorrect"),
            _row("readonly-data-without-restrict", "spec_missing"),
            _row("no-such-card", "verified", 2.0),
            {**_row("missing-restrict", "verified", 1.1), "file": "src/gone.cu"},
        ],
    )
    ts = dataset.build(root, include_cards=False)
    assert ts.counts() == {"incorrect": 1, "not_faster": 1, "spec_missing": 1, "verified": 1}
    assert {e.card for e in ts.labelled} == {"scalar-global-access", "missing-restrict", "one-element-per-thread"}
    ok = next(e for e in ts.examples if e.card == "scalar-global-access")
    assert ok.operator == "saxpy" and ok.outcome.measured and ok.outcome.low < 1.4 < ok.outcome.high
    assert ok.features.numeric["k_global_accesses"] == 3
    assert any("no-such-card" in u and "does not bind" in u for u in ts.unbound)
    assert any("gone.cu" in p and "not readable" in p for p in ts.problems)


def test_operator_comes_from_the_suite_folder() -> None:
    assert dataset.operator_of("bench/suite/softmax/naive.cu", "softmax_naive") == "softmax"
    assert dataset.operator_of("lineages/corpus/sgemm/expert.cu", "sgemm") == "sgemm"
    assert dataset.operator_of("examples/vector_ops.cu", "saxpy") == "saxpy"


def test_cached_results_are_tied_to_file_kernel_and_card(tmp_path: Path) -> None:
    root = _root(tmp_path, [])
    cands = dataset.card_candidates(KERNEL, "src/saxpy.cu")
    text = cands[("saxpy", "scalar-global-access")]
    cache = ResultCache(tmp_path / "cache.sqlite3")
    dev = DeviceIdentity("NVIDIA H200", "13000", "NVRTC 13.0", "sm_90", False, 0, 132)
    t0, t1 = Timing(1.0, 0.99, 1.01, 100), Timing(0.7, 0.69, 0.71, 100)
    result = VerificationResult(
        status=Status.VERIFIED,
        message="ok",
        device=dev,
        original_timing=t0,
        candidate_timing=t1,
        speedup=Speedup(1.0 / 0.7, 0.99 / 0.71, 1.01 / 0.69, 0.001),
    )
    cache.put(CacheKey(content_hash(KERNEL), content_hash(text), "spec", dev.gpu, dev.driver, dev.toolkit), result)
    cache.put(CacheKey(content_hash(b"other"), content_hash(b"x"), "spec", dev.gpu, dev.driver, dev.toolkit), result)
    ts = dataset.build(root, cache=cache, include_cards=False)
    assert [(e.kernel, e.card, e.source, e.outcome.status) for e in ts.examples] == [
        ("saxpy", "scalar-global-access", dataset.CACHE_SOURCE, "verified")
    ]
    assert abs((ts.examples[0].outcome.speedup or 0) - 1 / 0.7) < 1e-9
    assert any("1 cached results match no file" in p for p in ts.problems)


def test_committed_evidence_builds_without_problems() -> None:
    ts = dataset.build(ROOT)
    # bench/results/card_evidence-2026-11-29.json: 115 rewrites, 26 verified, 53 not faster, 1 incorrect,
    # 35 spec_missing. The cards' evidence records repeat its measured rows and add no example.
    assert ts.counts()["verified"] >= 26 and ts.counts()["not_faster"] >= 53
    assert len(ts.labelled) >= 80
    assert not ts.problems
    keys = [(e.file, e.kernel, e.card, e.gpu, e.source) for e in ts.examples]
    assert len(keys) == len(set(keys))
    assert "NVIDIA H200" in ts.gpus and ts.gpus["NVIDIA H200"].copy_gbps > 4000


def test_training_set_round_trips(tmp_path: Path) -> None:
    root = _root(tmp_path, [_row("scalar-global-access", "verified", 1.4)])
    ts = dataset.build(root, include_cards=False)
    path = dataset.write_training_set(ts, tmp_path / "ts.json")
    back = dataset.read_training_set(path)
    assert [e.to_dict() for e in back.examples] == [e.to_dict() for e in ts.examples]


def test_public_lineage_records_use_their_stored_features(tmp_path: Path) -> None:
    # A public lineage's record names a file on a mirror (never in the repository): its features come from
    # lineages/public/features.json; a record whose card did not bind in version k has none and is left out.
    import datetime as dt
    from types import SimpleNamespace

    from warpwise.ranking.features import PairFeatures
    from warpwise.skills.model import EvidenceRecord

    feats = PairFeatures("scalar-global-access", "loop", {"k_registers": 32.0, "k_frac_strided": 0.0})
    src = "public lineage toy/repo toy-lineage a -> b"
    (tmp_path / "lineages" / "public").mkdir(parents=True)
    (tmp_path / "lineages" / "public" / "features.json").write_text(
        json.dumps({"schema": 1, "features": {f"{src}|scalar-global-access": feats.to_dict()}})
    )
    common = {
        "kernel": "k_a",
        "operator": "elementwise",
        "gpu": "G",
        "toolkit": "NVRTC 13.0",
        "date": dt.date(2026, 12, 1),
    }
    ctx = {"file": "public:toy/repo@abc:add.cu", "speedup_low": 1.5, "speedup_high": 1.7}
    bound = EvidenceRecord(**common, baseline_ms=2.0, candidate_ms=1.25, speedup=1.6, source=src, context=ctx)
    other = EvidenceRecord(**common, baseline_ms=2.0, candidate_ms=2.1, speedup=0.95, source=src + "x", context=ctx)
    library = [
        SimpleNamespace(skill_id="scalar-global-access", header=SimpleNamespace(evidence=[bound])),
        SimpleNamespace(skill_id="missing-restrict", header=SimpleNamespace(evidence=[other])),
    ]
    assert dataset.build(tmp_path, library=library).examples == []  # only with include_public (the CLI passes it)
    ts = dataset.build(tmp_path, library=library, include_public=True)
    (example,) = ts.examples
    assert example.card == "scalar-global-access" and example.operator == "elementwise"
    assert example.outcome.status == "verified" and example.features == feats
    assert ts.unbound == [f"{src}x: `missing-restrict` does not bind in `k_a` of public:toy/repo@abc:add.cu; left out"]


def test_transformation_benchmarks_give_the_quick_fixs_parameters_only(tmp_path: Path) -> None:
    """A single-card transformation benchmark's gate results are examples for the card's own parameters (what the
    quick fix applies); other parameter choices, chains of cards and unknown cards are left out."""
    from warpwise.skills.library import builtin_library

    gate = {"run": "/tmp/run1", "status": "verified", "speedup": {"median": 4.0, "low": 3.9, "high": 4.1}}
    cand = {"original": "bench/suite/gemv/naive.cu", "kernel": "gemv_naive", "gate": gate}
    doc = {
        "runs": [{"dir": "/tmp/run1", "device": {"gpu": "NVIDIA H200"}}],
        "candidates": {
            "warp4": {
                **cand,
                "mechanism": "transformation row-cooperative-reduction, params mode=warp rows_per_block=4",
            },
            "block256": {
                **cand,
                "mechanism": "transformation row-cooperative-reduction, params mode=block threads=256",
            },
            "tree": {**cand, "mechanism": "transformation barrier-per-step-tree-reduction (warp shuffles)"},
            "chain": {**cand, "mechanism": "transformation barrier-per-step-tree-reduction then row-register-cache"},
            "unknown": {**cand, "mechanism": "transformation no-such-card, params x=1"},
            "unrun": {k: v for k, v in cand.items() if k != "gate"} | {"mechanism": "transformation two-pass-softmax"},
        },
    }
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "row_coop-2099-01-01.json").write_text(json.dumps(doc))
    recs = dataset.transformation_records(tmp_path, builtin_library())
    assert sorted(r.card for r in recs) == ["barrier-per-step-tree-reduction", "row-cooperative-reduction"]
    assert {r.gpu for r in recs} == {"NVIDIA H200"}
    assert all(r.outcome.status == "verified" and r.outcome.speedup == 4.0 for r in recs)
