"""The ranking model: the chance that a card's rewrite verifies on a kernel, and the speedup to expect.

Two regularised linear models over the same features (see `warpwise.ranking.features`):

* an L2-penalised logistic regression for P(verified), trained on every labelled outcome (verified against not
  faster, incorrect, failed to build or launch), and
* an L2-penalised Huber regression of log(speedup), trained on the measured outcomes (verified and not faster);
  Huber's loss because the outcomes are heavy-tailed (most rewrites measure 1.00x, a few 0.12x or 6x).

Each (kernel, card, GPU, code facts) pair weighs 1 in total however often it was measured (`pair_weights`), and
P(verified) is calibrated on the classifier's leave-one-operator-out probabilities (`Calibration`,
`choose_calibration`).

The card enters through its own record, shrunk towards the overall one (its verification rate and mean log
speedup, computed for each training example without that example's operator), the anchor kind as one-hot columns,
and the region and kernel numbers standardised after missing values are filled with the training median. The
penalties are chosen by leave-one-operator-out cross-validation inside the training set, and the speedup interval
comes from the out-of-fold residuals of that same cross-validation (per card when the card has enough of them, else
over all cards). Why linear models: with about 80 labelled rows from 19 operators on
one GPU, anything with more freedom fits the noise; a linear model's prediction is also exactly the sum of its
features' contributions, which is what the explanation prints.

Training needs scikit-learn (the `ranking` extra); prediction does not: a trained model is a small JSON document
(coefficients, medians, scales, residual quantiles) evaluated in plain Python, so the editor loads it in
microseconds and a model file is readable and diffable.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from warpwise.ranking.dataset import Example
from warpwise.ranking.features import WORDS, GpuProfile, PairFeatures

FORMAT = "warpwise-ranking/1"
# "Will be faster" means P(verified) at or above this; the queue runs these first and may skip the rest.
THRESHOLD = 0.5
# The interval is the 10th to 90th percentile of held-out residuals (an 80% interval).
QUANTILES = (0.1, 0.9)
# A card needs this many held-out residuals before it gets an interval of its own.
MIN_CARD_RESIDUALS = 4
ALPHAS = (1.0, 10.0, 30.0)
# Residuals beyond this many scale units count linearly, so one 6x or 0.1x outcome does not swing the fit.
HUBER_EPSILON = 1.35
CS = (0.01, 0.03, 0.1, 0.3, 1.0)
DIGITS = 6
# How many pseudo-observations of the overall rate a card's own record is shrunk towards.
PRIOR_WEIGHT = 2.0
# The numbers the model reads (the training set keeps every feature; these are the ones that held up on held-out
# operators, see docs/ranking.md). The card's own record enters as two shrunk priors, `card_rate` and
# `card_log_speedup`, computed without the example's own operator while training.
MODEL_FEATURES = (
    "r_frac_holds",
    "r_unknown_soundness",
    "r_unknown_benefit",
    "r_benefit_holds",
    "r_in_loop",
    "r_safe",
    "k_loops",
    "k_thread_loop",
    "k_frac_strided",
    "k_frac_uniform",
    "k_balance_log2",
    "k_traffic_factor_log2",
    "k_untiled_loop_reads",
    "k_threads_log2",
    "k_syncs",
    "k_atomics",
    "k_min_width",
    "k_dtype_f16",
    "g_copy_tbps",
    "g_fp32_tflops",
)
PRIORS = ("card_rate", "card_log_speedup")


@dataclass(frozen=True, slots=True)
class Reason:
    """One feature's share in a prediction, in words."""

    feature: str
    text: str
    effect: float  # in log-odds of verification (positive raises the chance)

    def to_dict(self) -> dict[str, Any]:
        """Return JSON data."""
        return {"feature": self.feature, "text": self.text, "effect": round(self.effect, 3)}


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the model expects of one (card, region) pair."""

    card: str
    p_verified: float
    speedup: float
    low: float
    high: float
    reasons: tuple[Reason, ...] = ()
    model_version: str = ""

    @property
    def probability(self) -> float:
        """Return P(verified) (the name `warpwise.search.ranking` reads)."""
        return self.p_verified

    @property
    def will_be_faster(self) -> bool:
        """Return whether the prediction clears the queue's threshold."""
        return self.p_verified >= THRESHOLD

    @property
    def label(self) -> str:
        """Return the short label shown in the editor, such as `predicted 1.3-1.9x`."""
        return f"predicted {_fmt(self.low)}-{_fmt(self.high)}x"

    @property
    def score(self) -> float:
        """Return the expected gain used to order work: P(verified) times the log of the upper speedup."""
        return self.p_verified * math.log(max(self.high, 1.0)) + 1e-3 * self.p_verified

    def explain(self) -> str:
        """Return the prediction and its top reasons as sentences."""
        head = (
            f"`{self.card}`: {100 * self.p_verified:.0f}% chance to verify; expected {self.speedup:.2f}x "
            f"(80% interval {self.low:.2f}x..{self.high:.2f}x)"
        )
        return "\n".join([head, *(f"  - {r.text}" for r in self.reasons)])

    def to_dict(self) -> dict[str, Any]:
        """Return JSON data."""
        return {
            "card": self.card,
            "p_verified": round(self.p_verified, 4),
            "speedup": round(self.speedup, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "label": self.label,
            "reasons": [r.to_dict() for r in self.reasons],
            "model_version": self.model_version,
        }


def _fmt(x: float) -> str:
    return f"{x:.2f}" if x < 1.1 else f"{x:.1f}"


def _r(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


# How a model's P(verified) is calibrated: "isotonic" (a monotone step map) or "platt" (a logistic map of the
# log-odds), fitted on the classifier's out-of-fold probabilities; "none" keeps the classifier's own; "auto" takes
# whichever of the three scores best cross-fitted over the training operators (`choose_calibration`).
CALIBRATIONS = ("auto", "isotonic", "platt", "none")
# A calibrated probability stays inside these bounds: a stretch of training evidence that all verified (or all
# failed) is a few dozen examples, not certainty.
CALIBRATION_BOUNDS = (0.02, 0.98)


@dataclass(frozen=True, slots=True)
class Calibration:
    """A monotone map from the classifier's probability to a calibrated one, fitted on out-of-sample predictions.

    `isotonic`: knots `x` -> `y` (scikit-learn's isotonic regression), interpolated linearly and held constant
    beyond the end knots; `platt`: `sigmoid(a * logit(p) + b)`. Both are plain numbers, evaluated without
    scikit-learn.
    """

    method: str
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    a: float = 1.0
    b: float = 0.0
    fitted_on: int = 0

    def apply(self, p: float) -> float:
        """Return the calibrated probability of a classifier probability `p`."""
        lo, hi = CALIBRATION_BOUNDS
        if self.method == "platt":
            q = min(max(p, 1e-6), 1 - 1e-6)
            z = self.a * math.log(q / (1 - q)) + self.b
            out = 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))
        elif self.method == "isotonic" and self.x:
            if p <= self.x[0]:
                out = self.y[0]
            elif p >= self.x[-1]:
                out = self.y[-1]
            else:
                i = bisect.bisect_right(self.x, p)
                x0, x1, y0, y1 = self.x[i - 1], self.x[i], self.y[i - 1], self.y[i]
                out = y0 + (y1 - y0) * (p - x0) / (x1 - x0) if x1 > x0 else y1
        else:
            return p
        return min(max(out, lo), hi)

    def to_dict(self) -> dict[str, Any]:
        """Return JSON data."""
        d: dict[str, Any] = {"method": self.method, "fitted_on": self.fitted_on}
        if self.method == "isotonic":
            d.update(x=list(self.x), y=list(self.y))
        else:
            d.update(a=self.a, b=self.b)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Calibration:
        """Return a calibration from JSON data (ValueError for an unknown method or unordered knots)."""
        method = str(d.get("method", ""))
        if method not in ("isotonic", "platt"):
            raise ValueError(f"unknown calibration method {method!r}: write isotonic or platt")
        x, y = tuple(float(v) for v in d.get("x", ())), tuple(float(v) for v in d.get("y", ()))
        if len(x) != len(y) or any(b < a for a, b in itertools.pairwise(x)):
            raise ValueError("the isotonic calibration needs as many x as y knots, x in increasing order")
        return cls(method, x, y, float(d.get("a", 1.0)), float(d.get("b", 0.0)), int(d.get("fitted_on", 0)))


