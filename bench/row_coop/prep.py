"""Prepare the GPU check of the row-cooperative-reduction transformation on both naive suites.

For every kernel of `bench/suite` and `bench/suite_ood` that the card `row-cooperative-reduction` recognises, and
for each mapping in MAPPINGS (a warp per row with 4 rows per block, a block of 256 or of 1024 threads per row), this
writes the rewritten kernel and a problem file that launches it as the rewrite says (the suite's problem file with
the card's `LaunchChange`s applied to its `launch`) into OUT/<operator>/<style>__<mapping>.cu, in the layout of a
suite folder, so `bench/gpu/corpus_check.py --suite OUT` checks each candidate against the problem's torch
reference and times it against torch eager. It also writes OUT/manifest.json: for each candidate the original
file, the kernel, the mapping and the mechanism ("transformation row-cooperative-reduction, params ..."), which
`bench/row_coop/gate_check.py` reads to verify each candidate against its naive kernel through the gate. The
kernels the `barrier-per-step-tree-reduction` card rewrites are added as `<style>__tree.cu` (launched as before).

Usage: .venv/bin/python bench/row_coop/prep.py OUT
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import builtin_library
from warpwise.verify.launch import problem_source

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("bench/suite", "bench/suite_ood")


def main(out: Path) -> int:
    """Write the candidates, their problem files and the manifest."""
    card = builtin_library().get("row-cooperative-reduction")
    assert card is not None and card.rules is not None
    rc = card.rules
    mappings = {
        (f"warp{mp.rows_per_block}" if mp.mode == "warp" else f"block{mp.threads}"): mp for mp in rc.MAPPING_CHOICES
    }
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    entries = []
    refused = []
    for suite in SUITES:
        for cu in sorted((ROOT / suite).glob("*/*.cu")):
            problem = cu.with_name(cu.stem + ".problem.py")
            if not problem.exists():
                continue
            model = analyze_text(cu.read_bytes(), str(cu))
            for fn in model.functions:
                if fn.kind is not FunctionKind.KERNEL:
                    continue
                rk, why = rc.recognise(model, fn)
                rel = str(cu.relative_to(ROOT))
                if rk is None:
                    refused.append({"file": rel, "kernel": fn.name, "why": why})
                    continue
                for key, mp in mappings.items():
                    text = rc.rewrite_source(model, fn.name, mp)
                    if text is None:
                        refused.append({"file": rel, "kernel": fn.name, "why": f"no rewrite for {key}"})
                        continue
                    op = cu.parent.name + ("_ood" if suite.endswith("_ood") else "")
                    name = f"{cu.stem}__{key}"
                    dst = out / op / f"{name}.cu"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.write_bytes(text)
                    changes = rc.launch_changes(mp)
                    dst.with_name(f"{name}.problem.py").write_text(
                        problem_source(problem.read_text(), changes, changes)
                    )
                    entries.append(
                        {
                            "original": rel,
                            "candidate": str(dst.relative_to(out)),
                            "kernel": fn.name,
                            "mapping": key,
                            "reductions": rk.summary,
                            "mechanism": "transformation row-cooperative-reduction, params "
                            + (
                                f"mode=warp rows_per_block={mp.rows_per_block}"
                                if mp.mode == "warp"
                                else f"mode=block threads={mp.threads}"
                            ),
                            "launch": [c.to_dict() for c in changes],
                        }
                    )
    tree = builtin_library().get("barrier-per-step-tree-reduction")
    if tree is not None and tree.rules is not None:
        from warpwise.skills.engine import compute_fix, match_file, merge_fixes
        from warpwise.skills.rewrite import apply_edits

        for suite in SUITES:
            for cu in sorted((ROOT / suite).glob("*/*.cu")):
                problem = cu.with_name(cu.stem + ".problem.py")
                if not problem.exists():
                    continue
                model = analyze_text(cu.read_bytes(), str(cu))
                found = match_file(model, enabled={tree.skill_id})
                fixes = [f for f in (compute_fix(model, m) for m in found) if f is not None]
                if not fixes:
                    continue
                op = cu.parent.name + ("_ood" if suite.endswith("_ood") else "")
                dst = out / op / f"{cu.stem}__tree.cu"
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(apply_edits(model.text, merge_fixes(fixes)))
                dst.with_name(f"{cu.stem}__tree.problem.py").write_text(problem.read_text())
                entries.append(
                    {
                        "original": str(cu.relative_to(ROOT)),
                        "candidate": str(dst.relative_to(out)),
                        "kernel": found[0].function,
                        "mapping": "tree",
                        "reductions": ", ".join(
                            f"{m.region.facts['op']} of `{m.region.facts['array']}`" for m in found
                        ),
                        "mechanism": "transformation barrier-per-step-tree-reduction (warp shuffles)",
                        "launch": [],
                    }
                )
    (out / "manifest.json").write_text(json.dumps({"commit": commit, "entries": entries, "refused": refused}, indent=1))
    print(f"{len(entries)} candidates of {len({e['original'] for e in entries})} kernels; {len(refused)} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
