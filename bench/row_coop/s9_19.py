"""Time the row operators of issue 19 that missed 0.95x of torch eager (session 9) with the chained candidates that
one search step (and one quick fix) now reaches:

- `bench/suite_ood/layernorm/welford_stats.cu` (0.76x in session 8, row-cooperative-reduction alone): the
  row-cooperative mapping followed by `row-register-cache` with the automatic cache size (the composed search
  action `transform:row-cooperative-reduction:<mapping>, then row-register-cache: ...`), so the normalise pass reads
  the lane's elements from registers instead of global memory and the statistics pass issues its loads together;
- `bench/suite/{softmax,layernorm,rmsnorm}/naive.cu` (block per row, 0.81x/0.66x/0.70x naive): `row-register-cache`
  with the automatic size directly on the tree-reduction form (the card's quick fix now), and after the
  `barrier-per-step-tree-reduction` card (warp shuffles);
- `bench/suite_ood/rmsnorm_residual/half_block_row.cu` (0.87x): the same, and with `missing-restrict`'s fix first
  (without `__restrict__` the unrolled pass's loads may not move above the previous iteration's `h_out` store);
- `bench/suite_ood/softmax/online_macro_cols.cu` (0.85x): the row-cooperative mapping of a block of 128 (or 256)
  alone and followed by the automatic cache, and `precise-math-call` (`__expf`), then `division-by-loop-invariant`
  (one reciprocal of the row's sum) on top of both: the online pass computes two exponentials an element, the
  write pass one and a division.

Same two steps as `s7_19.py` (whose report and rendering this reuses): `prep OUT` here (warpwise, tree-sitter),
`run --prep PREP --out OUT` on the GPU machine (`bench/gpu/corpus_check.py`: NVRTC build, outputs checked against
the problem's torch reference on the small presets and three seeds at full size, L2 flushed, CUDA-event medians,
torch `eager()` timed the same way), which writes `s9_19.json` and `s9_19.md` under OUT.

Usage:
    .venv/bin/python bench/row_coop/s9_19.py prep /tmp/s9_19_prep
    python3 bench/row_coop/s9_19.py run --prep /tmp/s9_19_prep --out "$OUT"
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import s7_19  # noqa: E402  (the session-7 script of this folder: its report and rendering)

ROOT = HERE.parents[1]

ROWS: dict[str, dict[str, Any]] = {
    "bench/suite_ood/layernorm/welford_stats.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite/softmax/naive.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite/layernorm/naive.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite/rmsnorm/naive.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite_ood/rmsnorm_residual/half_block_row.cu": {"kind": "row operator", "target": "0.95x eager"},
    "bench/suite_ood/softmax/online_macro_cols.cu": {"kind": "row operator", "target": "0.95x eager"},
}
"""The rows of this batch: each kernel file, what kind of target the issue sets, and the target."""

WELFORD_MAPPINGS = ("block128", "block256", "block512", "warp4")
"""Row-cooperative mappings tried for the Welford kernel (session 8: block256 best, block1024 far behind)."""
ONLINE_MAPPINGS = ("block128", "block256")
"""Row-cooperative mappings tried for the online softmax (session 7: block128 best)."""

Candidate = tuple[str, bytes, tuple[Any, ...], str]


def _card(card_id: str) -> Any:
    from warpwise.skills.library import builtin_library

    card = builtin_library().get(card_id)
    assert card is not None and card.rules is not None, f"the {card_id} card did not load"
    return card


def _fix(text: bytes, path: str, card_id: str) -> bytes | None:
    """Return the text with every fix of one card applied (the quick fix of that card), or None when none applies."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.engine import compute_fix, match_file, merge_fixes
    from warpwise.skills.rewrite import apply_edits

    model = analyze_text(text, path)
    fixes = [f for f in (compute_fix(model, m) for m in match_file(model, enabled={card_id})) if f is not None]
    if not fixes:
        return None
    out = apply_edits(model.text, merge_fixes(fixes))
    return out if out != text else None


