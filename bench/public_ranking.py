"""The ranking retrained with the public lineages' evidence, evaluated leave-one-repository-out (issue 21).

The training set is every committed evidence record (`warpwise.ranking.dataset.build`): our own suite and
lineages, plus the public lineages' records that `bench/public_steps.py --write` put on the cards (an expert's
step k -> k+1 on each card the mapping names, and our measured rewrites of version k), whose features of version
k's code are stored in `lineages/public/features.json`. For each public repository in turn, the model is trained
without that repository's examples and predicts them; every figure below is on repositories the model never saw.
Each fold is one fit with fixed penalties (alpha 10, C 0.1, the middle of the default grid) rather than penalties
chosen on the data, so that no choice sees the held-out repository (and a fold costs one fit on the shared CPU;
the prediction intervals `train` adds are not used here). Every fit weighs each (kernel, card, code facts) pair
once in total (`ranking.model.pair_weights`), however many times it was measured, as `train` does. P(faster) is
calibrated as `train` calibrates it (by default the method, none, Platt or isotonic, that scores best
cross-fitted over the fold's training operators), chosen and fitted inside each fold on the classifier's
leave-one-operator-out probabilities over that fold's training examples: the held-out repository never enters the
calibration. Reported over the held-out public examples:

* Spearman between predicted and measured speedup (target >= 0.6), pooled and per repository;
* a reliability table of the predicted P(faster): per bin of the prediction, the share measured faster (the
  quartile bounds of the ratio clear 1), with the Brier score and the expected calibration error, before and
  after the calibration;
* of the measured wins >= 2x, the share predicted >= 1.5x (target 70%);
* the same for the shipped model (trained on our own suite only) on the same examples, as the baseline.

    .venv/bin/python bench/public_ranking.py --date 2026-12-03-s8 --models /tmp/loro
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OWN = "warpwise (own suite and lineages)"
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)
FOLD_ALPHAS, FOLD_CS = (10.0,), (0.1,)
# The calibration `warpwise ranking train` ships (`ranking.model.train`'s default): the method that scores best
# cross-fitted over the training operators; each fold chooses and fits it on its own training examples.
CALIBRATION = "auto"
TARGETS = {"spearman": 0.6, "big_wins_predicted": 0.7, "big_win": 2.0, "predicted_big": 1.5}


def repo_of(source: str) -> str:
    """Return the public repository an example's source names, or OWN."""
    parts = source.split()
    if len(parts) >= 3 and parts[0] == "public" and parts[1] in ("lineage", "rewrite"):
        return parts[2]
    return OWN


def balanced_weights(examples: list[Any]) -> list[float]:
    """Return sample weights giving the public lineages' examples and our own the same total weight.

    Our suite and lineages are most of the rows (206 of 271 labelled on 2026-12-02), almost all of them small
    effects on deoptimized variants of our own kernels; weighted equally, the public evidence (expert code) is a
    quarter of the fit. Fixed before any held-out figure was seen: two groups, each summing to half the rows.
    """
    own = sum(repo_of(e.source) == OWN for e in examples)
    pub = len(examples) - own
    if not own or not pub:
        return [1.0] * len(examples)
    return [len(examples) / (2 * own) if repo_of(e.source) == OWN else len(examples) / (2 * pub) for e in examples]


def nested_alpha(examples: list[Any], gpus: Any, weights: list[float] | None = None) -> tuple[float, dict[str, Any]]:
    """Return the regression penalty of the default grid that ranks best within a fold's own training examples.

    Each public repository of the fold is held out in turn (an inner leave-one-repository-out over the training
    examples only; the outer held-out repository is never among them), the speedup regressor is fitted without it
    at every penalty of `ranking.model.ALPHAS`, and the penalty with the highest pooled Spearman over those inner
    held-out examples is chosen (ties: the larger penalty). The classifier keeps the fixed C.
    """
    from warpwise.ranking.evaluate import spearman
    from warpwise.ranking.model import ALPHAS, _fit_once

    repos = sorted({repo_of(e.source) for e in examples} - {OWN})
    scores: dict[str, Any] = {}
    for alpha in ALPHAS:
        pred, meas = [], []
        for repo in repos:
            idx = [i for i, e in enumerate(examples) if repo_of(e.source) != repo]
            train = [examples[i] for i in idx]
            w = [weights[i] for i in idx] if weights is not None else None
            model = _fit_once(train, alpha, FOLD_CS[0], gpus, ("reg",), weights=w)
            for e in examples:
                if repo_of(e.source) == repo and e.outcome.measured:
                    pred.append(model.predict(e.features, top=0).speedup)
                    meas.append(e.outcome.speedup)
        rho = spearman(pred, meas)
        scores[str(alpha)] = None if math.isnan(rho) else round(rho, 3)
    best = max(ALPHAS, key=lambda a: (scores[str(a)] if scores[str(a)] is not None else -2.0, a))
    return best, scores


