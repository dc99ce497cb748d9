"""Calibrating P(verified): the maps, their fit on out-of-sample probabilities, the automatic choice, the weights."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from warpwise.ranking import dataset
from warpwise.ranking.model import (
    CALIBRATION_BOUNDS,
    Calibration,
    RankingModel,
    choose_calibration,
    fit_calibration,
    pair_weights,
    train,
)


def _overconfident(n: int = 400, seed: int = 1) -> tuple[list[float], list[float]]:
    """Return probabilities that claim 0.9 for outcomes that happen 60% of the time (and 0.3 for 10%)."""
    rng = random.Random(seed)
    ps, ys = [], []
    for i in range(n):
        high = i % 2 == 0
        ps.append(0.9 + rng.uniform(-0.05, 0.05) if high else 0.3 + rng.uniform(-0.05, 0.05))
        ys.append(float(rng.random() < (0.6 if high else 0.1)))
    return ps, ys


@pytest.mark.parametrize("method", ["isotonic", "platt"])
def test_a_calibration_corrects_an_overconfident_classifier(method: str) -> None:
    ps, ys = _overconfident()
    cal = fit_calibration(ps, ys, [1.0] * len(ps), method)
    assert cal is not None and cal.method == method and cal.fitted_on == len(ps)
    assert 0.5 < cal.apply(0.9) < 0.7
    assert cal.apply(0.3) < 0.2
    grid = [i / 100 for i in range(101)]
    mapped = [cal.apply(p) for p in grid]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(mapped)), "the map is monotone"
    assert all(CALIBRATION_BOUNDS[0] <= q <= CALIBRATION_BOUNDS[1] for q in mapped)


def test_isotonic_knots_interpolate_and_hold_beyond_the_ends() -> None:
    cal = Calibration("isotonic", x=(0.2, 0.6), y=(0.1, 0.5))
    assert cal.apply(0.0) == pytest.approx(0.1)
    assert cal.apply(0.4) == pytest.approx(0.3)
    assert cal.apply(0.99) == pytest.approx(0.5)


def test_calibrations_round_trip_and_bad_ones_are_refused() -> None:
    for cal in (
        Calibration("isotonic", (0.1, 0.5, 0.9), (0.05, 0.4, 0.8), fitted_on=3),
        Calibration("platt", a=0.7, b=-0.2),
    ):
        back = Calibration.from_dict(cal.to_dict())
        assert back == dataclasses.replace(cal, x=back.x, y=back.y)
        assert back.apply(0.77) == pytest.approx(cal.apply(0.77))
    with pytest.raises(ValueError, match="unknown calibration method"):
        Calibration.from_dict({"method": "sigmoid"})
    with pytest.raises(ValueError, match="increasing"):
        Calibration.from_dict({"method": "isotonic", "x": [0.5, 0.1], "y": [0.1, 0.2]})
    with pytest.raises(ValueError, match="unknown calibration"):
        fit_calibration([0.5], [1.0], [1.0], "beta")


def test_one_outcome_only_gives_no_calibration() -> None:
    assert fit_calibration([0.2, 0.8, 0.9], [1.0, 1.0, 1.0], [1.0] * 3, "isotonic") is None
    assert fit_calibration([0.2, 0.8], [0.0, 1.0], [1.0] * 2, "none") is None


def test_the_automatic_choice_calibrates_overconfidence_and_leaves_calibrated_probabilities() -> None:
    ps, ys = _overconfident()
    groups = [f"op{i % 8}" for i in range(len(ps))]
    cal, chosen, scores = choose_calibration(ps, ys, [1.0] * len(ps), groups, "auto")
    assert chosen in ("platt", "isotonic") and cal is not None
    assert scores[chosen] < scores["none"]
    # Probabilities that are already right: the simplest map that scores as well is kept.
    rng = random.Random(3)
    ps2 = [rng.uniform(0.05, 0.95) for _ in range(400)]
    ys2 = [float(rng.random() < p) for p in ps2]
    _, chosen2, scores2 = choose_calibration(ps2, ys2, [1.0] * 400, groups, "auto")
    assert scores2[chosen2] == min(scores2.values())
    assert scores2["none"] <= min(scores2.values()) + 0.01


@pytest.fixture(scope="module")
def shipped() -> dataset.TrainingSet:
    ts = dataset.load_shipped()
    assert ts is not None, "ranking/default_training_set.json is missing: run `warpwise ranking train --default`"
    return ts


def test_repeated_measurements_of_one_pair_share_its_weight(shipped: dataset.TrainingSet) -> None:
    labelled = shipped.labelled
    w = pair_weights(labelled)
    twice = [*labelled, labelled[0]]
    w2 = pair_weights(twice)
    assert w2[0] == pytest.approx(w[0] / (1 + w[0]))
    assert w2[-1] == w2[0]
    assert sum(w2) == pytest.approx(sum(w))
    assert all(0 < x <= 1 for x in w)


def test_a_trained_model_carries_its_calibration_through_the_model_file(shipped: dataset.TrainingSet) -> None:
    model = train(shipped.examples, shipped.gpus, alphas=(10.0,), cs=(0.1,), calibration="platt")
    assert model.calibration is not None and model.trained_on["calibration"] == "platt"
    back = RankingModel.loads(model.dumps())
    e = shipped.labelled[0]
    assert back.predict(e.features).p_verified == pytest.approx(model.predict(e.features).p_verified, abs=1e-6)
    raw = model.uncalibrated().predict(e.features).p_verified
    assert model.predict(e.features).p_verified == pytest.approx(model.calibration.apply(raw))
    plain = dataclasses.replace(model, calibration=None)
    assert "calibration" not in RankingModel.loads(plain.dumps()).to_dict()
    with pytest.raises(ValueError, match="unknown calibration"):
        train(shipped.examples, shipped.gpus, calibration="beta")