@dataclass
class RankingModel:
    """A trained model as plain numbers (see the module docstring)."""

    numeric: list[str]
    medians: list[float]
    means: list[float]
    scales: list[float]
    anchors: list[str]
    clf_intercept: float
    clf_coef: list[float]
    reg_intercept: float
    reg_coef: list[float]
    alpha: float
    c: float
    residuals: list[float]
    card_residuals: dict[str, list[float]]
    card_stats: dict[str, dict[str, float]]
    base_rate: float
    base_log_speedup: float
    gpus: dict[str, GpuProfile]
    default_gpu: str
    trained_on: dict[str, Any] = field(default_factory=dict)
    version: str = ""
    calibration: Calibration | None = None

    # -- prediction --------------------------------------------------------------------------------------------

    def columns(self) -> list[str]:
        """Return the names of the model's columns: the card priors, the numbers, then the anchor one-hots."""
        return [*PRIORS, *self.numeric, *(f"anchor={a}" for a in self.anchors)]

    def prior(self, card: str) -> tuple[float, float]:
        """Return the card's shrunk verification rate and mean log speedup from the training evidence."""
        st = self.card_stats.get(card, {})
        return _prior(st, self.base_rate, self.base_log_speedup)

    def design(self, f: PairFeatures, prior: tuple[float, float] | None = None) -> list[float]:
        """Return the standardised row of one pair (missing numbers filled with the training median)."""
        rate, logsp = prior if prior is not None else self.prior(f.card)
        values = [rate, logsp, *(f.numeric.get(n, math.nan) for n in self.numeric)]
        row = []
        for v, med, mu, sd in zip(values, self.medians, self.means, self.scales, strict=True):
            if v is None or math.isnan(v):
                v = med
            row.append((v - mu) / sd)
        row += [1.0 if f.anchor == a else 0.0 for a in self.anchors]
        return row

    def predict(self, f: PairFeatures, top: int = 3) -> Prediction:
        """Return the prediction for one pair, with its `top` reasons."""
        x = self.design(f)
        logit = self.clf_intercept + sum(w * v for w, v in zip(self.clf_coef, x, strict=True))
        p = 1.0 / (1.0 + math.exp(-max(min(logit, 40.0), -40.0)))
        if self.calibration is not None:
            p = self.calibration.apply(p)
        mu = self.reg_intercept + sum(w * v for w, v in zip(self.reg_coef, x, strict=True))
        q = self.card_residuals.get(f.card, self.residuals)
        return Prediction(
            f.card,
            p,
            math.exp(mu),
            # A card whose held-out residuals all lie on one side still gets an interval around its prediction.
            math.exp(mu + min(q[0], 0.0)),
            math.exp(mu + max(q[1], 0.0)),
            tuple(self._reasons(f, x, top)) if top else (),
            self.version,
        )

    def uncalibrated(self) -> RankingModel:
        """Return the same model without its calibration (the classifier's own probabilities)."""
        return replace(self, calibration=None)

    def predict_match(self, file_model: Any, match: Any, gpu: str | None = None) -> Prediction | None:
        """Return the prediction for one engine `Match` in a file model (None when it is not in a kernel)."""
        from warpwise.ranking.features import pair_features

        fn = file_model.function(match.function)
        if fn is None or not fn.is_kernel:
            return None
        profile = self.gpus.get(gpu or "") or self.gpus.get(self.default_gpu)
        return self.predict(pair_features(file_model, fn, [match], profile))

    def _reasons(self, f: PairFeatures, x: Sequence[float], top: int) -> list[Reason]:
        out: list[Reason] = []
        for name, w, v in zip(self.columns(), self.clf_coef, x, strict=True):
            effect = w * v
            if abs(effect) < 1e-3:
                continue
            out.append(Reason(name, self._words(name, f, effect), effect))
        out.sort(key=lambda r: (-abs(r.effect), r.feature))
        return out[:top]

    def _words(self, name: str, f: PairFeatures, effect: float) -> str:
        verb = "raises" if effect > 0 else "lowers"
        if name in PRIORS:
            st = self.card_stats.get(f.card)
            if not st:
                return f"`{f.card}` has no measured evidence yet; taken as an average card ({verb} the chance)"
            n, k = int(st.get("measured", 0)), int(st.get("verified", 0))
            med = st.get("median_speedup")
            tail = f", median {med:.2f}x" if med else ""
            return f"`{f.card}` verified on {k} of {n} kernels it was measured on{tail} ({verb} the chance)"
        if name.startswith("anchor="):
            article = "an" if f.anchor[:1] in "aeiou" else "a"
            return f"cards that bind to {article} {f.anchor} region ({verb} the chance)"
        raw = f.numeric.get(name, math.nan)
        value = "unknown, taken as typical" if raw is None or math.isnan(raw) else _value(name, raw)
        return f"{WORDS.get(name, name)}: {value} ({verb} the chance)"

    # -- persistence -------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Return the model as JSON data."""
        return {
            "format": FORMAT,
            "version": self.version,
            "trained_on": self.trained_on,
            "threshold": THRESHOLD,
            "numeric": self.numeric,
            "medians": self.medians,
            "means": self.means,
            "scales": self.scales,
            "anchors": self.anchors,
            "classifier": {"intercept": self.clf_intercept, "coef": self.clf_coef, "C": self.c},
            "regressor": {"intercept": self.reg_intercept, "coef": self.reg_coef, "alpha": self.alpha},
            "residuals": {"all": self.residuals, "by_card": self.card_residuals},
            "card_stats": self.card_stats,
            "base": {"rate": self.base_rate, "log_speedup": self.base_log_speedup},
            "gpus": {k: g.to_dict() for k, g in sorted(self.gpus.items())},
            "default_gpu": self.default_gpu,
            **({"calibration": self.calibration.to_dict()} if self.calibration is not None else {}),
        }

    def dumps(self) -> str:
        """Return the model file's text."""
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RankingModel:
        """Return a model from JSON data (ValueError when it is not a model of this format)."""
        if d.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} model (format {d.get('format')!r})")
        try:
            return cls(
                numeric=list(d["numeric"]),
                medians=[float(v) for v in d["medians"]],
                means=[float(v) for v in d["means"]],
                scales=[float(v) for v in d["scales"]],
                anchors=list(d["anchors"]),
                clf_intercept=float(d["classifier"]["intercept"]),
                clf_coef=[float(v) for v in d["classifier"]["coef"]],
                reg_intercept=float(d["regressor"]["intercept"]),
                reg_coef=[float(v) for v in d["regressor"]["coef"]],
                alpha=float(d["regressor"]["alpha"]),
                c=float(d["classifier"]["C"]),
                residuals=[float(v) for v in d["residuals"]["all"]],
                card_residuals={k: [float(x) for x in v] for k, v in d["residuals"]["by_card"].items()},
                card_stats={k: dict(v) for k, v in d["card_stats"].items()},
                base_rate=float(d["base"]["rate"]),
                base_log_speedup=float(d["base"]["log_speedup"]),
                gpus={k: GpuProfile.from_dict(v) for k, v in d["gpus"].items()},
                default_gpu=str(d["default_gpu"]),
                trained_on=dict(d.get("trained_on") or {}),
                version=str(d.get("version", "")),
                calibration=Calibration.from_dict(d["calibration"]) if d.get("calibration") else None,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"the model file is incomplete: {type(exc).__name__}: {exc}") from exc

    @classmethod
    def loads(cls, text: str) -> RankingModel:
        """Return a model from a model file's text."""
        return cls.from_dict(json.loads(text))


