"""`warpwise ranking train|evaluate|explain`: the learned ranking of card rewrites (see `warpwise.ranking`)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

from warpwise.cli import EXIT_CLEAN, EXIT_ERROR, command

_NEEDS_SKLEARN = "training needs scikit-learn: pip install 'warpwise[ranking]'"


@command("ranking")
def _add_ranking(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ranking",
        help="train, evaluate and explain the model that predicts which card rewrites pay off",
        description="The learned ranking: P(verified) and the expected speedup of a card's rewrite on a kernel, "
        "trained on measured evidence (card evidence, lineage steps, admission roundtrips, the result cache).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    tr = verbs.add_parser("train", help="build the training set and train a model")
    tr.add_argument("--root", help="folder the evidence's file paths are relative to (default: see --default)")
    tr.add_argument("--no-cache", action="store_true", help="leave the verification cache out")
    tr.add_argument(
        "--default",
        action="store_true",
        help="regenerate the package's default model from the committed evidence of the warpwise repository (no cache)",
    )
    tr.add_argument("--out", help="model file to write (default: the user's data folder, or the package's)")
    tr.add_argument("--dataset", help="also write the training set as JSON to this file")
    tr.set_defaults(handler=_train)
    ev = verbs.add_parser("evaluate", help="leave-one-operator-out: rank correlation and precision")
    ev.add_argument("--root", help="folder the evidence's file paths are relative to")
    ev.add_argument("--no-cache", action="store_true", help="leave the verification cache out")
    ev.add_argument("--json", action="store_true", help="print JSON")
    ev.set_defaults(handler=_evaluate)
    ex = verbs.add_parser("explain", help="predict every card rewrite in a CUDA file, best first, with reasons")
    ex.add_argument("file", metavar="FILE")
    ex.add_argument("--kernel", help="only this kernel")
    ex.add_argument("--card", help="only this card")
    ex.add_argument("--gpu", help="the GPU to predict for (default: the model's)")
    ex.add_argument("--model", help="model file (default: the user's trained model, else the package default)")
    ex.add_argument("--json", action="store_true", help="print JSON")
    ex.set_defaults(handler=_explain)


def _repo_root() -> Path | None:
    from warpwise.ranking.store import DEFAULT_MODEL

    root = DEFAULT_MODEL.parents[2]
    return root if (root / "bench" / "results").is_dir() and (root / "skills" / "library.py").is_file() else None


def _root(args: argparse.Namespace) -> Path | None:
    if args.root:
        return Path(args.root).resolve()
    if getattr(args, "default", False):
        return _repo_root()
    cwd = Path.cwd()
    return cwd if (cwd / "bench" / "results").is_dir() else (_repo_root() or cwd)


def training_set(root: Path, use_cache: bool, committed_only: bool = False) -> Any:
    """Return the training set under a root, plus the shipped one's examples it does not already hold."""
    from warpwise.ranking import dataset

    cache = None
    if use_cache and not committed_only:
        from warpwise.verify.cache import ResultCache

        cache = ResultCache()
    # The public expert lineages' records (issue 21) are part of the committed evidence: their features are stored
    # in lineages/public/features.json, so a fresh clone re-derives the same examples without the public code.
    ts = dataset.build(root, cache=cache, include_public=True)
    if committed_only:
        return ts
    shipped = dataset.load_shipped()
    if shipped is not None:
        have = {(e.file, e.kernel, e.card, e.gpu, e.source) for e in ts.examples}
        extra = [e for e in shipped.examples if (e.file, e.kernel, e.card, e.gpu, e.source) not in have]
        ts.examples += extra
        ts.sources["shipped training set"] = len(extra)
        for name, g in shipped.gpus.items():
            ts.gpus.setdefault(name, g)
    return ts


