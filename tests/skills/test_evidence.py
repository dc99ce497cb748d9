"""Evidence records come only from measured gate results and leave the rest of the card untouched."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from warpwise.skills.evidence import add_records, from_results
from warpwise.skills.library import BUILTIN_CARDS, load_card

ROWS = [
    {
        "file": "bench/suite/softmax/naive.cu",
        "kernel": "softmax_naive",
        "card": "missing-restrict",
        "applicability": "unsafe",
        "status": "verified",
        "device": {"gpu": "NVIDIA H200", "toolkit": "NVRTC 13.0", "driver": "13000", "arch": "sm_90"},
        "speedup": {"median": 1.5, "low": 1.4, "high": 1.6, "noise": 0.01},
        "original_ms": 3.0,
        "candidate_ms": 2.0,
    },
    {"file": "x.cu", "kernel": "k", "card": "missing-restrict", "status": "incorrect", "message": "wrong"},
    {"file": "x.cu", "kernel": "k", "card": "missing-restrict", "status": "no_gpu"},
]


def test_only_measured_rows_become_records() -> None:
    recs = from_results(ROWS, "bench/results/card_evidence.json", dt.date(2026, 11, 29))
    (rec,) = recs["missing-restrict"]
    assert (rec.kernel, rec.operator, rec.gpu, rec.speedup, rec.baseline_ms) == (
        "softmax_naive",
        "softmax",
        "NVIDIA H200",
        1.5,
        3.0,
    )
    assert rec.context["status"] == "verified"


def test_add_records_rewrites_only_the_evidence_block(tmp_path: Path) -> None:
    shutil.copytree(BUILTIN_CARDS / "missing-restrict", tmp_path / "missing-restrict")
    card = tmp_path / "missing-restrict" / "card.md"
    before = card.read_text()
    recs = from_results(ROWS, "src", dt.date(2026, 11, 29))["missing-restrict"]
    existing = len(load_card(card)[0].header.evidence)  # type: ignore[union-attr]
    assert add_records(card, recs) == existing + 1
    assert add_records(card, recs) == existing + 1, "the same kernel, GPU, toolkit and source replaces the record"
    after = card.read_text()
    loaded, problems = load_card(card)
    assert problems == [] and loaded is not None
    assert loaded.header.evidence[-1].speedup == 1.5
    strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith(("evidence", "  "))]  # noqa: E731
    assert strip(before) == strip(after)