def _prior(st: Mapping[str, float], base_rate: float, base_log: float) -> tuple[float, float]:
    """Return a card's verification rate and mean log speedup, shrunk towards the overall ones."""
    n, k = float(st.get("measured", 0)), float(st.get("verified", 0))
    m, s = float(st.get("with_speedup", 0)), float(st.get("sum_log_speedup", 0.0))
    return (k + PRIOR_WEIGHT * base_rate) / (n + PRIOR_WEIGHT), (s + PRIOR_WEIGHT * base_log) / (m + PRIOR_WEIGHT)


def _card_stats(examples: Sequence[Example]) -> tuple[dict[str, dict[str, float]], float, float]:
    """Return per-card evidence counts and the overall verification rate and mean log speedup."""
    stats: dict[str, dict[str, float]] = {}
    logs: list[float] = []
    for e in examples:
        st = stats.setdefault(e.card, {"measured": 0, "verified": 0, "with_speedup": 0, "sum_log_speedup": 0.0})
        st["measured"] += 1
        st["verified"] += _label(e)
        if e.outcome.measured and e.outcome.speedup:
            lg = math.log(e.outcome.speedup)
            st["with_speedup"] += 1
            st["sum_log_speedup"] += lg
            logs.append(lg)
    for card, st in stats.items():
        sp = sorted(
            math.exp(math.log(e.outcome.speedup))
            for e in examples
            if e.card == card and e.outcome.measured and e.outcome.speedup
        )
        st["median_speedup"] = _r(_quantile(sp, 0.5)) if sp else 0.0
        st["sum_log_speedup"] = _r(st["sum_log_speedup"])
    rate = sum(_label(e) for e in examples) / len(examples) if examples else 0.5
    return dict(sorted(stats.items())), rate, (sum(logs) / len(logs) if logs else 0.0)


