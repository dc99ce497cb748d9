"""Card admission (CPU): the decision rule, held-out roundtrips driven by a scripted stand-in GPU, status edits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.lineages.fakes import ScriptedBackend
from tests.lineages.kernels import SUITE
from warpwise.lineages.admission import (
    admission_markdown,
    apply_admission,
    decide,
    decisions,
    mined_interval,
    run_roundtrips,
)
from warpwise.lineages.suite import card_candidates, set_card_status, suite_kernels
from warpwise.skills.library import load_library
from warpwise.verify.gate import Gate
from warpwise.verify.types import Options, Status

CARDS = Path(__file__).resolve().parents[2] / "skills"


def mined(speedup: float, low: float, high: float) -> dict:
    return {
        "kernel": "k",
        "speedup": speedup,
        "source": "lineage lineages/results/op/lineage.json K1 x:y",
        "context": {"role": "forward step", "speedup_low": low, "speedup_high": high, "file": "corpus/op/expert.cu"},
    }


def roundtrip(card: str, status: str, median: float | None = None) -> dict:
    row = {"card": card, "operator": "op", "kernel": "naive", "status": status, "held_out": True}
    if median is not None:
        row["speedup"] = {"median": median, "low": median * 0.98, "high": median * 1.02, "noise": 0.0}
    return row


def test_a_verified_roundtrip_inside_the_mined_spread_admits() -> None:
    recs = [mined(1.5, 1.4, 1.6), mined(2.5, 2.3, 2.7)]
    assert mined_interval(recs) == (1.4, 2.7)
    d = decide("c", recs, [roundtrip("c", "not_faster", 1.0), roundtrip("c", "verified", 2.0)])
    assert d["admitted"] and "inside the mined spread" in d["why"]


def test_outside_the_spread_needs_a_documented_reason() -> None:
    recs = [mined(1.5, 1.4, 1.6)]
    rows = [roundtrip("c", "verified", 6.0)]
    d = decide("c", recs, rows)
    assert not d["admitted"] and "outside the mined spread" in d["why"]
    d = decide("c", recs, rows, "the naive kernel starts from global atomics, far below the expert's baseline")
    assert d["admitted"] and "documented reason" in d["why"]


def test_a_measured_loss_where_the_card_fires_blocks_admission_even_with_a_reason() -> None:
    recs = [mined(1.5, 1.4, 1.6)]
    rows = [roundtrip("c", "verified", 1.5), roundtrip("c", "not_faster", 0.25)]
    d = decide("c", recs, rows, "a documented reason")
    assert not d["admitted"] and "slower beyond the measured spread" in d["why"] and "0.25x" in d["why"]
    # A tie within the spread is not a loss.
    assert decide("c", recs, [roundtrip("c", "verified", 1.5), roundtrip("c", "not_faster", 0.995)])["admitted"]


def test_no_measured_success_means_no_admission() -> None:
    recs = [mined(1.5, 1.4, 1.6)]
    assert not decide("c", recs, [roundtrip("c", "incorrect"), roundtrip("c", "not_faster", 1.0)])["admitted"]
    assert not decide("c", recs, [])["admitted"]
    assert not decide("c", [], [roundtrip("c", "verified", 1.5)])["admitted"]
    assert "no mined evidence" in decide("c", [], [])["why"]
    assert not decide("c", recs, [{**roundtrip("c", "verified", 1.5), "held_out": False}])["admitted"]


def test_card_candidates_adapt_the_launch_of_coarsening() -> None:
    (k,) = suite_kernels(SUITE, {"bias_gelu"})
    cands = {c.card: c for c in card_candidates(k)}
    assert "one-element-per-thread" in cands
    (change,) = cands["one-element-per-thread"].launch
    assert eval(change.python, {}, {"value": 9, "inputs": {}, "g": None}) == 3
    assert all(c.candidate != c.original for c in cands.values())


def test_card_candidates_adapt_the_launch_of_16_byte_vectors() -> None:
    (k,) = suite_kernels(SUITE, {"gelu_f16"})
    cands = {c.card: c for c in card_candidates(k)}
    (change,) = cands["scalar-global-access"].launch  # Eight 2-byte values per thread: an eighth of the grid.
    assert eval(change.python, {}, {"value": 17, "inputs": {}, "g": None}) == 3
    assert cands["missing-restrict"].launch == ()


def test_roundtrips_run_in_rounds_and_stop_once_a_card_is_admitted() -> None:
    backend = ScriptedBackend(lambda o, c: (Status.VERIFIED, 1.5))
    recs = {
        "readonly-data-without-restrict": [mined(1.5, 1.4, 1.6)],
        "shared-memory-block-reduction": [mined(1.2, 1.0, 2.0)],
    }
    rows = run_roundtrips(Gate(backend), SUITE, recs, Options())
    per_card: dict[str, int] = {}
    for r in rows:
        per_card[r["card"]] = per_card.get(r["card"], 0) + 1
    assert per_card == {"readonly-data-without-restrict": 1, "shared-memory-block-reduction": 1}
    assert all(d["admitted"] for d in decisions(recs, rows))


def test_set_card_status_edits_only_the_status_line(tmp_path: Path) -> None:
    shutil.copytree(CARDS / "missing-restrict", tmp_path / "missing-restrict")
    card = tmp_path / "missing-restrict" / "card.md"
    before = card.read_text()
    assert set_card_status(card, "admitted")
    after = card.read_text()
    assert after.replace("status: admitted", "status: preview", 1) == before
    assert not set_card_status(card, "admitted")
    lib = load_library([tmp_path], include_builtin=False)
    assert not lib.problems and lib.get("missing-restrict").header.status.value == "admitted"


def test_apply_admission_writes_records_and_statuses(tmp_path: Path) -> None:
    for name in ("missing-restrict", "shared-bank-conflict"):
        shutil.copytree(CARDS / name, tmp_path / name)
    lib = load_library([tmp_path], include_builtin=False)
    row = {
        **roundtrip("missing-restrict", "verified", 1.3),
        "file": "bench/suite/op/naive.cu",
        "before_timing": {"median_ms": 1.3},
        "after_timing": {"median_ms": 1.0},
        "device": {"gpu": "Scripted GPU", "toolkit": "NVRTC 0.0"},
    }
    doc = {
        "meta": {"date": "2026-11-30T00:00:00+00:00"},
        "roundtrips": [row],
        "decisions": [
            {"card": "missing-restrict", "admitted": True, "why": "test"},
            {"card": "shared-bank-conflict", "admitted": False, "why": "test"},
        ],
    }
    changes = apply_admission(doc, "admission test.json", lib)
    assert any("held-out roundtrip" in c for c in changes) and any("status admitted" in c for c in changes)
    lib = load_library([tmp_path], include_builtin=False)
    assert not lib.problems
    assert lib.get("missing-restrict").header.status.value == "admitted"
    assert lib.get("shared-bank-conflict").header.status.value == "preview"
    assert lib.get("missing-restrict").header.evidence[-1].context["role"] == "held-out roundtrip"
    assert "| `missing-restrict` |" in admission_markdown(doc)


def test_admit_refuses_to_run_without_a_gpu(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from warpwise.cli import main
    from warpwise.verify import backends

    monkeypatch.setattr(backends, "gpu_count", lambda: 0)
    assert main(["cards", "admit", "--suite", str(SUITE)]) == 2
    assert "needs measured results" in capsys.readouterr().err
