"""Which cards fire on each kernel of a naive suite, and which of their rewrites apply (no GPU needed).

For issues 18 and 19: where do the matchers and the exact rewrites miss real spellings? This runs
`warpwise check --format json` over a suite folder (the findings a user sees, card or analyzer rule) and, for
every kernel with a problem file, the engine's card rewrites as the quality report proposes them
(`warpwise.lineages.suite.card_candidates`: a card whose rewrite changes the kernel). It writes a Markdown
summary: per rule, on how many kernels it fires and how many it rewrites (optionally beside another suite, such
as bench/suite, for comparison); per kernel, the rules found and the rewrites that apply. Observations only:
nothing in warpwise is tuned to it.

    python3 bench/suite_check.py --suite bench/suite_ood --compare bench/suite \\
        --out bench/results/suite_ood_check-2026-12-01.md
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class KernelRow:
    """One kernel of a suite: the rules warpwise check reports and the card rewrites that change it."""

    name: str
    kernel: str
    fired: Counter[str] = field(default_factory=Counter)
    rewrites: list[str] = field(default_factory=list)


def check_json(folder: Path) -> dict[str, Any]:
    """Return `warpwise check --format json` over a folder (exit code 1 means findings, not failure)."""
    proc = subprocess.run(
        [sys.executable, "-m", "warpwise", "check", "--format", "json", str(folder)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"suite_check: warpwise check failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def suite_rows(folder: Path) -> list[KernelRow]:
    """Return one row per suite kernel, with the rules that fire and the rewrites that apply."""
    from warpwise.lineages.suite import card_candidates, suite_kernels

    kernels = suite_kernels(folder)
    by_path = {k.path.resolve(): k for k in kernels}
    rows = {k.path.resolve(): KernelRow(k.name, k.kernel) for k in kernels}
    for f in check_json(folder)["files"]:
        row = rows.get((ROOT / f["path"]).resolve())
        if row is None:
            continue
        # A finding shown for its region names the cards it absorbed (one diagnostic per region and problem):
        # they fired on the kernel too.
        row.fired.update(r for x in f["findings"] for r in [x["rule"], *(x.get("data") or {}).get("alternatives", [])])
    for path, row in rows.items():
        row.rewrites = [c.card for c in card_candidates(by_path[path])]
    return sorted(rows.values(), key=lambda r: r.name)


def _rule_counts(rows: list[KernelRow]) -> tuple[Counter[str], Counter[str]]:
    fired = Counter(rule for r in rows for rule in r.fired)
    rewritten = Counter(card for r in rows for card in set(r.rewrites))
    return fired, rewritten


def markdown(
    suite: Path, rows: list[KernelRow], compare: tuple[Path, list[KernelRow]] | None, meta: dict[str, str]
) -> str:
    """Return the summary as Markdown."""
    from warpwise.skills.catalog import card_rules

    cards = [c[0] for c in card_rules()]
    fired, rewritten = _rule_counts(rows)
    lines = [
        f"# warpwise check on {suite.as_posix()} ({meta['date'][:10]})",
        "",
        f"Command: `{meta['command']}`  ",
        f"Commit: {meta['commit']}; no GPU (findings and rewrites only, nothing verified). {len(rows)} kernels.",
        "",
        "A rule *fires* when `warpwise check` reports it on the kernel; a card *rewrites* when its exact rewrite",
        "changes the kernel (the candidates `bench/quality.py` would send to the gate). A card that fires without",
        "rewriting has a diagnosis but no fix for that spelling.",
        "",
        "## Per rule",
        "",
    ]
    if compare is not None:
        c_fired, c_rewritten = _rule_counts(compare[1])
        lines += [
            f"| rule | fires ({len(rows)} kernels) | rewrites | fires on {compare[0].as_posix()} "
            f"({len(compare[1])}) | rewrites there |",
            "| --- | --- | --- | --- | --- |",
        ]
    else:
        lines += ["| rule | fires | rewrites |", "| --- | --- | --- |"]
    for rule in sorted(set(cards) | set(fired), key=lambda r: (-fired[r], r)):
        kind = "" if rule in cards else " (analyzer)"
        row = f"| `{rule}`{kind} | {fired[rule]} | {rewritten[rule] if rule in cards else '-'} |"
        if compare is not None:
            row += f" {c_fired[rule]} | {c_rewritten[rule] if rule in cards else '-'} |"
        lines.append(row)
    lines += ["", "## Per kernel", "", "| kernel | `__global__` | rules that fire | rewrites that apply |"]
    lines.append("| --- | --- | --- | --- |")
    for r in rows:
        rules = ", ".join(f"`{k}`" + (f" x{n}" if n > 1 else "") for k, n in sorted(r.fired.items())) or "-"
        rew = ", ".join(f"`{c}`" for c in r.rewrites) or "-"
        lines.append(f"| `{r.name}` | `{r.kernel}` | {rules} | {rew} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=str(ROOT / "bench" / "suite_ood"))
    ap.add_argument("--compare", help="a second suite folder to count the same rules on")
    ap.add_argument("--out", help="Markdown file to write (default: print)")
    args = ap.parse_args(argv)
    suite = Path(args.suite)
    rows = suite_rows(suite)
    compare = (Path(args.compare), suite_rows(Path(args.compare))) if args.compare else None
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False, cwd=ROOT
    ).stdout.strip()
    meta = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python3", "bench/suite_check.py", *(argv if argv is not None else sys.argv[1:])]),
        "commit": commit or "unknown",
    }
    text = markdown(suite, rows, compare, meta)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
