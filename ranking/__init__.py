"""The learned ranking: which card rewrites are likely to pay off on which code, learned from measured evidence.

Every verification warpwise has measured (card evidence, lineage steps, admission roundtrips, the result cache,
failures and "not faster" included) becomes a training example: the card, features of its region and kernel from
the analyzers, the GPU's measured peaks, and the outcome (`dataset`). A pair of regularised linear models predicts,
for a (card, kernel) pair, the chance that verification succeeds and the speedup with an 80% interval, and says
which features weigh most (`model`). Three places use it:

* the verification queue: `queue_priority` turns a prediction into the gate queue's priority (likely winners
  first; predicted losers get a negative priority, which the queue skips when its GPU budget is short),
* the editor: `predict_matches` gives each card item a prediction, so code actions are ordered by it
  (`editor_priority`: the queue priority, then the predicted speedup between fixes the queue ranks alike) and
  labelled "predicted 1.3-1.9x",
* the search: `expansion_priorities` orders the cards to try on a kernel.

Prediction needs only this package and a model file; training needs scikit-learn (the `ranking` extra).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from warpwise.ranking.features import GpuProfile, PairFeatures, kernel_features, pair_features
from warpwise.ranking.model import THRESHOLD, Prediction, RankingModel
from warpwise.ranking.store import DEFAULT_MODEL, data_dir, load_model, user_model_path, write_model

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MODEL",
    "THRESHOLD",
    "GpuProfile",
    "PairFeatures",
    "Prediction",
    "RankingModel",
    "data_dir",
    "editor_priority",
    "expansion_priorities",
    "expansion_priority",
    "load_default",
    "load_model",
    "predict_matches",
    "prediction_for",
    "predictions_for",
    "queue_priority",
    "rank_candidates",
    "user_model_path",
    "write_model",
]


def load_default() -> RankingModel | None:
    """Return the model in use (the user's trained one, else the package default); for `warpwise.search`."""
    return load_model()


def _gpu(model: RankingModel, gpu: str | None) -> GpuProfile | None:
    if gpu and gpu in model.gpus:
        return model.gpus[gpu]
    return model.gpus.get(model.default_gpu)


def predict_matches(
    file_model: Any,
    matches: Iterable[Any],
    *,
    model: RankingModel | None = None,
    gpu: str | None = None,
    extra: Mapping[str, Mapping[str, float]] | None = None,
    top: int = 3,
) -> dict[tuple[str, str], Prediction]:
    """Return a prediction per (kernel, card) for card matches (engine `Match`es) of one file.

    The card's matches in one kernel are one candidate (its fix applies to all of them), so they are predicted
    together. `gpu` names the GPU to predict for (the model's default GPU when unknown); `extra` gives, per
    kernel, features the source does not show (`k_registers`, `k_spills`, `k_block_log2`, `k_threads_log2`).
    Returns an empty mapping when no model loads.
    """
    m = model if model is not None else load_model()
    if m is None:
        return {}
    groups: dict[tuple[str, str], list[Any]] = {}
    for match in matches:
        if getattr(match, "has_rewrite", False):
            groups.setdefault((match.function, match.card_id), []).append(match)
    profile = _gpu(m, gpu)
    out: dict[tuple[str, str], Prediction] = {}
    kernels: dict[str, dict[str, float]] = {}
    for (kernel, card), ms in groups.items():
        fn = file_model.function(kernel)
        if fn is None or not fn.is_kernel:
            continue
        try:
            if kernel not in kernels:
                kernels[kernel] = kernel_features(file_model, fn, profile, (extra or {}).get(kernel))
            feats = pair_features(file_model, fn, ms, profile, kernel=kernels[kernel])
            out[(kernel, card)] = m.predict(feats, top=top)
        except Exception:  # One pair that cannot be predicted is logged and left unranked.
            log.exception("ranking: no prediction for %s in %s", card, kernel)
    return out


_cache_lock = threading.Lock()
_cache: OrderedDict[tuple[Hashable, Hashable, str], dict[tuple[str, str], Prediction]] = OrderedDict()
_CACHE_SIZE = 32


def predictions_for(
    key: Hashable, file_model: Any, matches: Iterable[Any], gpu: str | None = None
) -> dict[tuple[str, str], Prediction]:
    """Return `predict_matches` with the model in use, remembered under `key` (say, a document's content hash).

    For the editor: code actions, the quiet default and the verification queue ask for the same version's
    predictions; they are computed once per version and model, without their reasons (only a hover shows those:
    `prediction_for`). Never raises: a failure is logged and gives no predictions.
    """
    return _remembered(key, "all", file_model, matches, gpu, 0)


def prediction_for(
    key: Hashable, file_model: Any, matches: Iterable[Any], pair: tuple[str, str], gpu: str | None = None
) -> Prediction | None:
    """Return one (kernel, card) pair's prediction with its reasons (what a hover shows), remembered under `key`.

    The same numbers as `predictions_for`'s for the pair (the pair's matches are predicted together either way).
    """
    kernel, card = pair
    ms = [m for m in matches if getattr(m, "function", None) == kernel and getattr(m, "card_id", None) == card]
    return _remembered(key, pair, file_model, ms, gpu, 3).get(pair)


def _remembered(
    key: Hashable, what: Hashable, file_model: Any, matches: Iterable[Any], gpu: str | None, top: int
) -> dict[tuple[str, str], Prediction]:
    try:
        model = load_model()
        if model is None:
            return {}
        ck = (key, what, f"{model.version}:{gpu}")
        with _cache_lock:
            hit = _cache.get(ck)
            if hit is not None:
                _cache.move_to_end(ck)
                return hit
        preds = predict_matches(file_model, matches, model=model, gpu=gpu, top=top)
    except Exception:  # The ranking only orders and labels; it never stops the editor.
        log.exception("ranking: no predictions for %r", key)
        return {}
    with _cache_lock:
        _cache[ck] = preds
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return preds


def queue_priority(prediction: Prediction | None) -> int:
    """Return the verification queue priority of a candidate (higher runs first).

    Predicted winners (P(verified) >= THRESHOLD) get a positive priority ordered by expected gain; an unranked
    candidate gets 0; predicted losers get a negative one, the least likely last. The gate's queue skips negative
    priorities when its GPU budget is short (`VerificationQueue(skip_below=0)`).
    """
    if prediction is None:
        return 0
    if prediction.will_be_faster:
        return 1 + round(1000 * prediction.score)
    return -1 - round(100 * (THRESHOLD - prediction.p_verified))


def editor_priority(prediction: Prediction | None) -> tuple[int, float]:
    """Return the key the editor orders unverified quick fixes by (higher first): the queue priority, then the
    predicted speedup.

    The queue priority of a predicted loser reads only its chance to verify, which calibration gives several cards
    alike (a flat stretch of the calibration curve); between those, the fix predicted to gain more comes first
    rather than the one that happens to sit earlier in the file."""
    if prediction is None:
        return (0, 1.0)
    return (queue_priority(prediction), float(prediction.speedup))


def expansion_priorities(
    text: str | bytes,
    path: str = "<memory>",
    kernel: str | None = None,
    *,
    model: RankingModel | None = None,
    gpu: str | None = None,
) -> list[tuple[str, str, float, Prediction]]:
    """Return (kernel, card, priority, prediction) for every card with a rewrite in a source, best first.

    For the search: the priority is the expected gain `Prediction.score` (P(verified) times the log of the upper
    speedup), so expanding in this order tries likely, large wins first.
    """
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import match_file

    fm = analyze_text(text, path)
    matches = [mt for mt in match_file(fm) if kernel is None or mt.function == kernel]
    preds = predict_matches(fm, matches, model=model, gpu=gpu)
    ranked = [(k, c, p.score, p) for (k, c), p in preds.items()]
    ranked.sort(key=lambda r: (-r[2], r[0], r[1]))
    return ranked


def expansion_priority(
    text: str | bytes, kernel: str, card: str, path: str = "<memory>", *, gpu: str | None = None
) -> float | None:
    """Return the search priority of applying one card to one kernel (None when the card does not bind there)."""
    for k, c, score, _ in expansion_priorities(text, path, kernel, gpu=gpu):
        if (k, c) == (kernel, card):
            return score
    return None


def rank_candidates(kernel: Any, text: str, cands: list[Any], notes: list[str]) -> list[Any]:
    """Return card candidates in the editor's order: ranked by predicted gain when a model loads, else as matched."""
    try:
        from warpwise.analyzers.build import analyze_text
        from warpwise.skills.engine import match_file

        model = analyze_text(text, str(kernel.path))
        preds = predict_matches(model, [m for m in match_file(model) if m.function == kernel.kernel])
    except Exception as exc:  # The ranking only orders; without it the engine's order stands.
        if "engine order" not in " ".join(notes):
            notes.append(f"proposals in the engine order (no ranking: {type(exc).__name__})")
        return cands
    if not preds:
        return cands
    if "ranked" not in " ".join(notes):
        notes.append("proposals ranked by the learned ranking's expected gain, as the editor orders them")
    score = {card: p.score for (k, card), p in preds.items() if k == kernel.kernel}
    return sorted(cands, key=lambda c: (c.card not in score, -score.get(c.card, 0.0)))
