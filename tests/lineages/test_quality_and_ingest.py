"""The quality report's strategies and rows, and the ingestion of a GPU batch's files (CPU, scripted verdicts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.lineages.fakes import ScriptedBackend
from tests.lineages.kernels import CORPUS, SUITE
from tests.skills.cardtest import copy_cards
from warpwise.lineages.admission import decisions, mined_evidence, run_roundtrips
from warpwise.lineages.ingest import IngestError, ingest
from warpwise.lineages.lineage import Budget, LineageBuilder, load_expert
from warpwise.lineages.quality import (
    STRATEGIES,
    GreedyCards,
    QualityContext,
    quality_markdown,
    roofline_ms,
    run_kernel,
    strategy,
)
from warpwise.lineages.suite import suite_kernels
from warpwise.skills.library import load_library
from warpwise.verify.gate import Gate
from warpwise.verify.types import Options, Status


def shuffles_pay(original: str, candidate: str) -> tuple[Status, float]:
    """A rewrite that brings in warp shuffles is 1.3x faster; nothing else is."""
    if "__shfl" in candidate and "__shfl" not in original:
        return Status.VERIFIED, 1.3
    return Status.NOT_FASTER, 1.0


# The cards whose rewrite of `sum_naive` brings in warp shuffles (whichever the proposals reach first is taken):
# both tree cards, and grid-stride-atomic-total, which rewrites the tree as shuffles as well.
SHUFFLE_CARDS = {"shared-memory-block-reduction", "barrier-per-step-tree-reduction", "grid-stride-atomic-total"}


def test_greedy_cards_takes_the_first_verified_proposal_and_matches_again() -> None:
    (k,) = suite_kernels(SUITE, {"sum"})
    backend = ScriptedBackend(shuffles_pay)
    ctx = QualityContext(Gate(backend), Options(), Budget())
    out = GreedyCards().run(k, ctx)
    assert len(out.chain) == 1 and out.chain[0]["card"] in SHUFFLE_CARDS
    assert any(a["card"] == "readonly-data-without-restrict" and a["status"] == "not_faster" for a in out.attempts)
    # The rejected card is not proposed again after the accepted step.
    assert [a["card"] for a in out.attempts].count("readonly-data-without-restrict") == 1
    assert "__shfl" in out.text


def test_proposals_follow_the_ranking_when_it_predicts(monkeypatch: pytest.MonkeyPatch) -> None:
    from warpwise import ranking
    from warpwise.lineages.suite import card_candidates

    (k,) = suite_kernels(SUITE, {"sum"})
    # The two cards this test ranks; other cards that match the kernel are left out, so a new card changes nothing.
    cands = card_candidates(k, cards={"readonly-data-without-restrict", "shared-memory-block-reduction"})
    assert [c.card for c in cands] == ["readonly-data-without-restrict", "shared-memory-block-reduction"]

    class Pred:
        def __init__(self, score: float) -> None:
            self.score = score

    fake = {
        ("sum_naive", "shared-memory-block-reduction"): Pred(0.5),
        ("sum_naive", "readonly-data-without-restrict"): Pred(0.1),
    }
    monkeypatch.setattr(ranking, "predict_matches", lambda model, matches: fake)
    notes: list[str] = []
    assert [c.card for c in ranking.rank_candidates(k, k.expert.text, cands, notes)] == [
        c.card for c in reversed(cands)
    ]
    assert "ranked" in notes[0]
    monkeypatch.setattr(ranking, "predict_matches", lambda model, matches: {})
    assert ranking.rank_candidates(k, k.expert.text, cands, []) == cands


def test_a_quality_row_measures_naive_against_final() -> None:
    (k,) = suite_kernels(SUITE, {"sum"})
    ctx = QualityContext(Gate(ScriptedBackend(shuffles_pay)), Options(), Budget())
    row = run_kernel(k, GreedyCards(), ctx, {"copy_gbps": 4000.0}, measure_eager=False)
    assert len(row["chain"]) == 1 and row["chain"][0] in SHUFFLE_CARDS
    assert row["speedup"]["median"] == pytest.approx(1.3)
    assert row["naive_ms"] == pytest.approx(1.3) and row["final_ms"] == pytest.approx(1.0)
    assert row["gpu_s"] > 0 and row["jobs"] == len(row["attempts"]) + 1
    md = quality_markdown({"meta": {"strategy": "greedy-cards", "peaks": {"copy_gbps": 4000.0}}, "rows": [row]})
    assert f"`{row['chain'][0]}`" in md and "1.30x" in md


def test_roofline_takes_the_slower_ceiling() -> None:
    ns = {"bytes_moved": lambda i: 4_000_000, "flops": lambda i: 8_000_000_000, "roofline": "compute"}
    peaks = {"copy_gbps": 4000.0, "cublas_sgemm_tflops": 50.0}
    assert roofline_ms(ns, {}, peaks) == pytest.approx(0.16)
    assert roofline_ms({**ns, "roofline": "memory"}, {}, peaks) == pytest.approx(0.001)


def test_strategies_by_name_or_module_path() -> None:
    assert "greedy-cards" in STRATEGIES and strategy("greedy-cards").name == "greedy-cards"
    assert strategy("warpwise.lineages.quality:GreedyCards").name == "greedy-cards"
    with pytest.raises(ValueError, match="unknown strategy"):
        strategy("nope")


def test_quality_script_lists_the_suite_without_a_gpu() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "quality.py"), "--list", "--only", "sum,histogram"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert "sum_naive" in proc.stdout and "per-thread-global-atomics" in proc.stdout


def fake_batch(folder: Path) -> None:
    """Write the three result files of a batch run, from scripted verdicts."""
    verdict = lambda o, c: (Status.VERIFIED, 1.5)  # noqa: E731
    lin = LineageBuilder(Gate(ScriptedBackend(verdict)), Options()).build(
        load_expert(CORPUS / "reduce_sum" / "expert.cu")
    )
    (folder / "lineages.json").write_text(json.dumps({"lineages": {"reduce_sum": lin}, "charts": {}}))
    mined = mined_evidence(load_library([], include_builtin=False), [lin])
    rows = run_roundtrips(Gate(ScriptedBackend(verdict)), SUITE, mined, Options())
    admission = {"meta": {"date": "2026-11-30T10:00:00+00:00"}, "roundtrips": rows, "decisions": decisions(mined, rows)}
    (folder / "admission.json").write_text(json.dumps(admission))
    (k,) = suite_kernels(SUITE, {"sum"})
    ctx = QualityContext(Gate(ScriptedBackend(shuffles_pay)), Options(), Budget())
    row = run_kernel(k, GreedyCards(), ctx, {"copy_gbps": 4000.0}, measure_eager=False)
    quality = {"meta": {"date": "2026-11-30T10:05:00+00:00", "strategy": "greedy-cards"}, "rows": [row]}
    (folder / "quality.json").write_text(json.dumps(quality))


def test_ingest_brings_a_batch_into_the_tree(tmp_path: Path) -> None:
    batch, root, cards = tmp_path / "out", tmp_path / "repo", tmp_path / "cards"
    batch.mkdir()
    copy_cards(cards)
    fake_batch(batch)
    dry = ingest(batch, dry_run=True, root=root, cards=cards)
    assert dry and not root.exists(), "a dry run writes nothing"
    changes = ingest(batch, root=root, cards=cards)
    results = root / "lineages" / "results"
    assert (results / "reduce_sum" / "lineage.md").is_file() and (results / "README.md").is_file()
    assert (root / "lineages" / "proposed" / "single-load-in-flight" / "SKILL.md").is_file()
    assert (root / "bench" / "results" / "admission-2026-11-30.md").is_file()
    assert (root / "bench" / "results" / "quality-2026-11-30.md").is_file()
    lib = load_library([cards], include_builtin=False)
    assert not lib.problems
    card = lib.get("scalar-global-access")
    assert any(str(e.source).startswith("lineage lineages/results/reduce_sum/") for e in card.header.evidence)
    admitted = [c for c in changes if "status admitted" in c]
    assert admitted, changes
    for line in admitted:
        assert lib.get(line.split(":")[0]).header.status.value == "admitted"
    # Ingesting the same files again adds no records (the same sources replace themselves).
    before = {c.skill_id: len(c.header.evidence) for c in lib}
    ingest(batch, root=root, cards=cards)
    after = {c.skill_id: len(c.header.evidence) for c in load_library([cards], include_builtin=False)}
    assert after == before
    # A rebuilt lineage with other steps replaces the records of the earlier build (step numbers change).
    pack = json.loads((batch / "lineages.json").read_text())
    lin = pack["lineages"]["reduce_sum"]
    lin["steps"] = lin["steps"][:1]
    lin["rejected"] = []
    (batch / "lineages.json").write_text(json.dumps(pack))
    (batch / "admission.json").unlink()
    ingest(batch, root=root, cards=cards)
    src = "lineage lineages/results/reduce_sum/lineage.json "
    counts = {
        c.skill_id: sum(str(e.source).startswith(src) for e in c.header.evidence)
        for c in load_library([cards], include_builtin=False)
    }
    assert sum(counts.values()) == 1, counts


def test_ingest_needs_batch_files(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="holds none"):
        ingest(tmp_path)
