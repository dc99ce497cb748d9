"""Which card the editor ranks first on each kernel of bench/suite and examples, under two ranking models.

The editor orders a kernel's card rewrites by the ranking's score (`warpwise.ranking.rank_candidates`:
`Prediction.score`, highest first). This script analyses every `.cu` file under `bench/suite/` and `examples/`,
predicts each (kernel, card) pair with the model file given, and records per kernel the cards in that order with
their predicted speedup and P(verified). Run it once with the model before a retrain and once after, then `diff`
writes the before/after table:

    python bench/ranking_order.py order --model before.json --out /tmp/before.json
    warpwise ranking train --default --root .
    python bench/ranking_order.py order --model ranking/default_model.json --out /tmp/after.json
    python bench/ranking_order.py diff /tmp/before.json /tmp/after.json --out bench/results/ranking_order-<date>

Resource builds are off (`WARPWISE_NO_RESOURCE_BUILDS=1`) so both runs see the same matches whatever the
compiler cache holds.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("bench/suite", "examples")


def order(model_path: Path) -> dict[str, Any]:
    """Return, per `file::kernel`, the card rewrites in the editor's order under the model file."""
    os.environ.setdefault("WARPWISE_NO_RESOURCE_BUILDS", "1")
    from warpwise.engine import parsed_model
    from warpwise.ranking import load_model, predict_matches
    from warpwise.skills.engine import match_file

    model = load_model(model_path)
    if model is None:
        raise SystemExit(f"{model_path}: not a ranking model")
    kernels: dict[str, Any] = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.cu")):
            rel = path.relative_to(ROOT).as_posix()
            fm = parsed_model(path.read_bytes(), str(path))
            preds = predict_matches(fm, match_file(fm), model=model)
            per: dict[str, list[dict[str, Any]]] = {}
            for (kernel, card), p in preds.items():
                per.setdefault(kernel, []).append(
                    {
                        "card": card,
                        "score": round(float(p.score), 4),
                        "speedup": round(float(p.speedup), 3),
                        "p_verified": round(float(p.p_verified), 3),
                    }
                )
            for kernel, cands in per.items():
                cands.sort(key=lambda c: (-c["score"], c["card"]))
                kernels[f"{rel}::{kernel}"] = cands
    return {"model": str(model_path), "model_version": str(model.version), "kernels": kernels}


def _commit() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def diff(before: dict[str, Any], after: dict[str, Any], command: str) -> str:
    """Render the before/after table of the first card per kernel."""
    names = sorted(set(before["kernels"]) | set(after["kernels"]))
    moved = 0
    rows = []
    for name in names:
        b = before["kernels"].get(name) or []
        a = after["kernels"].get(name) or []

        def cell(c: list[dict[str, Any]]) -> str:
            if not c:
                return "-"
            top = c[0]
            return f"`{top['card']}` ({top['speedup']:.2f}x, P {top['p_verified']:.2f})"

        changed = (b[0]["card"] if b else None) != (a[0]["card"] if a else None)
        moved += changed
        file, kernel = name.split("::")
        rows.append(f"| `{file}` | `{kernel}` | {cell(b)} | {cell(a)} | {'moved' if changed else ''} |")
    lines = [
        f"# Editor order before and after retraining the default ranking ({_dt.date.today().isoformat()})",
        "",
        f"Command: `{command}`; warpwise commit {_commit()}. Models: before `{before['model']}` "
        f"(version {before['model_version']}), after `{after['model']}` (version {after['model_version']}). "
        "Per kernel of bench/suite and examples, the card the editor lists first (highest `Prediction.score`, as "
        "`warpwise.ranking.rank_candidates` orders them) with its predicted speedup and P(verified). Resource builds "
        "off in both runs. Mechanism: the learned ranking only (no GPU, no verification).",
        "",
        f"First card changed on {moved} of {len(names)} kernels.",
        "",
        "| file | kernel | first before | first after | |",
        "| --- | --- | --- | --- | --- |",
        *rows,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run one of the subcommands."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("order")
    o.add_argument("--model", type=Path, required=True)
    o.add_argument("--out", type=Path, required=True)
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--out", type=Path, required=True, help="write <out>.md and <out>.json")
    args = ap.parse_args(argv)
    if args.cmd == "order":
        args.out.write_text(json.dumps(order(args.model), indent=1) + "\n")
        return 0
    before, after = json.loads(args.before.read_text()), json.loads(args.after.read_text())
    command = "python bench/ranking_order.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.with_suffix(".json").write_text(json.dumps({"before": before, "after": after}, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(diff(before, after, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