def _cache(text: bytes, path: str, kernel: str, per_lane: int | str = "auto") -> bytes | None:
    """Return the text with row-register-cache applied (None when it does not recognise the kernel)."""
    from warpwise.analyzers.build import analyze_text

    return _card("row-register-cache").rules.rewrite_source(analyze_text(text, path), kernel, per_lane)


def _coop(text: bytes, path: str, kernel: str, key: str) -> tuple[bytes | None, tuple[Any, ...], str]:
    """Return the row-cooperative rewrite for a mapping key (`block256`, `warp4`), its launch changes and params."""
    from warpwise.analyzers.build import analyze_text

    rules = _card("row-cooperative-reduction").rules
    mp = next(
        m
        for m in rules.MAPPING_CHOICES
        if (f"warp{m.rows_per_block}" if m.mode == "warp" else f"block{m.threads}") == key
    )
    params = (
        f"mode=warp rows_per_block={mp.rows_per_block}" if mp.mode == "warp" else f"mode=block threads={mp.threads}"
    )
    return rules.rewrite_source(analyze_text(text, path), kernel, mp), rules.launch_changes(mp), params


def candidates(rel: str, kernel: str) -> tuple[list[Candidate], list[str]]:
    """Return the candidates of one row (key, text, launch changes, mechanism), and why some were not made."""
    cu = ROOT / rel
    path = str(cu)
    naive = cu.read_bytes()
    out: list[Candidate] = []
    why: list[str] = []
    cache = "row-register-cache, params per_lane=auto (8, 16 or 32 as the row needs)"

    def add(key: str, text: bytes | None, changes: tuple[Any, ...], mechanism: str) -> None:
        if text is None:
            why.append(f"{key}: the transformation refused")
        else:
            out.append((key, text, changes, mechanism))

    if rel.endswith("welford_stats.cu") or rel.endswith("online_macro_cols.cu"):
        keys = WELFORD_MAPPINGS if "welford" in rel else ONLINE_MAPPINGS
        for key in keys:
            text, changes, params = _coop(naive, path, kernel, key)
            first = f"transformation row-cooperative-reduction, params {params}"
            add(key, text, changes, first)
            cached = _cache(text, path, kernel) if text is not None else None
            add(f"{key}_cache", cached, changes, f"{first}, then transformation {cache}")
            if key == "block256" and text is not None:
                add(
                    f"{key}_cache16", _cache(text, path, kernel, 16), changes, f"{first}, then row-register-cache, K=16"
                )
            if "online" in rel:
                for base, name, mech in ((text, key, first), (cached, f"{key}_cache", f"{first}, then {cache}")):
                    fast = _fix(base, path, "precise-math-call") if base is not None else None
                    add(f"{name}_expf", fast, changes, f"{mech}, then card precise-math-call")
                    rcp = _fix(fast, path, "division-by-loop-invariant") if fast is not None else None
                    add(
                        f"{name}_expf_rcp",
                        rcp,
                        changes,
                        f"{mech}, then cards precise-math-call, division-by-loop-invariant",
                    )
        return out, why
    add("cache", _cache(naive, path, kernel), (), f"transformation {cache}")
    tree = _fix(naive, path, "barrier-per-step-tree-reduction")
    if tree is None:
        why.append("tree: barrier-per-step-tree-reduction did not apply")
    else:
        first = "transformation barrier-per-step-tree-reduction (warp shuffles)"
        add("tree_cache", _cache(tree, path, kernel), (), f"{first}, then transformation {cache}")
    if "half_block_row" in rel:
        restrict = _fix(naive, path, "missing-restrict")
        if restrict is None:
            why.append("restrict: missing-restrict did not apply")
        else:
            add(
                "restrict_cache",
                _cache(restrict, path, kernel),
                (),
                f"card missing-restrict, then transformation {cache}",
            )
            rtree = _fix(restrict, path, "barrier-per-step-tree-reduction")
            if rtree is not None:
                mech = "card missing-restrict, then barrier-per-step-tree-reduction (warp shuffles), then"
                add("restrict_tree_cache", _cache(rtree, path, kernel), (), f"{mech} transformation {cache}")
                add("restrict_tree_cache16", _cache(rtree, path, kernel, 16), (), f"{mech} row-register-cache, K=16")
    return out, why


