"""Precision of `warpwise check` on real code, from a labelled set of its findings.

The labelled set (`bench/precision/labels.yaml`) holds findings of `warpwise check` on the real-world development
corpus and the public lineage repositories (pinned in `bench/precision/corpus.yaml`), each judged `wrong`
(the claim is false or the fix would break or slow the code), `no-op` (true, but acting on it changes nothing:
the compiler already does it, the code is cold, or the fix is already there) or `useful`, with a one-line
reason, by reading the code. Only paths, lines, rule ids and a fingerprint of the region are stored, never the
repositories' code.

A finding is identified by (repository, path, rule, fingerprint); the fingerprint hashes the text of the lines the
finding covers (white space collapsed), so a finding that moves stays labelled and one whose code changed is new.

    python bench/precision.py export --mirrors /work/.mirror --out /tmp/corpus
    warpwise check --format json /tmp/corpus > check.json
    python bench/precision.py sample --check check.json --corpus /tmp/corpus --per-rule 15 --seed 18
    python bench/precision.py sample --top-up --check check.json --corpus /tmp/corpus   # after a change
    python bench/precision.py report --check check.json --corpus /tmp/corpus --out bench/results/precision-...

`sample` draws, per rule, `--per-rule` findings at random with a fixed seed (all of them when a rule has fewer)
and appends the ones not yet labelled to the labels file with an empty judgement. `report` recomputes precision
per rule over the labelled findings that still fire, and lists findings it has no label for (to be judged).
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import hashlib
import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PRECISION = ROOT / "bench" / "precision"
CORPUS = PRECISION / "corpus.yaml"
LABELS = PRECISION / "labels.yaml"
JUDGEMENTS = ("wrong", "no-op", "useful")
HEADER = (
    "# Judged by reading the code at the pinned commit (issue 18); see bench/precision.py for what the fields mean.\n"
)
LOUDNESS = ("hint", "info", "warning", "error")


def corpus() -> list[dict[str, str]]:
    """Return the pinned repositories of the corpus (name, repo, commit, subdirectory)."""
    data = yaml.safe_load(CORPUS.read_text())
    return list(data["repositories"])


def export(mirrors: Path, out: Path) -> None:
    """Write the `.cu`/`.cuh` files of every pinned repository to `out/<name>/` from the bare mirrors, and, for a
    repository whose own build flags `bench/realworld_build.py` records (read from its setup.py or CMakeLists.txt),
    a `.warpwise.toml` with those nvcc flags: warpwise then reads them as it reads a user's project configuration
    (fast math, for example, makes `precise-math-call` a no-op)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from realworld_build import RECIPES

    for entry in corpus():
        recipe = RECIPES.get(entry["name"])
        if recipe is not None:
            (out / entry["name"]).mkdir(parents=True, exist_ok=True)
            flags = ", ".join(json.dumps(f) for f in recipe.nvcc_flags)
            (out / entry["name"] / ".warpwise.toml").write_text(
                f"# The repository's own nvcc flags ({recipe.where}), from bench/realworld_build.py.\n"
                f"nvcc-flags = [{flags}]\n"
            )
        git_dir = mirrors / entry["repo"].replace("/", "+") / "repo"
        names = subprocess.run(
            ["git", "-C", str(git_dir), "ls-tree", "-r", "--name-only", entry["commit"]],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split("\n")
        sub = entry.get("subdir") or ""
        for name in names:
            if not name.endswith((".cu", ".cuh")) or not name.startswith(sub):
                continue
            blob = subprocess.run(
                ["git", "-C", str(git_dir), "show", f"{entry['commit']}:{name}"], check=True, capture_output=True
            ).stdout
            dst = out / entry["name"] / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(blob)


_FIRST_NAME = re.compile(r"`([^`]*)`")


def fingerprint(text: bytes, start_line: int, end_line: int, function: str, message: str) -> str:
    """Return the hash of a finding's region: the enclosing function, the first identifier its message names
    (two findings on one line about `x` and `y` differ) and lines `start_line..end_line` (0-based, inclusive)
    with white space collapsed. Message wording beyond that first identifier does not count, so rewording a
    rule keeps its labels."""
    lines = text.split(b"\n")[start_line : end_line + 1]
    canon = b" ".join(b" ".join(line.split()) for line in lines)
    m = _FIRST_NAME.search(message)
    head = f"{function}\0{m.group(1) if m else ''}\0".encode()
    return hashlib.sha1(head + canon).hexdigest()[:12]


def findings(check: Path, root: Path) -> list[dict[str, Any]]:
    """Return the findings of a `warpwise check --format json` run over an exported corpus, keyed for labels."""
    repos = {e["name"]: e for e in corpus()}
    data = json.loads(check.read_text())
    out: list[dict[str, Any]] = []
    texts: dict[Path, bytes] = {}
    for f in data["files"]:
        path = Path(f["path"])
        if not path.is_absolute():
            # `warpwise check` prints paths as it was given them: relative to where it ran, beside its output.
            path = check.parent / path
        rel = path.resolve().relative_to(root.resolve())
        name, inner = rel.parts[0], Path(*rel.parts[1:]).as_posix()
        entry = repos.get(name)
        if entry is None:
            continue
        text = texts.setdefault(path, path.read_bytes())
        for x in f["findings"]:
            r = x["range"]
            out.append(
                {
                    "repo": entry["repo"],
                    "commit": entry["commit"],
                    "path": inner,
                    "line": x["line"],
                    "rule": x["rule"],
                    "severity": x["severity"],
                    "fingerprint": fingerprint(
                        text, r["start"]["line"], r["end"]["line"], x.get("function") or "", x["message"]
                    ),
                    "message": x["message"],
                }
            )
    return out


def key(item: dict[str, Any]) -> tuple[str, str, str, str]:
    """Return the identity of a finding: repository, path, rule, fingerprint."""
    return (item["repo"], item["path"], item["rule"], item["fingerprint"])


def load_labels() -> list[dict[str, Any]]:
    """Return the labelled findings."""
    if not LABELS.exists():
        return []
    data = yaml.safe_load(LABELS.read_text()) or {}
    return list(data.get("labels") or [])


def sample(check: Path, root: Path, per_rule: int, seed: int) -> list[dict[str, Any]]:
    """Draw up to `per_rule` findings per rule at random (fixed seed), one per (repo, path, rule, fingerprint)."""
    unique: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for item in findings(check, root):
        unique.setdefault(key(item), item)
    by_rule: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for item in unique.values():
        by_rule[item["rule"]].append(item)
    rng = random.Random(seed)
    chosen: list[dict[str, Any]] = []
    for rule in sorted(by_rule):
        items = sorted(by_rule[rule], key=key)
        chosen.extend(items if len(items) <= per_rule else rng.sample(items, per_rule))
    return chosen


def top_up(check: Path, root: Path, per_rule: int, seed: int) -> list[dict[str, Any]]:
    """Draw, per rule, as many unlabelled findings at random (fixed seed) as it takes to bring the rule's labelled
    findings that still fire up to `per_rule` (all of them when fewer fire): after a change, a rule whose labelled
    findings dropped out, and a new rule, get a fresh random sample, and a rule that kept its sample keeps it."""
    labels = {key(x) for x in load_labels() if x.get("judgement") in JUDGEMENTS}
    unique: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for item in findings(check, root):
        unique.setdefault(key(item), item)
    by_rule: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    have: collections.Counter[str] = collections.Counter()
    for k, item in unique.items():
        if k in labels:
            have[item["rule"]] += 1
        else:
            by_rule[item["rule"]].append(item)
    rng = random.Random(seed)
    chosen: list[dict[str, Any]] = []
    for rule in sorted(by_rule):
        items = sorted(by_rule[rule], key=key)
        want = max(0, per_rule - have[rule])
        chosen.extend(items if len(items) <= want else rng.sample(items, want))
    return chosen


def report(check: Path, root: Path) -> dict[str, Any]:
    """Return precision per rule over the labelled findings that still fire, and the unlabelled ones."""
    labels = {key(x): x for x in load_labels() if x.get("judgement") in JUDGEMENTS}
    current = findings(check, root)
    firing = {key(x): x for x in current}
    per_rule: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    severity: dict[str, str] = {}
    # Each labelled finding counts among the warnings by its own shown severity (the loudest of the findings that
    # share its label), not by its rule's: one rule can give errors, warnings and hints.
    loud: dict[tuple[str, str, str, str], str] = {}
    for item in current:
        k = key(item)
        if LOUDNESS.index(item["severity"]) > LOUDNESS.index(loud.get(k, "hint")):
            loud[k] = item["severity"]
    warn: collections.Counter[str] = collections.Counter()
    for k, item in firing.items():
        severity.setdefault(item["rule"], item["severity"])
        label = labels.get(k)
        if label is not None:
            per_rule[item["rule"]][label["judgement"]] += 1
            if loud.get(k) in ("warning", "error"):
                warn[label["judgement"]] += 1
    dropped = sorted(k for k in labels if k not in firing)
    totals: collections.Counter[str] = collections.Counter()
    rows = {}
    for rule, counts in sorted(per_rule.items()):
        n = sum(counts.values())
        totals.update(counts)
        rows[rule] = {
            "severity": severity.get(rule),
            "labelled": n,
            **{j: counts[j] for j in JUDGEMENTS},
            "not_wrong": (n - counts["wrong"]) / n if n else None,
        }
    all_n = sum(totals.values())
    warn_n = sum(warn.values())
    fired = collections.Counter(x["rule"] for x in current)
    unlabelled = collections.Counter(item["rule"] for k, item in firing.items() if k not in labels)
    return {
        "rules": rows,
        "overall": {
            "labelled_firing": all_n,
            **{j: totals[j] for j in JUDGEMENTS},
            "not_wrong": (all_n - totals["wrong"]) / all_n if all_n else None,
            "warnings_labelled": warn_n,
            "warning_no_op_share": warn["no-op"] / warn_n if warn_n else None,
        },
        "dropped": [list(k) for k in dropped],
        "findings_per_rule": dict(sorted(fired.items())),
        "unlabelled_per_rule": dict(sorted(unlabelled.items())),
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(result: dict[str, Any], command: str, commit: str) -> str:
    """Render a precision report."""
    o = result["overall"]
    lines = [
        f"# Precision of `warpwise check` on real code ({_dt.date.today().isoformat()})",
        "",
        f"Command: `{command}`  ",
        f"warpwise commit: {commit}; labels: `bench/precision/labels.yaml`; corpus: `bench/precision/corpus.yaml`.",
        "",
        f"Labelled findings that still fire: {o['labelled_firing']} (useful {o['useful']}, no-op {o['no-op']}, "
        f"wrong {o['wrong']}); not wrong: {_pct(o['not_wrong'])}; no-ops among warnings and errors: "
        f"{_pct(o['warning_no_op_share'])} of {o['warnings_labelled']}. Labelled findings that no longer fire: "
        f"{len(result['dropped'])}.",
        "",
        "| rule | severity | findings | labelled | useful | no-op | wrong | not wrong | unlabelled |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rule, n in result["findings_per_rule"].items():
        r = result["rules"].get(rule, {})
        lines.append(
            f"| `{rule}` | {r.get('severity', '-')} | {n} | {r.get('labelled', 0)} | {r.get('useful', 0)} | "
            f"{r.get('no-op', 0)} | {r.get('wrong', 0)} | {_pct(r.get('not_wrong'))} | "
            f"{result['unlabelled_per_rule'].get(rule, 0)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run one of the subcommands."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--mirrors", type=Path, required=True)
    e.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("sample")
    r = sub.add_parser("report")
    for p in (s, r):
        p.add_argument("--check", type=Path, required=True, help="output of `warpwise check --format json`")
        p.add_argument("--corpus", type=Path, required=True, help="the folder `export` wrote")
    s.add_argument("--per-rule", type=int, default=15)
    s.add_argument("--seed", type=int, default=18)
    s.add_argument(
        "--top-up",
        action="store_true",
        help="draw only what brings each rule's labelled findings that still fire up to --per-rule",
    )
    r.add_argument("--out", type=Path, help="write <out>.md and <out>.json")
    r.add_argument("--commit", default="")
    args = ap.parse_args(argv)
    if args.cmd == "export":
        export(args.mirrors, args.out)
        return 0
    if args.cmd == "sample":
        known = {key(x) for x in load_labels()}
        draw = top_up if args.top_up else sample
        new = [x for x in draw(args.check, args.corpus, args.per_rule, args.seed) if key(x) not in known]
        labels = load_labels() + [
            {k: x[k] for k in ("repo", "commit", "path", "line", "rule", "fingerprint")}
            | {"judgement": "", "reason": ""}
            for x in new
        ]
        PRECISION.mkdir(parents=True, exist_ok=True)
        LABELS.write_text(HEADER + yaml.safe_dump({"labels": labels}, sort_keys=False, allow_unicode=True, width=200))
        print(f"{len(new)} findings added to {LABELS}")
        return 0
    result = report(args.check, args.corpus)
    command = "python bench/precision.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(markdown(result, command, args.commit))
    print(markdown(result, command, args.commit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
