"""Record what warpwise says about a fixed set of CUDA files, to show that a restructuring changed nothing.

For every `.cu`/`.cuh` file under `examples/`, `bench/suite/`, the lineage corpus, the card fixtures and the
shared anchor file, the snapshot holds `warpwise check --format json`'s findings and, for every finding with a
rewrite, the text its fix produces (safe and unsafe alike), as a hash plus the changed lines. Run it before and
after a move and compare the two files:

    python scripts/behaviour_snapshot.py > /tmp/before.json
    ... restructure ...
    python scripts/behaviour_snapshot.py > /tmp/after.json
    python scripts/behaviour_snapshot.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = ("examples", "bench/suite", "skills/lineages/corpus", "lineages/corpus", "tests/fixtures/cards", "skills")
ANCHOR = ROOT.parent / "shared" / "bench" / "anchor_kernels.cu"


def _files() -> list[Path]:
    seen: set[str] = set()
    out: list[Path] = []
    for rel in SETS:
        base = ROOT / rel
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if p.suffix not in (".cu", ".cuh") or p.name.endswith(".expected.cu"):
                continue
            # Card fixtures are keyed by card id and file name, so a move of the fixture folder keeps its key.
            key = _key(p)
            if key not in seen:
                seen.add(key)
                out.append(p)
    if ANCHOR.is_file():
        out.append(ANCHOR)
    return out


def _key(p: Path) -> str:
    parts = p.resolve().parts
    if "fixtures" in parts:
        i = parts.index("fixtures")
        # tests/fixtures/cards/<card>/file.cu before the move, skills/<card>/fixtures/file.cu after it.
        card = parts[i + 2] if parts[i + 1] == "cards" else parts[i - 1]
        return f"fixture:{card}/{p.name}"
    for marker in ("corpus", "suite", "examples"):
        if marker in parts:
            return f"{marker}:" + "/".join(parts[parts.index(marker) + 1 :])
    return p.name


def snapshot() -> dict[str, object]:
    """Return the findings and fix outputs of every file of the snapshot set."""
    from warpwise.engine import analyze_model, parsed_model
    from warpwise.skills.engine import compute_fix
    from warpwise.skills.rewrite import apply_edits

    result: dict[str, object] = {}
    for path in _files():
        data = path.read_bytes()
        model = parsed_model(data, str(path))
        report = analyze_model(model)
        findings = []
        for f in report.findings:
            entry: dict[str, object] = {
                "rule": f.rule,
                "span": list(f.span),
                "severity": str(getattr(f.severity, "value", f.severity)),
                "message": f.message,
            }
            m = report.match_for(f)
            if m is not None:
                entry["applicability"] = str(getattr(m.applicability, "value", m.applicability))
                entry["verdicts"] = [[v.id, str(getattr(v.status, "value", v.status))] for v in m.verdicts]
                if m.has_rewrite:
                    fix = compute_fix(model, m)
                    if fix is None:
                        entry["fix"] = None
                    else:
                        new = apply_edits(data, list(fix.edits))
                        diff = difflib.unified_diff(
                            data.decode("utf-8", "replace").splitlines(),
                            new.decode("utf-8", "replace").splitlines(),
                            lineterm="",
                            n=0,
                        )
                        entry["fix"] = {
                            "title": fix.title,
                            "sha256": hashlib.sha256(new).hexdigest(),
                            "diff": [line for line in diff if not line.startswith(("---", "+++"))],
                        }
            findings.append(entry)
        result[_key(path)] = findings
    return result


def compare(before: dict[str, object], after: dict[str, object]) -> int:
    """Print every difference between two snapshots; return the number of files that differ."""
    differ = 0
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        differ += 1
        print(f"== {key}")
        lines_a = json.dumps(a, indent=1, sort_keys=True).splitlines()
        lines_b = json.dumps(b, indent=1, sort_keys=True).splitlines()
        for line in difflib.unified_diff(lines_a, lines_b, "before", "after", lineterm="", n=1):
            print(line)
    print(f"{differ} of {len(set(before) | set(after))} files differ", file=sys.stderr)
    return differ


def main() -> int:
    """Write a snapshot to stdout, or compare two."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        return 1 if compare(a, b) else 0
    json.dump(snapshot(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