def _train(args: argparse.Namespace) -> int:
    from warpwise.ranking import dataset, store

    root = _root(args)
    if root is None:
        print(
            "warpwise ranking train: error: --default needs the warpwise repository (its bench/results and "
            "skills/); pass --root",
            file=sys.stderr,
        )
        return EXIT_ERROR
    from warpwise.ranking.model import train

    if importlib.util.find_spec("sklearn") is None:
        print(f"warpwise ranking train: error: {_NEEDS_SKLEARN}", file=sys.stderr)
        return EXIT_ERROR
    ts = training_set(root, not args.no_cache, committed_only=args.default)
    for prob in ts.problems:
        print(f"warning: {prob}", file=sys.stderr)
    try:
        model = train(ts.examples, ts.gpus, sources=ts.sources)
    except ValueError as exc:
        print(f"warpwise ranking train: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.out:
        out = Path(args.out)
    elif args.default:
        out = store.DEFAULT_MODEL
    else:
        out = store.user_model_path()
    store.write_model(model, out)
    if args.default:
        dataset.write_training_set(ts, dataset.SHIPPED_TRAINING_SET)
    if args.dataset:
        dataset.write_training_set(ts, Path(args.dataset))
    t = model.trained_on
    print(
        f"trained on {t['examples']} labelled examples ({t['verified']} verified, {t['measured']} with a speedup) "
        f"from {t['operators']} operators and {t['cards']} cards; C={model.c:g}, alpha={model.alpha:g}"
    )
    print(f"model {model.version} written to {out}")
    return EXIT_CLEAN


def _evaluate(args: argparse.Namespace) -> int:
    from warpwise.ranking import evaluate

    root = _root(args)
    if root is None:
        print("warpwise ranking evaluate: error: pass --root", file=sys.stderr)
        return EXIT_ERROR
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print(f"warpwise ranking evaluate: error: {_NEEDS_SKLEARN}", file=sys.stderr)
        return EXIT_ERROR
    ts = training_set(root, not args.no_cache)
    held = evaluate.leave_one_operator_out(
        ts.examples, ts.gpus, progress=lambda op: print(f"held out: {op}", file=sys.stderr)
    )
    measured = [h for h in held if h.example.outcome.measured]
    rho = evaluate.spearman(
        [math.log(h.prediction.speedup) for h in measured], [math.log(h.example.outcome.speedup or 1) for h in measured]
    )
    prec = evaluate.precision_at(held)
    doc = {
        "examples": len(held),
        "operators": len({h.example.operator for h in held}),
        "spearman": rho,
        "precision": prec,
        "base_rate": evaluate.base_rate_precision(held),
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return EXIT_CLEAN
    print(f"leave-one-operator-out over {doc['examples']} labelled examples from {doc['operators']} operators:")
    print(f"  Spearman(predicted, measured speedup) = {rho:.3f} over {len(measured)} measured examples")
    print(
        f"  'will be faster' (P(verified) >= {prec['threshold']}): {prec['predicted_faster']} predicted, "
        f"{prec['verified_among_them']} verified: precision {prec['precision']:.2f}, recall {prec['recall']:.2f} "
        f"(base rate {doc['base_rate']:.2f})"
    )
    return EXIT_CLEAN


def _explain(args: argparse.Namespace) -> int:
    from warpwise.analyzers.build import analyze_text
    from warpwise.ranking import load_model, predict_matches
    from warpwise.skills.engine import match_file

    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        print(f"warpwise ranking explain: error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    model = load_model(args.model)
    if model is None:
        where = args.model or "the user's data folder or the package"
        print(f"warpwise ranking explain: error: no ranking model loads from {where}", file=sys.stderr)
        return EXIT_ERROR
    fm = analyze_text(data, str(path))
    matches = [
        m
        for m in match_file(fm)
        if (args.kernel is None or m.function == args.kernel) and (args.card is None or m.card_id == args.card)
    ]
    preds = predict_matches(fm, matches, model=model, gpu=args.gpu, top=5)
    ranked = sorted(preds.items(), key=lambda kv: (-kv[1].score, kv[0]))
    if args.json:
        print(json.dumps([{"kernel": k, **p.to_dict()} for (k, _), p in ranked], indent=2))
        return EXIT_CLEAN
    gpu = args.gpu if args.gpu in model.gpus else model.default_gpu
    print(f"{path}: {len(ranked)} card rewrite(s), best first (model {model.version}, {gpu})")
    for (kernel, _), p in ranked:
        mark = "likely faster" if p.will_be_faster else "unlikely to pay off"
        print(f"\n`{kernel}`, {p.label} ({mark})")
        print(p.explain())
    return EXIT_CLEAN