def loro_models(
    examples: list[Any],
    gpus: Any,
    save: Path | None = None,
    weighting: str = "none",
    penalties: str = "fixed",
    calibration: str = "none",
) -> dict[str, Any]:
    """Return, per public repository, the model trained on every labelled example except that repository's.

    With `save`, each model is written there (`<owner>+<name>.json`) and read back when the folder already holds
    one trained on the same examples (the agreement benchmark reuses them). `weighting` "balanced" fits with
    `balanced_weights` (computed on each fold's training examples). `penalties` "nested" chooses each fold's
    regression penalty by `nested_alpha` on that fold's training examples; "fixed" uses alpha 10. `calibration`
    (auto, isotonic, platt or none) is chosen and fitted per fold by `ranking.model.calibration_for` on that
    fold's training examples only (the classifier's leave-one-operator-out probabilities there), never on the
    held-out repository.
    """
    from warpwise.ranking.model import RankingModel, _fit_once, calibration_for

    labelled = [e for e in examples if e.outcome.labelled]
    out = {}
    for repo in sorted({repo_of(e.source) for e in labelled} - {OWN}):
        mine = [e for e in labelled if repo_of(e.source) != repo]
        path = save / (repo.replace("/", "+") + ".json") if save else None
        if path is not None and path.is_file():
            model = RankingModel.loads(path.read_text(encoding="utf-8"))
            got = model.trained_on
            same = got.get("examples") == len(mine) and got.get("weighting", "none") == weighting
            same = same and got.get("weights") == "pairs" and got.get("calibration", "none") == calibration
            if same and got.get("penalties", "fixed") == penalties:
                out[repo] = model
                continue
        print(f"training without {repo}", file=sys.stderr, flush=True)
        # Fixed penalties (the middle of the default grid), not chosen on the data, so that no choice sees the
        # held-out repository; one fit per fold. What `train` adds beyond that fit is the prediction intervals
        # (an inner sweep), which nothing below reads: P(faster) and the predicted speedup are the fit's.
        labelled_sorted = sorted(mine, key=lambda e: (e.file, e.kernel, e.card, e.gpu, e.source))
        weights = balanced_weights(labelled_sorted) if weighting == "balanced" else None
        alpha, inner = FOLD_ALPHAS[0], None
        if penalties == "nested":
            alpha, inner = nested_alpha(labelled_sorted, gpus, weights)
        out[repo] = _fit_once(labelled_sorted, alpha, FOLD_CS[0], gpus, weights=weights)
        out[repo].residuals, out[repo].card_residuals = [0.0, 0.0], {}  # no intervals (see above)
        out[repo].calibration, chosen, scores = calibration_for(labelled_sorted, FOLD_CS[0], gpus, calibration)
        out[repo].trained_on = {
            "examples": len(mine),
            "weighting": weighting,
            "weights": "pairs",
            "calibration": calibration,
            "calibration_chosen": chosen,
            "calibration_brier": scores,
        }
        if penalties == "nested":
            out[repo].trained_on.update({"penalties": penalties, "alpha": alpha, "inner_spearman": inner})
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(out[repo].dumps(), encoding="utf-8")
    return out


def leave_one_repository_out(
    examples: list[Any],
    gpus: Any,
    save: Path | None = None,
    weighting: str = "none",
    penalties: str = "fixed",
    calibration: str = "none",
    raw: bool = False,
) -> list[tuple[Any, Any]]:
    """Return (example, prediction) for every labelled public example, from a model trained without its repository.

    With `raw`, the predictions are the fold models' without their calibration (the classifier's own P).
    """
    models = loro_models(examples, gpus, save, weighting, penalties, calibration)
    if raw:
        models = {r: m.uncalibrated() for r, m in models.items()}
    labelled = [e for e in examples if e.outcome.labelled]
    return [(e, models[repo_of(e.source)].predict(e.features)) for e in labelled if repo_of(e.source) in models]