def _value(name: str, v: float) -> str:
    if name == "k_shared_log2":
        return f"{2**v - 1:.0f} bytes"
    if name.endswith("_log2"):
        return f"{2**v:.3g}"
    if name.startswith(("k_frac", "r_frac", "k_restrict")):
        return f"{100 * v:.0f}%"
    if name.startswith(("k_dtype", "k_vector", "k_thread_loop", "k_const_trip", "r_in_loop", "r_safe")):
        return "yes" if v >= 0.5 else "no"
    return f"{v:.3g}"


# -- training ----------------------------------------------------------------------------------------------------


def _label(e: Example) -> float:
    return 1.0 if e.outcome.status == "verified" else 0.0


def _pair_key(e: Example) -> tuple[str, ...]:
    return (e.kernel, e.card, e.gpu, json.dumps(e.features.to_dict(), sort_keys=True))


def pair_weights(examples: Sequence[Example]) -> list[float]:
    """Return sample weights under which every (kernel, card, GPU, code facts) pair weighs 1 in total.

    The committed evidence measures some pairs once and others six times (the same naive-suite rewrite timed by
    each card-evidence and admission run, an expert step and our rewrite of the same version k). Counted per
    measurement, a pair measured often outweighs the rest: one 6x histogram rewrite timed six times taught the
    regressor that safe fixes are large wins. Repeated measurements of one pair are kept (their spread is
    evidence), each with its share of the pair's weight.
    """
    counts: dict[tuple[str, ...], int] = {}
    keys = [_pair_key(e) for e in examples]
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    return [1.0 / counts[k] for k in keys]


