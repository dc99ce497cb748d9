"""The ranking model: training, prediction, intervals, explanations, the model file, and the shipped default."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.conftest import ROOT
from warpwise import ranking
from warpwise.ranking import dataset, store
from warpwise.ranking.model import FORMAT, THRESHOLD, RankingModel, train


@pytest.fixture(scope="module")
def shipped() -> dataset.TrainingSet:
    ts = dataset.load_shipped()
    assert ts is not None, "ranking/default_training_set.json is missing: run `warpwise ranking train --default`"
    return ts


@pytest.fixture(scope="module")
def small_model(shipped: dataset.TrainingSet) -> RankingModel:
    return train(shipped.examples, shipped.gpus, alphas=(10.0,), cs=(0.1,))


def test_predictions_are_probabilities_with_ordered_intervals(small_model, shipped) -> None:
    for e in shipped.labelled:
        p = small_model.predict(e.features)
        assert 0.0 < p.p_verified < 1.0
        assert 0 < p.low <= p.speedup <= p.high
        assert p.label.startswith("predicted ") and p.label.endswith("x")
        assert p.will_be_faster == (p.p_verified >= THRESHOLD)


def test_explanations_name_features_in_words(small_model, shipped) -> None:
    e = next(e for e in shipped.labelled if e.card == "scalar-global-access")
    p = small_model.predict(e.features, top=3)
    assert len(p.reasons) == 3
    text = p.explain()
    assert "`scalar-global-access`" in text and "chance to verify" in text
    assert all(("raises" in r.text) or ("lowers" in r.text) for r in p.reasons)
    assert not any("k_" in r.text or "r_" in r.text.split()[0] for r in p.reasons)


def test_the_card_record_drives_the_prediction(small_model, shipped) -> None:
    def mean_p(card: str) -> float:
        ps = [small_model.predict(e.features).p_verified for e in shipped.labelled if e.card == card]
        return sum(ps) / len(ps)

    # Verified 4 of 4 against 2 of 16 in the committed evidence.
    assert mean_p("shared-memory-block-reduction") > mean_p("missing-restrict")


def test_model_file_round_trips(small_model, shipped, tmp_path: Path) -> None:
    path = store.write_model(small_model, tmp_path / "m.json")
    back = store.read_model(path)
    assert back is not None and back.version == small_model.version
    for e in shipped.labelled[:10]:
        assert back.predict(e.features).to_dict() == small_model.predict(e.features).to_dict()


def test_a_bad_model_file_is_skipped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    assert store.read_model(bad) is None
    with pytest.raises(ValueError, match="format"):
        RankingModel.from_dict({"format": "x"})
    with pytest.raises(ValueError, match="incomplete"):
        RankingModel.from_dict({"format": FORMAT})


def test_the_user_model_wins_over_the_default(small_model, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WARPWISE_DATA_DIR", str(tmp_path))
    assert store.user_model_path() == tmp_path / "ranking" / "model-v1.json"
    default = ranking.load_model()
    assert default is not None and default.version != small_model.version
    store.write_model(small_model, store.user_model_path())
    loaded = ranking.load_model()
    assert loaded is not None and loaded.version == small_model.version


def test_training_needs_a_label() -> None:
    with pytest.raises(ValueError, match="no labelled examples"):
        train([], {})


def test_queue_priority_orders_winners_first(small_model, shipped) -> None:
    preds = [small_model.predict(e.features) for e in shipped.labelled]
    winners = [p for p in preds if p.will_be_faster]
    losers = [p for p in preds if not p.will_be_faster]
    assert winners and losers
    assert min(ranking.queue_priority(p) for p in winners) > 0 > max(ranking.queue_priority(p) for p in losers)
    assert ranking.queue_priority(None) == 0
    a, b = sorted(losers, key=lambda p: p.p_verified)[:2]
    assert ranking.queue_priority(a) <= ranking.queue_priority(b)


def test_the_editor_breaks_queue_ties_by_predicted_speedup() -> None:
    from warpwise.ranking.model import Prediction

    small = Prediction("missing-restrict", 0.161, 1.07, 0.8, 1.3)
    large = Prediction("scalar-half-arithmetic", 0.161, 1.28, 0.8, 1.9)
    likely = Prediction("scalar-global-access", 0.83, 1.46, 1.1, 2.0)
    # One calibrated chance gives the two losers one queue priority; the editor puts the larger predicted gain first.
    assert ranking.queue_priority(small) == ranking.queue_priority(large)
    order = sorted([small, large, likely, None], key=lambda p: tuple(-x for x in ranking.editor_priority(p)))
    assert order == [likely, None, large, small]
    assert ranking.editor_priority(likely)[0] == ranking.queue_priority(likely)


# -- the shipped default model ----------------------------------------------------------------------------------


def test_the_default_model_loads() -> None:
    model = store.read_model(store.DEFAULT_MODEL)
    assert model is not None
    assert model.trained_on["examples"] >= 80 and model.default_gpu == "NVIDIA H200"
    assert math.isclose(model.gpus["NVIDIA H200"].copy_gbps, 4215.4)


def test_the_shipped_training_set_is_the_committed_evidence(tmp_path: Path) -> None:
    rebuilt = dataset.build(ROOT, include_public=True)  # as `warpwise ranking train --default` builds it
    want = json.loads(dataset.SHIPPED_TRAINING_SET.read_text())
    got = json.loads(dataset.write_training_set(rebuilt, tmp_path / "ts.json").read_text())
    assert got == want, "the committed evidence changed: run `warpwise ranking train --default`"


def _close(a: object, b: object, path: str = "") -> list[str]:
    """Return where two JSON documents differ beyond a relative 1e-4 on numbers (BLAS may move the 6th digit)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a if k != "version" for d in _close(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _close(x, y, f"{path}[{i}]")]
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return [] if math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6) else [f"{path}: {a} != {b}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


# The robust regressor's coefficients are only as exact as its solver's stopping point. scikit-learn's
# HuberRegressor runs L-BFGS-B, which stops on the relative change of the objective (scipy's ftol, 2.2e-9) while
# the gradient is still about 0.1: fitting the same 201 examples in another order (another summation order, as
# another BLAS thread count gives) stops 2e-6 apart in objective (4e-8 relative) and 3e-4 apart in one weight of
# 0.12, which is what the penalty's strong convexity allows (mu = 2 * alpha = 60: |dw| <= sqrt(2 df / mu) =
# 2.6e-4). The classifier (lbfgs to a 1e-6 gradient, L2 on every weight) moves by 1e-13. So the regressor is
# compared through what it predicts, to 2e-3 in log speedup (0.2%, eight times that effect), and every other
# number of the model file to a relative 1e-4.
_FLAT = {"regressor": ("coef", "intercept"), "residuals": None, "card_residuals": None}
PREDICTION_RTOL = 2e-3


def _without_flat(doc: dict) -> dict:
    """Return the model document without the regressor's weights and the residuals they determine."""
    out = json.loads(json.dumps(doc))
    for key, inner in _FLAT.items():
        if inner is None:
            out.pop(key, None)
        elif isinstance(out.get(key), dict):
            for k in inner:
                out[key].pop(k, None)
    return out


@pytest.mark.slow
def test_retraining_reproduces_the_default_model(shipped) -> None:
    model = train(shipped.examples, shipped.gpus, sources=shipped.sources)
    shipped_doc = json.loads(store.DEFAULT_MODEL.read_text())
    assert _close(_without_flat(model.to_dict()), _without_flat(shipped_doc)) == [], (
        "run `warpwise ranking train --default`"
    )
    shipped_model = store.read_model(store.DEFAULT_MODEL)
    assert shipped_model is not None
    for e in shipped.labelled:
        got, want = model.predict(e.features, top=0), shipped_model.predict(e.features, top=0)
        assert math.isclose(got.p_verified, want.p_verified, abs_tol=1e-4), (e.file, e.kernel, e.card)
        for name in ("speedup", "low", "high"):
            a, b = getattr(got, name), getattr(want, name)
            assert abs(math.log(a / b)) <= PREDICTION_RTOL, (e.file, e.kernel, e.card, name, a, b)
