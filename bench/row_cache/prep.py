"""Prepare the GPU check of the row-register-cache transformation on both naive suites (issue 19, row operators).

For every kernel of `bench/suite` and `bench/suite_ood` this writes candidates in the layout of a suite folder
(OUT/<operator>/<style>__<key>.cu with its problem file), for `bench/gpu/corpus_check.py --suite OUT` and
`bench/row_coop/gate_check.py OUT`, and OUT/manifest.json with each candidate's mechanism:

- `cache<K>`: the `row-register-cache` card alone on the naive kernel (K elements per lane), launch unchanged;
- `tree_cache<K>`: the `barrier-per-step-tree-reduction` card (warp shuffles), then `row-register-cache`;
- `<mapping>_cache<K>`: the `row-cooperative-reduction` card with a mapping (`block512`, ...), then
  `row-register-cache` on its output, launched as the row-cooperative rewrite says;
- `gs<F>`: the `grid-stride-atomic-total` card (a single atomic total: grid-stride accumulation during the load,
  `float4` where aligned, the tree as warp shuffles), launched with the grid divided by F.

No lineage, no LLM, no other card. Kernels neither card recognises are listed under `refused` with the reason.

Usage: .venv/bin/python bench/row_cache/prep.py OUT [KEY,...]   (KEY: a mapping key such as `tree_cache32`, or
`<operator folder>/<style>__<key>` for one candidate; all candidates when none is given)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.engine import compute_fix, match_file, merge_fixes
from warpwise.skills.library import builtin_library
from warpwise.skills.rewrite import apply_edits
from warpwise.verify.launch import problem_source

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("bench/suite", "bench/suite_ood")
COOP_MAPPINGS = ("block128", "block256", "block512", "block1024")
PER_LANE = (16, 32, 64)  # the search may also try 8


def _kernel(model, name=None):
    return next(
        (f for f in model.functions if f.kind is FunctionKind.KERNEL and (name is None or f.name == name)), None
    )


def main(out: Path, keys: set[str] | None = None) -> int:
    """Write the candidates, their problem files and the manifest (only the mapping keys in `keys`, if given)."""
    lib = builtin_library()
    cache = lib.get("row-register-cache")
    coop = lib.get("row-cooperative-reduction")
    tree = lib.get("barrier-per-step-tree-reduction")
    total = lib.get("grid-stride-atomic-total")
    assert total is not None and total.rules is not None
    gs = total.rules
    assert cache is not None and cache.rules is not None and coop is not None and coop.rules is not None
    rr, rc = cache.rules, coop.rules
    mappings = {
        (f"warp{mp.rows_per_block}" if mp.mode == "warp" else f"block{mp.threads}"): mp for mp in rc.MAPPING_CHOICES
    }
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    entries, refused = [], []

    def emit(cu: Path, suite: str, kernel: str, key: str, text: bytes, changes, mechanism: str) -> None:
        if keys and key not in keys and f"{cu.parent.name}/{cu.stem}__{key}" not in keys:
            return
        problem = cu.with_name(cu.stem + ".problem.py")
        op = cu.parent.name + ("_ood" if suite.endswith("_ood") else "")
        name = f"{cu.stem}__{key}"
        dst = out / op / f"{name}.cu"
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(text)
        src = problem.read_text()
        dst.with_name(f"{name}.problem.py").write_text(problem_source(src, changes, changes) if changes else src)
        entries.append(
            {
                "original": str(cu.relative_to(ROOT)),
                "candidate": str(dst.relative_to(out)),
                "kernel": kernel,
                "mapping": key,
                "mechanism": mechanism,
                "launch": [c.to_dict() for c in changes],
            }
        )

    for suite in SUITES:
        for cu in sorted((ROOT / suite).glob("*/*.cu")):
            if not cu.with_name(cu.stem + ".problem.py").exists():
                continue
            model = analyze_text(cu.read_bytes(), str(cu))
            fn = _kernel(model)
            if fn is None:
                continue
            rel = str(cu.relative_to(ROOT))
            got = 0
            found, why = rr.recognise(model, fn)
            if found is not None:
                for k in PER_LANE:
                    text = rr.rewrite_source(model, fn.name, k)
                    if text is not None:
                        emit(
                            cu,
                            suite,
                            fn.name,
                            f"cache{k}",
                            text,
                            (),
                            f"transformation row-register-cache, params per_lane={k}",
                        )
                        got += 1
                if tree is not None:
                    tm = match_file(model, enabled={tree.skill_id})
                    fixes = [f for f in (compute_fix(model, m) for m in tm) if f is not None]
                    if fixes:
                        tmodel = analyze_text(apply_edits(model.text, merge_fixes(fixes)), str(cu))
                        for k in PER_LANE:
                            text = rr.rewrite_source(tmodel, fn.name, k)
                            if text is not None:
                                emit(
                                    cu,
                                    suite,
                                    fn.name,
                                    f"tree_cache{k}",
                                    text,
                                    (),
                                    "transformation barrier-per-step-tree-reduction (warp shuffles), then "
                                    f"transformation row-register-cache, params per_lane={k}",
                                )
                                got += 1
            rk, why_coop = rc.recognise(model, fn)
            if rk is not None:
                for key in COOP_MAPPINGS:
                    mp = mappings[key]
                    text = rc.rewrite_source(model, fn.name, mp)
                    if text is None:
                        continue
                    cmodel = analyze_text(text, str(cu))
                    cfound, _ = rr.recognise(cmodel, _kernel(cmodel, fn.name))
                    for k in PER_LANE:
                        t2 = rr.rewrite_source(cmodel, fn.name, k)
                        if t2 is None or cfound is None or not rr.fits_block(cfound, k, mp.block):
                            continue
                        params = (
                            f"mode=warp rows_per_block={mp.rows_per_block}"
                            if mp.mode == "warp"
                            else f"mode=block threads={mp.threads}"
                        )
                        emit(
                            cu,
                            suite,
                            fn.name,
                            f"{key}_cache{k}",
                            t2,
                            rc.launch_changes(mp),
                            f"transformation row-cooperative-reduction, params {params}, then "
                            f"transformation row-register-cache, params per_lane={k}",
                        )
                        got += 1
            at, why_total = gs.recognise(model, fn)
            if at is not None:
                text = gs.rewrite_source(model, fn.name)
                for f in gs.GRID_FACTORS if text is not None else ():
                    emit(
                        cu,
                        suite,
                        fn.name,
                        f"gs{f}",
                        text,
                        gs.launch_changes(f),
                        f"transformation grid-stride-atomic-total, params grid/{f} (tree as warp shuffles)",
                    )
                    got += 1
            if not got:
                refused.append(
                    {"file": rel, "kernel": fn.name, "why": why, "row_cooperative": why_coop, "atomic_total": why_total}
                )
    (out / "manifest.json").write_text(json.dumps({"commit": commit, "entries": entries, "refused": refused}, indent=1))
    print(f"{len(entries)} candidates of {len({e['original'] for e in entries})} kernels; {len(refused)} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None))