def fit_calibration(
    probabilities: Sequence[float], labels: Sequence[float], weights: Sequence[float], method: str
) -> Calibration | None:
    """Return the calibration of `method` fitted on out-of-sample probabilities and their labels (None for none)."""
    import numpy as np

    if method not in ("isotonic", "platt", "none"):
        raise ValueError(f"unknown calibration {method!r}: write isotonic, platt or none")
    keep = [i for i, p in enumerate(probabilities) if not math.isnan(p)]
    ys = [labels[i] for i in keep]
    # Guard: a calibration needs both outcomes among the out-of-sample predictions.
    if method == "none" or not keep or len(set(ys)) < 2:
        return None
    ps = np.array([probabilities[i] for i in keep])
    w = np.array([weights[i] for i in keep])
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        lo, hi = CALIBRATION_BOUNDS
        iso = IsotonicRegression(y_min=lo, y_max=hi, out_of_bounds="clip").fit(ps, ys, sample_weight=w)
        xs = tuple(_r(float(v)) for v in iso.X_thresholds_)
        ys_ = tuple(_r(float(v)) for v in iso.y_thresholds_)
        return Calibration("isotonic", xs, ys_, fitted_on=len(keep))
    from sklearn.linear_model import LogisticRegression

    q = np.clip(ps, 1e-6, 1 - 1e-6)
    z = np.log(q / (1 - q)).reshape(-1, 1)
    lr = LogisticRegression(C=1e6, max_iter=1000, tol=1e-8).fit(z, ys, sample_weight=w)
    return Calibration("platt", a=_r(float(lr.coef_[0][0])), b=_r(float(lr.intercept_[0])), fitted_on=len(keep))


