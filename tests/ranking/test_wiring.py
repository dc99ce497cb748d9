"""Where the ranking is used: the gate's queue skips predicted losers when its budget is short; the editor shows
predictions in quick-fix titles and hovers, ordered likely winners first; the search gets expansion priorities."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types

from tests.conftest import EXAMPLES
from tests.server.conftest import KERNELS, Session, sessions  # noqa: F401  (the `sessions` fixture)
from tests.verify.helpers import candidate, variant
from warpwise import ranking
from warpwise.verify.backends import CompileOnlyBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate
from warpwise.verify.jobqueue import JobState, VerificationQueue
from warpwise.verify.types import Options

OPTS = Options(compile_only=True)


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    monkeypatch.setenv("WARPWISE_CACHE_DIR", str(tmp_path))
    backend = CompileOnlyBackend()
    yield Gate(backend, ResultCache(tmp_path / "results.sqlite3"))
    backend.close()


def test_queue_skips_predicted_losers_when_the_budget_is_short(gate: Gate) -> None:
    # A budget a single job overruns: after the first job, every waiting one is expected not to fit.
    q = VerificationQueue(gate, budget_s=1e9, concurrency=1, skip_below=0)
    first = q.submit(candidate(variant(1)), OPTS, priority=5)
    assert first.wait(60) is not None
    # Half a job's seconds left: not enough for the one waiting job, so a predicted loser is skipped ...
    q.budget_s = q.spent_s * 1.5
    loser = q.submit(candidate(variant(3)), OPTS, priority=-12)
    loser.wait(60)
    assert loser.state is JobState.REFUSED
    assert "predicted not to pay off" in loser.message and "budget is short" in loser.message
    # ... while a likely winner still runs.
    winner = q.submit(candidate(variant(2)), OPTS, priority=3)
    assert winner.wait(60) is not None and winner.state is JobState.DONE
    q.close()


def test_queue_without_skip_below_runs_losers(gate: Gate) -> None:
    q = VerificationQueue(gate, budget_s=1e9, concurrency=1)
    loser = q.submit(candidate(variant(4)), OPTS, priority=-12)
    assert loser.wait(60) is not None and loser.state is JobState.DONE
    q.close()


def test_expansion_priorities_for_the_search() -> None:
    text = (EXAMPLES / "vector_ops.cu").read_bytes()
    ranked = ranking.expansion_priorities(text, "vector_ops.cu", "saxpy")
    assert ranked and all(k == "saxpy" for k, _, _, _ in ranked)
    scores = [s for _, _, s, _ in ranked]
    assert scores == sorted(scores, reverse=True)
    cards = [c for _, c, _, _ in ranked]
    # Both vectorizing cards fire on saxpy; which leads is the trained model's call, not this test's.
    assert {"scalar-global-access", "scalar-elementwise-map"} <= set(cards)
    assert ranking.expansion_priority(text, "saxpy", cards[0], "vector_ops.cu") == scores[0]
    assert ranking.expansion_priority(text, "saxpy", "no-such-card", "vector_ops.cu") is None


def test_search_adapter_reads_the_model() -> None:
    from warpwise.analyzers.build import analyze_text
    from warpwise.search import ranking as search_ranking
    from warpwise.skills.engine import match_file

    predict = search_ranking.predictor()
    assert predict is not None
    fm = analyze_text((EXAMPLES / "vector_ops.cu").read_bytes(), "vector_ops.cu")
    ms = [m for m in match_file(fm) if m.card_id == "scalar-global-access" and m.function == "saxpy"]
    got = predict("scalar-global-access", ms, fm)
    assert got is not None and got[0] > 0 and "ranking model" in got[1]


def test_the_editor_predicts_without_reasons_and_a_hover_gets_them_for_its_pair() -> None:
    """The version's predictions carry no reasons (only a hover shows them); one pair's prediction with its reasons
    has the same numbers, and the reasons `predict_matches` gives."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import match_file

    fm = analyze_text((EXAMPLES / "vector_ops.cu").read_bytes(), "vector_ops.cu")
    ms = [m for m in match_file(fm) if m.has_rewrite]
    key = ("test://vector_ops.cu", "v1")
    every = ranking.predictions_for(key, fm, ms)
    assert every and all(p.reasons == () for p in every.values())
    full = ranking.predict_matches(fm, ms)
    for pair, quiet in every.items():
        one = ranking.prediction_for(key, fm, ms, pair)
        assert one == full[pair] and one.reasons
        assert (one.p_verified, one.speedup, one.low, one.high) == (
            quiet.p_verified,
            quiet.speedup,
            quiet.low,
            quiet.high,
        )
    assert ranking.prediction_for(key, fm, ms, ("saxpy", "no-such-card")) is None


async def test_editor_shows_predictions(sessions) -> None:  # noqa: F811
    s: Session = await sessions("visual-studio-code")
    uri = s.open(KERNELS)
    await s.static(uri)
    hover = await s.hover(uri, 7, 6)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert "**Verification.** not yet verified" in text
    assert re.search(r"\*\*Prediction\.\*\* \d+% chance to verify; predicted [\d.]+-[\d.]+x", text)
    assert "learned ranking, model " in text
    # "Suppress ..." (a NOLINT comment) is offered beside every finding; it carries no prediction.
    actions = [a for a in await s.actions(uri, 7, only=["quickfix"]) if not a.title.startswith("Suppress ")]
    assert actions and all("unverified, predicted" in a.title for a in actions)
