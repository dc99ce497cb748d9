"""Prepare the GPU check of the transformations of issue 19 part B on both naive suites: the tiled copy of
`strided-transpose-access` (transposes) and the block-private copy of `per-thread-global-atomics` (histograms).

Transposes: for every kernel of `bench/suite` and `bench/suite_ood` whose strided copy the card recognises
(`recognise_transpose`), and for each variant in VARIANTS (tile size; the launch kept as the problem file says, or
one block of the given shape per tile), this writes the rewritten kernel and a problem file that launches it as
the variant says into OUT/<operator>/<style>__<variant>.cu, in the layout of a suite folder, so
`bench/gpu/corpus_check.py --suite OUT` checks each candidate against the problem's torch reference and times it
against torch eager and the copy bandwidth. OUT/manifest.json lists, for each candidate, the original file, the
kernel, the variant, the mechanism and the `LaunchChange`s, which `bench/row_coop/gate_check.py OUT` reads to
verify each candidate against its naive kernel through the gate. Kernels the recogniser refuses are listed with
the reason.

Histograms: for every kernel whose one update is an integer `atomicAdd(&bins[k], v)` with a proved bin range
(`recognise_histogram`), the private copy with the launch kept and, where the guard proves which blocks work,
coarsened with the grid capped at HIST_CAPS blocks.

Usage: .venv/bin/python bench/transforms_b/prep.py OUT
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import builtin_library
from warpwise.verify.launch import LaunchChange, problem_source

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("bench/suite", "bench/suite_ood")
# (label, tile, block per tile or None for the launch kept)
VARIANTS = (
    ("t32_kept", 32, None),
    ("t32_b32x8", 32, (32, 8, 1)),
    ("t64_b32x8", 64, (32, 8, 1)),
    ("t64_b32x16", 64, (32, 16, 1)),
)


HIST_CAPS = (1024, 4096)


def tile_changes(py: dict[str, str | None], tile: int, block: tuple[int, int, int]) -> tuple[LaunchChange, ...] | None:
    """Return the launch changes of one block per tile: grid.x = the number of tiles, grid.y = grid.z = 1."""
    rows, cols = py.get("rows"), py.get("cols")
    if rows is None or cols is None:
        return None
    tiles = f"max(1, (-(-({rows}) // {tile})) * (-(-({cols}) // {tile})))"
    return (
        LaunchChange("grid", 0, tiles, f"grid.x = tiles of {tile} x {tile}"),
        LaunchChange("grid", 1, "1", "grid.y = 1"),
        LaunchChange("grid", 2, "1", "grid.z = 1"),
        *(LaunchChange("block", d, str(block[d]), f"block.{'xyz'[d]} = {block[d]}") for d in range(3)),
    )


def main(out: Path) -> int:
    """Write the candidates, their problem files and the manifest."""
    card = builtin_library().get("strided-transpose-access")
    assert card is not None and card.rules is not None
    rules = card.rules
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    entries, refused = [], []
    for suite in SUITES:
        for cu in sorted((ROOT / suite).glob("*/*.cu")):
            problem = cu.with_name(cu.stem + ".problem.py")
            if not problem.exists():
                continue
            model = analyze_text(cu.read_bytes(), str(cu))
            rel = str(cu.relative_to(ROOT))
            for fn in model.functions:
                if fn.kind is not FunctionKind.KERNEL:
                    continue
                tk, why = rules.recognise_transpose(model, fn)
                if tk is None:
                    if cu.parent.name == "transpose":
                        refused.append({"file": rel, "kernel": fn.name, "why": why})
                    continue
                for label, tile, block in VARIANTS:
                    text = rules.rewrite_source(model, fn.name, tile)
                    changes = () if block is None else tile_changes(tk.python, tile, block)
                    if text is None or changes is None:
                        refused.append({"file": rel, "kernel": fn.name, "why": f"no rewrite for {label}"})
                        continue
                    op = cu.parent.name + ("_ood" if suite.endswith("_ood") else "")
                    name = f"{cu.stem}__{label}"
                    dst = out / op / f"{name}.cu"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.write_bytes(text)
                    dst.with_name(f"{name}.problem.py").write_text(
                        problem_source(problem.read_text(), changes, changes)
                    )
                    entries.append(
                        {
                            "original": rel,
                            "candidate": str(dst.relative_to(out)),
                            "kernel": fn.name,
                            "mapping": label,
                            "copy": tk.summary,
                            "mechanism": f"transformation strided-transpose-access (tiled copy), params tile={tile} "
                            + ("launch kept" if block is None else f"one {block[0]}x{block[1]} block per tile"),
                            "launch": [c.to_dict() for c in changes],
                        }
                    )
    hist = builtin_library().get("per-thread-global-atomics")
    assert hist is not None and hist.rules is not None
    for suite in reversed(SUITES):  # the OOD suite first: the suite's naive histogram takes 276 ms a run
        for cu in sorted((ROOT / suite).glob("*/*.cu")):
            problem = cu.with_name(cu.stem + ".problem.py")
            if not problem.exists():
                continue
            model = analyze_text(cu.read_bytes(), str(cu))
            rel = str(cu.relative_to(ROOT))
            for fn in model.functions:
                if fn.kind is not FunctionKind.KERNEL or not any(c.name.startswith("atomic") for c in fn.calls):
                    continue
                h, why = hist.rules.recognise_histogram(model, fn)
                if h is None:
                    refused.append({"file": rel, "kernel": fn.name, "why": why})
                    continue
                variants: list[tuple[str, bool, tuple[LaunchChange, ...]]] = [("priv_kept", False, ())]
                if h.blocks is not None:
                    for cap in HIST_CAPS:
                        change = LaunchChange("grid", 0, f"max(1, min(value, {cap}))", f"grid.x = min(grid.x, {cap})")
                        variants.append((f"priv_coarse_cap{cap}", True, (change,)))
                else:
                    refused.append({"file": rel, "kernel": fn.name, "why": f"not coarsened: {h.why_not_coarsened}"})
                for label, coarsen, changes in variants:
                    text = hist.rules.rewrite_source(model, fn.name, coarsen)
                    if text is None:
                        refused.append({"file": rel, "kernel": fn.name, "why": f"no rewrite for {label}"})
                        continue
                    op = cu.parent.name + ("_ood" if suite.endswith("_ood") else "")
                    name = f"{cu.stem}__{label}"
                    dst = out / op / f"{name}.cu"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.write_bytes(text)
                    dst.with_name(f"{name}.problem.py").write_text(
                        problem_source(problem.read_text(), changes, changes)
                    )
                    entries.append(
                        {
                            "original": rel,
                            "candidate": str(dst.relative_to(out)),
                            "kernel": fn.name,
                            "mapping": label,
                            "copy": f"atomicAdd(&{h.base}[{h.index}], {h.value}), bins [{h.low}, {h.high}]",
                            "mechanism": "transformation per-thread-global-atomics (block-private copy), params "
                            + ("coarsened, " + changes[0].text if coarsen else "launch kept"),
                            "launch": [c.to_dict() for c in changes],
                        }
                    )
    (out / "manifest.json").write_text(
        json.dumps({"commit": commit, "entries": entries, "refused": refused}, indent=1) + "\n"
    )
    print(f"{len(entries)} candidates, {len(refused)} refused", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