def choose_calibration(
    probabilities: Sequence[float],
    labels: Sequence[float],
    weights: Sequence[float],
    groups: Sequence[str],
    method: str,
) -> tuple[Calibration | None, str, dict[str, float]]:
    """Return the calibration of `method` fitted on out-of-sample probabilities, the method used, and the scores.

    With `auto`, the method (none, platt or isotonic) is the one whose calibrated probabilities have the lowest
    weighted Brier score when cross-fitted over `groups`: each group's probabilities are mapped by a calibration
    fitted on the other groups' only. The choice reads nothing but these probabilities.
    """
    if method != "auto":
        return fit_calibration(probabilities, labels, weights, method), method, {}
    scores: dict[str, float] = {}
    for m in ("none", "platt", "isotonic"):
        total = 0.0
        for g in sorted(set(groups)):
            rest = [i for i, h in enumerate(groups) if h != g]
            cal = fit_calibration(
                [probabilities[i] for i in rest], [labels[i] for i in rest], [weights[i] for i in rest], m
            )
            for i, h in enumerate(groups):
                if h == g and not math.isnan(probabilities[i]):
                    q = cal.apply(probabilities[i]) if cal is not None else probabilities[i]
                    total += weights[i] * (q - labels[i]) ** 2
        scores[m] = _r(total / sum(weights))
    # Ties go to the simpler map.
    best = min(scores, key=lambda m: (round(scores[m], 9), ("none", "platt", "isotonic").index(m)))
    return fit_calibration(probabilities, labels, weights, best), best, scores


def calibration_for(
    examples: Sequence[Example], c: float, gpus: Mapping[str, GpuProfile], method: str
) -> tuple[Calibration | None, str, dict[str, float]]:
    """Return a calibration fitted on the classifier's leave-one-operator-out probabilities over `examples`
    (with the method used and, for `auto`, its scores; see `choose_calibration`).

    Every probability it is fitted on comes from a classifier that never saw that example's operator, so the map
    corrects the confidence the model has on code it was not trained on; nothing outside `examples` is read.
    """
    if method == "none" or len({e.operator for e in examples}) < 3:
        return None, "none", {}
    ho = held_out(examples, ALPHAS[0], c, gpus, ("clf",))
    ps, ys = [p for p, _ in ho], [_label(e) for e in examples]
    return choose_calibration(ps, ys, pair_weights(examples), [e.operator for e in examples], method)


def _training_priors(examples: Sequence[Example]) -> list[tuple[float, float]]:
    """Return each example's card priors computed from the other operators only (no example sees itself)."""
    out = []
    by_op: dict[str, tuple[dict[str, dict[str, float]], float, float]] = {}
    for e in examples:
        if e.operator not in by_op:
            by_op[e.operator] = _card_stats([o for o in examples if o.operator != e.operator])
        stats, rate, logsp = by_op[e.operator]
        out.append(_prior(stats.get(e.card, {}), rate, logsp))
    return out


