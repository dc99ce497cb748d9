"""The ranking model's predictions as search priors, when `warpwise.ranking` provides a model.

The ranking model (issue 9) predicts, for a (card, region) pair, the probability that verification succeeds and
the expected speedup (`predict_matches`, the card's matches in one kernel predicted together). The search uses it
only to order expansions: the expected share of time saved is `p * (1 - 1 / speedup)`, on the same scale as the
evidence estimate it replaces. Without a model that loads, the card priors come from the cards' evidence records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Predictor = Callable[[str, list[Any], Any], tuple[float, str] | None]


def predictor() -> Predictor | None:
    """Return a function (card id, matches, model) -> (expected share of time saved, source), or None."""
    from warpwise import ranking

    load = getattr(ranking, "load_default", None) or getattr(ranking, "default_model", None)
    if not callable(load):
        return None
    try:
        model = load()
    except Exception:  # No usable model: the evidence priors are used instead.
        log.info("no ranking model could be loaded; card priors come from evidence records")
        return None
    predict_matches = getattr(ranking, "predict_matches", None)
    if model is None or not callable(predict_matches):
        return None

    def predict(card_id: str, matches: list[Any], file_model: Any) -> tuple[float, str] | None:
        if not matches:
            return None
        found = predict_matches(file_model, matches, model=model)
        p = found.get((matches[0].function, card_id))
        if p is None:
            return None
        gain = float(p.probability) * (1.0 - 1.0 / max(float(p.speedup), 1e-6))
        return gain, f"the ranking model ({p.probability:.0%} likely to verify, {p.speedup:.2f}x expected)"

    return predict