def metrics(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    """Return Spearman, the reliability table and the big-win share over (example, prediction) pairs."""
    from warpwise.ranking.evaluate import spearman

    measured = [(e, p) for e, p in pairs if e.outcome.measured]
    rho = spearman([p.speedup for _, p in measured], [e.outcome.speedup for e, _ in measured])
    table = []
    for lo, hi in itertools.pairwise(BINS):
        inside = [(e, p) for e, p in pairs if lo <= p.p_verified < hi]
        table.append(
            {
                "predicted": f"{lo:.1f}-{min(hi, 1.0):.1f}",
                "n": len(inside),
                "mean_predicted": round(sum(p.p_verified for _, p in inside) / len(inside), 3) if inside else None,
                "measured_faster": sum(e.outcome.status == "verified" for e, _ in inside),
                "share_faster": round(sum(e.outcome.status == "verified" for e, _ in inside) / len(inside), 3)
                if inside
                else None,
            }
        )
    faster = [float(e.outcome.status == "verified") for e, _ in pairs]
    brier = (
        sum((p.p_verified - y) ** 2 for (_, p), y in zip(pairs, faster, strict=True)) / len(pairs) if pairs else None
    )
    # Expected calibration error: the bins' gaps between mean predicted and measured share, weighted by size.
    ece = (
        sum(r["n"] * abs(r["mean_predicted"] - r["share_faster"]) for r in table if r["n"]) / len(pairs)
        if pairs
        else None
    )
    wins = [(e, p) for e, p in measured if (e.outcome.speedup or 0) >= TARGETS["big_win"]]
    caught = [(e, p) for e, p in wins if p.speedup >= TARGETS["predicted_big"]]
    return {
        "examples": len(pairs),
        "measured": len(measured),
        "spearman": round(rho, 3) if not math.isnan(rho) else None,
        "reliability": table,
        "brier": round(brier, 4) if brier is not None else None,
        "ece": round(ece, 4) if ece is not None else None,
        "big_wins": len(wins),
        "big_wins_predicted_big": len(caught),
        "big_win_share": round(len(caught) / len(wins), 3) if wins else None,
        "big_win_rows": [
            {
                "source": e.source,
                "card": e.card,
                "measured": round(e.outcome.speedup or 0, 3),
                "predicted": round(p.speedup, 3),
            }
            for e, p in wins
        ],
    }


def markdown(doc: dict[str, Any]) -> str:
    """Return the evaluation as Markdown."""
    out = [
        f"# Ranking on the public expert lineages, leave-one-repository-out ({doc['date']})",
        "",
        f"Command: `{doc['command']}` (warpwise `{doc['warpwise_commit']}`; CPU only). Training set: "
        f"{doc['training_set']['labelled']} labelled examples ({doc['training_set']['public']} from the public "
        "lineages, the rest our own); every public repository held out in turn, one fit without it "
        + (
            "(regression penalty chosen per fold by an inner leave-one-repository-out on that fold's training "
            "examples; classifier C fixed). "
            if doc.get("penalties") == "nested"
            else "(fixed penalties). "
        )
        + "'Faster' is the measurement's quartile bounds clearing 1 (the lineage batch, not warpwise's gate).",
        "",
        "| model | held-out examples | measured | Spearman (target >= 0.6) | wins >= 2x | predicted >= 1.5x |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in ("retrained", "shipped"):
        m = doc[name]["all"]
        share = f"{m['big_wins_predicted_big']}/{m['big_wins']} ({m['big_win_share']})" if m["big_wins"] else "-"
        out.append(f"| {name} | {m['examples']} | {m['measured']} | {m['spearman']} | {m['big_wins']} | {share} |")
    out += [
        "",
        "## Per repository (retrained, held out)",
        "",
        "| repository | examples | measured | Spearman | wins >= 2x predicted >= 1.5x |",
        "| --- | --- | --- | --- | --- |",
    ]
    for repo, m in doc["retrained"]["per_repo"].items():
        out.append(
            f"| {repo} | {m['examples']} | {m['measured']} | {m['spearman']} | "
            f"{m['big_wins_predicted_big']}/{m['big_wins']} |"
        )
    titles = {
        "retrained_uncalibrated": "retrained model before calibration (the classifier's own P)",
        "retrained": f"retrained model, calibrated ({doc.get('calibration', 'none')}, fitted inside each fold)",
        "shipped": "shipped model",
    }
    if doc.get("calibration_per_fold"):
        out += [
            "",
            "## The calibration each fold chose (weighted Brier score, cross-fitted over the fold's own operators)",
            "",
            "| held-out repository | chosen | none | platt | isotonic |",
            "| --- | --- | --- | --- | --- |",
        ]
        for repo, c in doc["calibration_per_fold"].items():
            sc = c.get("calibration_brier") or {}
            out.append(
                f"| {repo} | {c.get('calibration_chosen')} | {sc.get('none')} | {sc.get('platt')} | "
                f"{sc.get('isotonic')} |"
            )
    for name, title in titles.items():
        if name not in doc:
            continue
        m = doc[name]["all"]
        out += [
            "",
            f"## Reliability of P(faster), {title}",
            "",
            f"Brier score {m['brier']}, expected calibration error {m['ece']} (lower is better).",
            "",
            "| predicted | n | mean predicted | measured faster | share |",
            "| --- | --- | --- | --- | --- |",
        ]
        for row in m["reliability"]:
            out.append(
                f"| {row['predicted']} | {row['n']} | {row['mean_predicted']} | {row['measured_faster']} | "
                f"{row['share_faster']} |"
            )
    out += [
        "",
        "## Measured wins >= 2x (retrained, held out)",
        "",
        "| example | card | measured | predicted |",
        "| --- | --- | --- | --- |",
    ]
    for r in doc["retrained"]["all"]["big_win_rows"]:
        out.append(f"| {r['source']} | `{r['card']}` | {r['measured']}x | {r['predicted']}x |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Evaluate and write bench/results/public_ranking-DATE.{json,md}."""
    from warpwise.ranking import dataset
    from warpwise.ranking.model import RankingModel

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--date", required=True)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--models", type=Path, help="folder to keep the held-out models in (agreement --loro reads it)")
    ap.add_argument(
        "--weighting",
        choices=("none", "balanced"),
        default="none",
        help="sample weights of the folds: none, or the public evidence and our own with equal total weight",
    )
    ap.add_argument(
        "--penalties",
        choices=("fixed", "nested"),
        default="fixed",
        help="per fold: fixed penalties, or the regression penalty chosen on the fold's training examples",
    )
    ap.add_argument(
        "--calibration",
        choices=("auto", "isotonic", "platt", "none"),
        default=CALIBRATION,
        help="per fold: the calibration of P(faster), fitted on that fold's training examples only",
    )
    ap.add_argument(
        "--baseline",
        default="7ccba4e",
        help="commit whose ranking/default_model.json is the baseline (trained on our own suite only)",
    )
    args = ap.parse_args(argv)
    ts = dataset.build(ROOT, include_public=True)
    labelled = ts.labelled
    models = loro_models(ts.examples, ts.gpus, args.models, args.weighting, args.penalties, args.calibration)
    public = [e for e in labelled if repo_of(e.source) in models]
    held = [(e, models[repo_of(e.source)].predict(e.features)) for e in public]
    raw = [(e, models[repo_of(e.source)].uncalibrated().predict(e.features)) for e in public]
    old = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{args.baseline}:ranking/default_model.json"],
        capture_output=True,
        text=True,
        check=True,
    )
    shipped = RankingModel.loads(old.stdout)
    base = [(e, shipped.predict(e.features)) for e, _ in held]
    repos = sorted({repo_of(e.source) for e, _ in held})
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    doc = {
        "date": args.date,
        "command": "python bench/public_ranking.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "warpwise_commit": head.stdout.strip(),
        "targets": TARGETS,
        "weighting": args.weighting,
        "penalties": args.penalties,
        "calibration": args.calibration,
        "calibration_per_fold": {
            r: {k: m.trained_on.get(k) for k in ("calibration_chosen", "calibration_brier")}
            for r, m in sorted(models.items())
        },
        "training_set": {
            "labelled": len(labelled),
            "public": sum(repo_of(e.source) != OWN for e in labelled),
            "unbound_public": sum(1 for u in ts.unbound if u.startswith("public ")),
        },
        "retrained": {
            "all": metrics(held),
            "per_repo": {r: metrics([(e, p) for e, p in held if repo_of(e.source) == r]) for r in repos},
        },
        "retrained_uncalibrated": {"all": metrics(raw)},
        "shipped": {"all": metrics(base), "model": f"ranking/default_model.json at {args.baseline}"},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"public_ranking-{args.date}.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (args.out / f"public_ranking-{args.date}.md").write_text(markdown(doc), encoding="utf-8")
    m = doc["retrained"]["all"]
    print(f"held out {m['examples']}: Spearman {m['spearman']}, big wins {m['big_wins_predicted_big']}/{m['big_wins']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