def _fit_once(
    examples: Sequence[Example],
    alpha: float,
    c: float,
    gpus: Mapping[str, GpuProfile],
    parts: tuple[str, ...] = ("clf", "reg"),
    weights: Sequence[float] | None = None,
) -> RankingModel:
    """Fit the classifier and the regressor (or the `parts` named) with fixed penalties (no intervals yet).

    Each example's sample weight is its `pair_weights` share, times its entry of `weights` when given.
    """
    import numpy as np
    from sklearn.linear_model import HuberRegressor, LogisticRegression

    numeric = list(MODEL_FEATURES)
    anchors = sorted({e.features.anchor for e in examples})
    stats, rate, logsp = _card_stats(examples)
    priors = _training_priors(examples)
    raw = np.array(
        [
            [*pr, *(e.features.numeric.get(n, math.nan) for n in numeric)]
            for e, pr in zip(examples, priors, strict=True)
        ],
        dtype=float,
    )
    with np.errstate(all="ignore"):
        med = np.nanmedian(raw, axis=0)
    med = np.where(np.isnan(med), 0.0, med)
    filled = np.where(np.isnan(raw), med, raw)
    mu, sd = filled.mean(axis=0), filled.std(axis=0)
    sd = np.where(sd < 1e-9, 1.0, sd)
    model = RankingModel(
        numeric=numeric,
        medians=[float(v) for v in med],
        means=[float(v) for v in mu],
        scales=[float(v) for v in sd],
        anchors=anchors,
        clf_intercept=0.0,
        clf_coef=[],
        reg_intercept=0.0,
        reg_coef=[],
        alpha=alpha,
        c=c,
        residuals=[0.0, 0.0],
        card_residuals={},
        card_stats=stats,
        base_rate=rate,
        base_log_speedup=logsp,
        gpus=dict(gpus),
        default_gpu=next(iter(sorted(gpus)), ""),
    )
    x = np.array([model.design(e.features, pr) for e, pr in zip(examples, priors, strict=True)], dtype=float)
    y = np.array([_label(e) for e in examples])
    w = np.asarray(pair_weights(examples), dtype=float)
    if weights is not None:
        w = w * np.asarray(weights, dtype=float)
    model.clf_coef, model.reg_coef = [0.0] * x.shape[1], [0.0] * x.shape[1]
    if "clf" in parts and 0 < y.sum() < len(y):
        clf = LogisticRegression(C=c, max_iter=1000, tol=1e-6)
        clf.fit(x, y, sample_weight=w)
        model.clf_intercept, model.clf_coef = float(clf.intercept_[0]), [float(v) for v in clf.coef_[0]]
    elif "clf" in parts:
        r = min(max(float(y.mean()) if len(y) else 0.5, 0.01), 0.99)
        model.clf_intercept = math.log(r / (1 - r))
    measured = [i for i, e in enumerate(examples) if e.outcome.measured]
    if "reg" in parts and measured:
        ys = np.array([math.log(examples[i].outcome.speedup or 1.0) for i in measured])
        reg = HuberRegressor(alpha=alpha, epsilon=HUBER_EPSILON, max_iter=1000, tol=1e-6)
        reg.fit(x[measured], ys, sample_weight=w[measured])
        model.reg_intercept, model.reg_coef = float(reg.intercept_), [float(v) for v in reg.coef_]
    return model


def held_out(
    examples: Sequence[Example],
    alpha: float,
    c: float,
    gpus: Mapping[str, GpuProfile],
    parts: tuple[str, ...] = ("clf", "reg"),
) -> list[tuple[float, float]]:
    """Return (P(verified), log speedup) predicted for each example by a model trained without its operator."""
    out: list[tuple[float, float]] = [(math.nan, math.nan)] * len(examples)
    for op in sorted({e.operator for e in examples}):
        train = [e for e in examples if e.operator != op]
        if not train:
            continue
        m = _fit_once(train, alpha, c, gpus, parts)
        for i, e in enumerate(examples):
            if e.operator == op:
                p = m.predict(e.features, top=0)
                out[i] = (p.p_verified, math.log(p.speedup))
    return out


def _log_loss(ps: Sequence[float], ys: Sequence[float], ws: Sequence[float]) -> float:
    eps = 1e-6
    return -sum(
        w * (y * math.log(max(p, eps)) + (1 - y) * math.log(max(1 - p, eps)))
        for p, y, w in zip(ps, ys, ws, strict=True)
    )


