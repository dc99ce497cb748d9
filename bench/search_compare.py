"""Search against greedy and random order on the naive suite, at equal budget, on one GPU (issue 8).

For every naive-suite kernel (`bench/suite/<name>/naive.cu` with its problem file), each strategy of
`warpwise.search` (mcts, greedy, random) runs with the same candidate and GPU-second budgets through one gate and
one result cache. A version one strategy measured is free for the next in wall-clock time, but every strategy is
charged its recorded GPU-seconds (`charge_cached`), so the budgets stay equal and the comparison fair. Per kernel
and strategy the result is the best verified speedup over the naive kernel (measured by the gate in the same run
as the naive kernel), the GPU-seconds charged, the path that led to it, and the trajectory (GPU-seconds -> best
speedup so far), from which "GPU-seconds to reach random's final speedup" is computed.

For context, the naive kernel's best time is set against the expert corpus kernel of the same operator and
torch eager, both as measured by `bench/gpu/corpus_check.py` on the same GPU model
(`bench/results/corpus_check-*.json`, the latest): ">= 90% of the expert" reads expert_ms / best_ms >= 0.9 and
"within 5% of eager" best_ms <= 1.05 * eager_ms. Those times come from another run and another harness (same
sizes, L2 flushed, CUDA events), so they are context, not verdicts; only the gate's statuses say "verified".

Lineage plans (substituting a corpus expert's kernel for the same operator) are off in the headline: with
`--lineage both` (the default) every kernel and strategy runs once without them and once with them, and the
summary, the Markdown table and the targets are computed for each separately, lineage plans off first. Every row
says which mechanism produced its win (`mechanism`: the kind of the step on its path with the largest gain:
`transformation` for a parameterised rewrite such as the contraction tiles, `card`, `parameter`, `lineage` or
`LLM`), and lists the mechanism of each step.

`--suite bench/suite_ood` runs the out-of-distribution suite instead (kernels `<operator>/<variant>`, in name
order; the corpus operator of each from its problem file's `corpus_expert`).

Run on a GPU machine: `python3 bench/search_compare.py --out $OUT` (at most about 3.5 minutes with the defaults:
no kernel starts after `--wall-s` 170 s, searches in flight stop at `--deadline-s` 205 s, and results are written
after every kernel; see bench/gpu/search_batch.sh). Without a GPU, `--dry-run` builds the candidates compile-only
and claims nothing.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime as _dt
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "bench" / "suite"
RESULTS = ROOT / "bench" / "results"
STRATEGIES = ("mcts", "greedy", "random")
# Cheap kernels first, the corpus operators among them; the slowest naive kernels (tens to hundreds of ms per run)
# last, so that a wall-clock limit cuts the fewest kernels.
ORDER = (
    "softmax",
    "layernorm",
    "transpose",
    "gemv",
    "bias_gelu",
    "blur3x3",
    "sum",
    "rmsnorm",
    "gelu_f16",
    "gemv_colmajor",
    "topk",
    "conv3x3",
    "scan_rows",
    "cross_entropy",
    "matmul",
    "histogram",
)
CORPUS_OF = {
    "softmax": "softmax_rows",
    "layernorm": "layernorm",
    "transpose": "transpose",
    "gemv": "gemv",
    "bias_gelu": "bias_gelu",
    "blur3x3": "blur3x3",
    "sum": "reduce_sum",
    "matmul": "sgemm",
    "histogram": "histogram",
}


def references() -> dict[str, Any]:
    """Return expert and eager times per suite name from the latest corpus check (empty when there is none)."""
    files = sorted(RESULTS.glob("corpus_check-*.json"))
    if not files:
        return {}
    doc = json.loads(files[-1].read_text())
    out: dict[str, Any] = {"file": files[-1].name, "device": doc.get("device", {}), "naive": {}, "expert": {}}
    for r in doc.get("results", []):
        t = r.get("timing") or {}
        kind, _, name = str(r.get("entry", "")).partition("/")
        if kind in ("naive", "expert") and t.get("kernel"):
            out[kind][name] = {
                "kernel_ms": t["kernel"]["median_ms"],
                "eager_ms": (t.get("eager") or {}).get("median_ms"),
            }
    return out


def seconds_to_reach(trajectory: list[list[float]], target: float) -> float | None:
    """Return the GPU-seconds charged when the best speedup first reached `target` (None if never)."""
    for spent, best in trajectory:
        if best >= target - 1e-9:
            return spent
    return None


def suite_entries(folder: Path, only: list[str] | None = None) -> list[tuple[str, Path, str, str | None]]:
    """Return (name, source, kernel, corpus operator) for every kernel of a suite folder, sorted by name.

    `<operator>/naive.cu` is named after the operator (bench/suite), `<operator>/<variant>.cu` is named
    `<operator>/<variant>` (bench/suite_ood); the kernel and its corpus operator come from the problem file's
    `kernel` and `corpus_expert` (bench/suite's files have no `corpus_expert`: CORPUS_OF says it). `only`
    selects by name or by operator.
    """
    out = []
    for src in sorted(folder.glob("*/*.cu")):
        problem = src.with_name(f"{src.stem}.problem.py")
        if not problem.is_file():
            continue
        name = src.parent.name if src.stem == "naive" else f"{src.parent.name}/{src.stem}"
        if only and name not in only and src.parent.name not in only:
            continue
        values = _constants(problem.read_text(encoding="utf-8"))
        kernel = values.get("kernel")
        if not isinstance(kernel, str):
            continue
        corpus = values["corpus_expert"] if "corpus_expert" in values else CORPUS_OF.get(name)
        out.append((name, src, kernel, corpus if isinstance(corpus, str) else None))
    return out


def _constants(text: str) -> dict[str, Any]:
    """Return the top-level `NAME = literal` assignments of a problem file."""
    values: dict[str, Any] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError, SyntaxError):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


MECHANISMS = {"card": "card", "param": "parameter", "lineage": "lineage", "llm": "LLM"}


def mechanism_of(node: dict[str, Any]) -> str:
    """Return the mechanism of one path step: a parameterised transformation, a card, a parameter, lineage, LLM."""
    kind = str(node.get("kind", ""))
    if kind == "param" and node.get("card"):
        return "transformation"  # a transformation's own parameter (the contraction's tile shape)
    return MECHANISMS.get(kind, kind or "start")


def winning_mechanism(path: list[dict[str, Any]]) -> str | None:
    """Return the mechanism of the step with the largest gain over its parent (None without a gain)."""
    best, prev, out = 1.0, 1.0, None
    for n in path[1:]:
        sp = (n.get("speedup") or {}).get("median")
        if sp is None:
            continue
        gain = sp / prev if prev else sp
        if gain > best:
            best, out = gain, mechanism_of(n)
        prev = sp
    return out


def row_of(
    name: str,
    kernel: str,
    strategy: str,
    report: Any,
    refs: dict[str, Any],
    corpus: str | None = None,
    lineage: bool = True,
) -> dict[str, Any]:
    """Return one (kernel, strategy) row (`corpus`: the expert's operator, by default CORPUS_OF's)."""
    start = report.start or {}
    best = report.best or {}
    start_ms = None
    for n in report.nodes:
        if n.get("start_ms"):
            start_ms = n["start_ms"]
            break
    speedup = report.speedup or 1.0
    best_ms = start_ms / speedup if start_ms else None
    row: dict[str, Any] = {
        "suite": name,
        "kernel": kernel,
        "strategy": strategy,
        "status": "verified" if report.best is not None else (start.get("status") or "no result"),
        "speedup": round(speedup, 4),
        "speedup_low": (best.get("speedup") or {}).get("low"),
        "start_ms": start_ms,
        "best_ms": round(best_ms, 5) if best_ms else None,
        "gpu_seconds": report.budget.get("gpu_seconds"),
        "new_gpu_seconds": report.budget.get("new_gpu_seconds"),
        "versions": report.budget.get("nodes"),
        "lineage_plans": lineage,
        "path": [n["action"] for n in report.path[1:]],
        "mechanisms": [mechanism_of(n) for n in report.path[1:]],
        "mechanism": winning_mechanism(report.path) if report.best is not None else None,
        "screened": any(n.get("screened_at") or n.get("screening") for n in report.nodes),
        "path_titles": [n["title"] for n in report.path[1:]],
        "stop_reason": report.stop_reason,
        "trajectory": [[round(s, 3), round(x, 4)] for s, x in report.trajectory],
        "rejected": sum(1 for n in report.nodes if n.get("status") not in ("verified", "not_faster")),
        "statuses": _count([n.get("status") for n in report.nodes[1:]]),
    }
    expert = refs.get("expert", {}).get(corpus or CORPUS_OF.get(name, ""), {})
    naive = refs.get("naive", {}).get(name, {})
    eager = naive.get("eager_ms") or expert.get("eager_ms")
    if best_ms and expert.get("kernel_ms"):
        row["expert_ms"] = expert["kernel_ms"]
        row["share_of_expert"] = round(expert["kernel_ms"] / best_ms, 4)
    if best_ms and eager:
        row["eager_ms"] = eager
        row["vs_eager"] = round(eager / best_ms, 4)
    return row


def _count(values: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def summaries(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the summary with lineage plans off (the headline) and with them, each over its own rows."""
    out: dict[str, Any] = {}
    for key, flag in (("lineage_off", False), ("lineage_on", True)):
        mine = [r for r in rows if bool(r.get("lineage_plans", True)) is flag]
        if mine:
            out[key] = summary(mine)
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Return per-strategy totals and the issue's targets, where the rows allow them."""
    out: dict[str, Any] = {}
    wins: dict[str, int] = {}
    for r in rows:
        if r.get("mechanism"):
            wins[r["mechanism"]] = wins.get(r["mechanism"], 0) + 1
    out["wins_by_mechanism"] = wins
    kernels = sorted({r["suite"] for r in rows})
    for s in STRATEGIES:
        mine = [r for r in rows if r["strategy"] == s]
        if not mine:
            continue
        gm = 1.0
        for r in mine:
            gm *= r["speedup"]
        out[s] = {
            "kernels": len(mine),
            "geomean_speedup": round(gm ** (1 / len(mine)), 4),
            "gpu_seconds": round(sum(r["gpu_seconds"] or 0 for r in mine), 2),
            "verified": sum(1 for r in mine if r["status"] == "verified"),
        }
    mcts = {r["suite"]: r for r in rows if r["strategy"] == "mcts"}
    rand = {r["suite"]: r for r in rows if r["strategy"] == "random"}
    greedy = {r["suite"]: r for r in rows if r["strategy"] == "greedy"}
    fewer = []
    for k in kernels:
        if k in mcts and k in rand and rand[k]["speedup"] > 1.0:
            target = rand[k]["speedup"]
            a, b = seconds_to_reach(mcts[k]["trajectory"], target), seconds_to_reach(rand[k]["trajectory"], target)
            fewer.append({"suite": k, "target": target, "mcts_s": a, "random_s": b})
    out["to_reach_random"] = fewer
    out["mcts_not_worse_than_greedy"] = sum(
        1 for k in kernels if k in mcts and k in greedy and mcts[k]["speedup"] >= greedy[k]["speedup"] - 1e-9
    )
    corpus = [r for r in mcts.values() if r.get("share_of_expert") is not None]
    out["corpus_at_90pct_of_expert"] = f"{sum(1 for r in corpus if r['share_of_expert'] >= 0.9)}/{len(corpus)}"
    eager = [r for r in mcts.values() if r.get("vs_eager") is not None]
    out["within_5pct_of_eager"] = f"{sum(1 for r in eager if r['vs_eager'] >= 1 / 1.05)}/{len(eager)}"
    out["faster_than_eager"] = f"{sum(1 for r in eager if r['vs_eager'] > 1.0)}/{len(eager)}"
    return out


def markdown(doc: dict[str, Any]) -> str:
    """Return the comparison as Markdown: lineage plans off first (the headline), then with them."""
    meta = doc["meta"]
    lines = [
        f"# search_compare ({meta['date'][:10]})",
        "",
        f"Command: `{meta['command']}`  ",
        f"Device: {meta.get('device') or 'unknown'}; budget per strategy and kernel: {meta['candidates']} "
        f"candidates, {meta['budget_s']} GPU-seconds (charged at their recorded cost, cached or not); "
        f"wall {meta['wall_s']:.0f} s.",
    ]
    titles = {
        "lineage_off": "Lineage plans off (headline)",
        "lineage_on": "With lineage plans (a corpus expert substituted for the same operator)",
    }
    for key, flag in (("lineage_off", False), ("lineage_on", True)):
        rows = [r for r in doc["rows"] if bool(r.get("lineage_plans", True)) is flag]
        if not rows:
            continue
        lines += ["", f"## {titles[key]}", ""]
        lines += _table(rows)
        lines += _summary_lines(doc["summary"].get(key, {}))
    if doc.get("not_run"):
        lines += ["", f"Not run (wall-clock limit): {', '.join(doc['not_run'])}"]
    lines += ["", "Expert and eager times: " + (doc.get("references") or "none") + " (another run; context only)."]
    return "\n".join(lines) + "\n"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| kernel | strategy | status | speedup (low) | best ms | GPU-s | versions | vs expert | vs eager | won by | "
        "path (mechanism) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        low = f" ({r['speedup_low']:.2f})" if r.get("speedup_low") else ""
        steps = [f"{a} ({m})" for a, m in zip(r["path"], r.get("mechanisms") or [""] * len(r["path"]), strict=False)]
        lines.append(
            f"| {r['suite']} | {r['strategy']} | {r['status']} | {r['speedup']:.2f}x{low} | "
            f"{r['best_ms'] if r['best_ms'] is not None else '-'} | {r['gpu_seconds']} | {r['versions']} | "
            f"{_pct(r.get('share_of_expert'))} | {_x(r.get('vs_eager'))} | {r.get('mechanism') or '-'} | "
            f"{' → '.join(steps) or '-'} |"
        )
    return lines


def _summary_lines(s: dict[str, Any]) -> list[str]:
    lines = ["", "Summary:", ""]
    for name in STRATEGIES:
        if name in s:
            t = s[name]
            lines.append(
                f"- **{name}**: geomean {t['geomean_speedup']:.2f}x over {t['kernels']} kernels, "
                f"{t['verified']} with a verified gain, {t['gpu_seconds']} GPU-seconds charged"
            )
    lines.append(f"- mcts at least as fast as greedy on {s.get('mcts_not_worse_than_greedy', 0)} kernels")
    lines.append(f"- corpus operators at >= 90% of the expert kernel (mcts): {s.get('corpus_at_90pct_of_expert')}")
    lines.append(
        f"- within 5% of torch eager or faster (mcts): {s.get('within_5pct_of_eager')}; faster: "
        f"{s.get('faster_than_eager')}"
    )
    wins = s.get("wins_by_mechanism") or {}
    lines.append("- wins by mechanism: " + (", ".join(f"{k} {v}" for k, v in sorted(wins.items())) or "none"))
    lines += ["", "GPU-seconds to reach random's final speedup (mcts / random):", ""]
    for f in s.get("to_reach_random", []):
        lines.append(f"- {f['suite']} ({f['target']:.2f}x): {f['mcts_s']} / {f['random_s']}")
    return lines


def _pct(v: float | None) -> str:
    return f"{100 * v:.0f}%" if v is not None else "-"


def _x(v: float | None) -> str:
    return f"{v:.2f}x" if v is not None else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(RESULTS), help="folder for search_compare-DATE.json and .md")
    ap.add_argument("--suite", default=str(SUITE), help="naive suite folder (default bench/suite; or bench/suite_ood)")
    ap.add_argument("--kernels", nargs="*", default=None, help="suite names (default: all, cheapest first)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--candidates", type=int, default=8, help="gate jobs per strategy and kernel (default 8)")
    ap.add_argument("--budget-s", type=float, default=20.0, help="GPU-seconds per strategy and kernel (default 20)")
    ap.add_argument("--wall-s", type=float, default=170.0, help="start no kernel after this many seconds")
    ap.add_argument("--deadline-s", type=float, default=205.0, help="stop searches in flight after this many seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dry-run", action="store_true", help="compile-only: build every candidate, measure nothing")
    ap.add_argument(
        "--lineage",
        choices=("off", "on", "both"),
        default="both",
        help="lineage plans: off (the headline), on, or both (default: each run without them, then with them)",
    )
    args = ap.parse_args()

    from warpwise.search.evaluate import GateVerifier
    from warpwise.search.optimize import OptimizeOptions, gate_for, optimize
    from warpwise.verify.types import Options

    os.environ.setdefault("WARPWISE_CORPUS", str(ROOT / "lineages" / "corpus"))
    t0 = time.monotonic()
    cancel = threading.Event()
    deadline = threading.Timer(args.deadline_s, cancel.set)
    deadline.daemon = True
    deadline.start()
    suite = Path(args.suite)
    if suite.resolve() == SUITE.resolve():
        names = args.kernels or [n for n in ORDER if (SUITE / n / "naive.cu").is_file()]
        entries = {n: (SUITE / n / "naive.cu", None, CORPUS_OF.get(n)) for n in names}
    else:
        found = suite_entries(suite, args.kernels)
        names = [n for n, *_ in found]
        entries = {n: (path, kernel, corpus) for n, path, kernel, corpus in found}
    strategies = [s for s in args.strategies.split(",") if s]
    gate = gate_for("compile-only" if args.dry_run else "local", None)
    # Shorter timing than the gate's default (the spread it measures decides "verified", so this only makes
    # verdicts more conservative), three seeds as always.
    options = Options(compile_only=args.dry_run, warmup_ms=10.0, rep_ms=40.0, min_reps=5, time_limit_s=60.0)
    refs = references()
    rows: list[dict[str, Any]] = []
    not_run: list[str] = []
    device = None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC)
    doc: dict[str, Any] = {}
    try:
        for name in names:
            if time.monotonic() - t0 > args.wall_s or cancel.is_set():
                not_run.append(name)
                continue
            path, named, corpus = entries[name]
            text = path.read_text()
            if named is None:
                m = re.search(r"__global__\s+void\s+(\w+)", text)
                assert m is not None
                named = m.group(1)
            kernel = named
            modes = {"off": [False], "on": [True], "both": [False, True]}[args.lineage]
            for lineage, strategy in [(ln, s) for ln in modes for s in strategies]:
                opts = OptimizeOptions(
                    strategy=strategy,
                    budget_s=args.budget_s,
                    candidates=args.candidates,
                    compile_only=args.dry_run,
                    charge_cached=True,
                    seed=args.seed,
                    gate_options=options,
                    lineage=lineage,
                )
                k0 = time.monotonic()
                report = optimize(str(path), kernel, opts, text=text, verifier=GateVerifier(gate), cancel=cancel)
                row = row_of(name, kernel, strategy, report, refs, corpus, lineage)
                row["wall_s"] = round(time.monotonic() - k0, 2)
                rows.append(row)
                device = device or (report.start or {}).get("device")
                print(
                    f"{name:14s} {'lineage' if lineage else 'no-lin.'} {strategy:6s} {row['status']:12s} "
                    f"{row['speedup']:.3f}x "
                    f"{row['gpu_seconds']:7.2f} GPU-s {row['versions']:3d} versions {row['wall_s']:6.1f} s  "
                    f"{' -> '.join(row['path']) or '-'}",
                    flush=True,
                )
            doc = _doc(args, stamp, device, rows, not_run, refs, time.monotonic() - t0)
            _write(out, stamp, doc)
    finally:
        deadline.cancel()
        gate.backend.close()
    doc = _doc(args, stamp, device, rows, not_run, refs, time.monotonic() - t0)
    _write(out, stamp, doc)
    print(json.dumps(doc["summary"], indent=1))
    return 0


def _doc(
    args: argparse.Namespace,
    stamp: _dt.datetime,
    device: str | None,
    rows: list[dict[str, Any]],
    not_run: list[str],
    refs: dict[str, Any],
    wall: float,
) -> dict[str, Any]:
    return {
        "meta": {
            "date": stamp.isoformat(timespec="seconds"),
            "command": " ".join(["python3", *sys.argv]),
            "suite": args.suite,
            "device": device,
            "candidates": args.candidates,
            "budget_s": args.budget_s,
            "wall_s": wall,
            "seed": args.seed,
            "dry_run": args.dry_run,
        },
        "rows": rows,
        "summary": summaries(rows),
        "not_run": not_run,
        "references": refs.get("file"),
    }


def _write(out: Path, stamp: _dt.datetime, doc: dict[str, Any]) -> None:
    """Write the JSON and Markdown results (after every kernel, so a cut run keeps what it measured)."""
    day = stamp.strftime("%Y-%m-%d")
    (out / f"search_compare-{day}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"search_compare-{day}.md").write_text(markdown(doc))


if __name__ == "__main__":
    raise SystemExit(main())