def prep(out: Path, rows: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write the naive kernels, the candidates, their problem files and the manifest; return the manifest."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.analyzers.model import FunctionKind
    from warpwise.verify.launch import problem_source

    rows = ROWS if rows is None else rows
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout)
    entries: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for rel, row in rows.items():
        cu = ROOT / rel
        problem = cu.with_name(cu.stem + ".problem.py")
        model = analyze_text(cu.read_bytes(), str(cu))
        fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
        folder = out / s7_19._op_folder(rel)
        folder.mkdir(parents=True, exist_ok=True)
        made, why = candidates(rel, fn.name)
        for key, text, changes, mechanism in [("naive", cu.read_bytes(), (), "none: the naive kernel"), *made]:
            name = f"{cu.stem}__{key}"
            (folder / f"{name}.cu").write_bytes(text)
            src = problem.read_text()
            (folder / f"{name}.problem.py").write_text(problem_source(src, changes, changes) if changes else src)
            entries.append(
                {
                    "original": rel,
                    "candidate": f"{folder.name}/{name}",
                    "kernel": fn.name,
                    "key": key,
                    "mechanism": mechanism,
                    "launch": [c.to_dict() for c in changes],
                    "kind": row["kind"],
                    "target": row["target"],
                }
            )
        if why:
            refused.append({"file": rel, "kernel": fn.name, "why": why})
    manifest = {"commit": commit, "dirty": dirty, "entries": entries, "refused": refused}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def run(prep_dir: Path, out: Path, budget_s: float, command: str) -> int:
    """Run corpus_check over the prep folder on the GPU, then write s9_19.json and s9_19.md under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    corpus_out = out / "corpus"
    check = ROOT / "bench" / "gpu" / "corpus_check.py"
    cmd = [sys.executable, str(check), "--suite", str(prep_dir), "--no-experts", "--out", str(corpus_out)]
    cmd += ["--budget-s", str(budget_s), "--deadline-s", "30"]
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    corpus_file = corpus_out / "corpus_check.json"
    if not corpus_file.is_file():
        print(f"corpus_check wrote no results (exit {proc.returncode})", file=sys.stderr)
        return 1
    manifest = json.loads((prep_dir / "manifest.json").read_text())
    rep = s7_19.report(manifest, json.loads(corpus_file.read_text()))
    rep["what"] = "issue 19, session 9: chained row-register-cache candidates for the row operators below 0.95x eager"
    rep["command"] = command
    (out / "s9_19.json").write_text(json.dumps(rep, indent=1, sort_keys=True))
    text = s7_19.render(rep, command).replace(
        "# Issue 19, session 7: reductions with per-block partials and the Welford layernorm on the GPU",
        "# Issue 19, session 9: row operators with the row kept in registers (chained in one step) on the GPU",
        1,
    )
    (out / "s9_19.md").write_text(text)
    shutil.rmtree(corpus_out / "__pycache__", ignore_errors=True)
    (corpus_out / "corpus_check.md").unlink(missing_ok=True)
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one step."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prep", help="write the candidates (needs warpwise with tree-sitter)")
    p.add_argument("out", type=Path)
    r = sub.add_parser("run", help="check and time on the GPU, write s9_19.json and s9_19.md")
    r.add_argument("--prep", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--budget-s", type=float, default=60.0)
    args = ap.parse_args(argv)
    if args.step == "prep":
        m = prep(args.out)
        got = len([e for e in m["entries"] if e["key"] != "naive"])
        print(f"{got} candidates for {len(ROWS)} rows; not made: {json.dumps(m['refused'])}")
        return 0
    command = "python3 bench/row_coop/s9_19.py " + " ".join(argv if argv is not None else sys.argv[1:])
    return run(args.prep, args.out, args.budget_s, command)


if __name__ == "__main__":
    sys.exit(main())