def _quantile(values: Sequence[float], q: float) -> float:
    data = sorted(values)
    if not data:
        return 0.0
    k = (len(data) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def train(
    examples: Sequence[Example],
    gpus: Mapping[str, GpuProfile],
    *,
    alphas: Sequence[float] = ALPHAS,
    cs: Sequence[float] = CS,
    sources: Mapping[str, int] | None = None,
    calibration: str = "auto",
) -> RankingModel:
    """Train the model on labelled examples; penalties, intervals and the calibration come from
    leave-one-operator-out."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"unknown calibration {calibration!r}: write one of {', '.join(CALIBRATIONS)}")
    labelled = sorted(
        (e for e in examples if e.outcome.labelled), key=lambda e: (e.file, e.kernel, e.card, e.gpu, e.source)
    )
    if not labelled:
        raise ValueError("no labelled examples: the training set has no verified, not-faster or failed outcome")
    measured_idx = [i for i, e in enumerate(labelled) if e.outcome.measured]
    ys = [_label(e) for e in labelled]
    pw = pair_weights(labelled)
    best_c, best_a = cs[0], alphas[0]
    held_p: dict[float, list[float]] = {}
    if len({e.operator for e in labelled}) >= 3:
        held_p = {c: [p for p, _ in held_out(labelled, alphas[0], c, gpus, ("clf",))] for c in cs}
        scores_c = {c: _log_loss(held_p[c], ys, pw) for c in cs}
        best_c = min(cs, key=lambda c: (round(scores_c[c], 9), c))
        scores_a = {}
        for a in alphas:
            ho = held_out(labelled, a, best_c, gpus, ("reg",))
            scores_a[a] = sum(
                pw[i] * (ho[i][1] - math.log(labelled[i].outcome.speedup or 1.0)) ** 2 for i in measured_idx
            )
        best_a = min(alphas, key=lambda a: (round(scores_a[a], 9), a))
    model = _fit_once(labelled, best_a, best_c, gpus)
    ho = held_out(labelled, best_a, best_c, gpus, ("reg",)) if len({e.operator for e in labelled}) >= 2 else []
    residuals: dict[str, list[float]] = {}
    everything: list[float] = []
    for i in measured_idx:
        if not ho or math.isnan(ho[i][1]):
            continue
        r = math.log(labelled[i].outcome.speedup or 1.0) - ho[i][1]
        residuals.setdefault(labelled[i].card, []).append(r)
        everything.append(r)
    model.residuals = [_r(_quantile(everything, QUANTILES[0])), _r(_quantile(everything, QUANTILES[1]))]
    model.card_residuals = {
        card: [_r(_quantile(rs, QUANTILES[0])), _r(_quantile(rs, QUANTILES[1]))]
        for card, rs in sorted(residuals.items())
        if len(rs) >= MIN_CARD_RESIDUALS
    }
    chosen, cal_scores = "none", dict[str, float]()
    if best_c in held_p and calibration != "none":
        # The same leave-one-operator-out probabilities that chose C: each from a classifier without its operator.
        groups = [e.operator for e in labelled]
        model.calibration, chosen, cal_scores = choose_calibration(held_p[best_c], ys, pw, groups, calibration)
    _round(model)
    model.trained_on = {
        "examples": len(labelled),
        "measured": len(measured_idx),
        "verified": int(sum(ys)),
        "operators": len({e.operator for e in labelled}),
        "cards": len(model.card_stats),
        "gpus": sorted({e.gpu for e in labelled}),
        "sources": dict(sorted((sources or {}).items())),
        "pairs": len({_pair_key(e) for e in labelled}),
        "calibration": chosen if model.calibration is not None else "none",
        **({"calibration_brier": cal_scores} if cal_scores else {}),
    }
    model.version = _digest(model)
    return model


def _round(model: RankingModel) -> None:
    """Round every number to DIGITS significant digits, so that retraining reproduces the file."""
    model.medians = [_r(v) for v in model.medians]
    model.means = [_r(v) for v in model.means]
    model.scales = [_r(v) for v in model.scales]
    model.clf_intercept = _r(model.clf_intercept)
    model.clf_coef = [_r(v) for v in model.clf_coef]
    model.reg_intercept = _r(model.reg_intercept)
    model.reg_coef = [_r(v) for v in model.reg_coef]
    model.base_rate = _r(model.base_rate)
    model.base_log_speedup = _r(model.base_log_speedup)


def _digest(model: RankingModel) -> str:
    d = model.to_dict()
    d.pop("version", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]
