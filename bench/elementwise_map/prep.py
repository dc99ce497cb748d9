"""Prepare the GPU check of the `scalar-elementwise-map` transformation on both naive suites.

For every kernel of `bench/suite` and `bench/suite_ood` that the card recognises (`recognise`), and for each number
of vectors per array per thread in VECTORS, this writes the rewritten kernel and a problem file that launches it
(the guarded forms with grid.x divided by the elements per thread, as the search's `grid_div` launch step does;
the stride loops with the launch kept) into OUT/<operator>/<style>__v<V>.cu, in the layout of a suite folder, so
`bench/gpu/corpus_check.py --suite OUT` checks each candidate against the problem's torch reference and times it
against torch eager and the copy bandwidth. OUT/manifest.json lists each candidate's original file, kernel,
variant, mechanism and `LaunchChange`s, which `bench/row_coop/gate_check.py OUT` reads to verify each candidate
against its naive kernel through the gate. Kernels of the elementwise operators that the card refuses are listed
with the reason.

Usage: .venv/bin/python bench/elementwise_map/prep.py OUT
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
VECTORS = (1, 2, 4)
MAPS = {"bias_gelu", "gelu_f16", "bias_relu", "gelu_tanh", "silu_mul"}
"""The elementwise operators of the suites: a refusal there is listed."""


def main(out: Path) -> int:
    """Write the candidates, their problem files and the manifest."""
    card = builtin_library().get("scalar-elementwise-map")
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
                shape, why = rules.recognise(model, fn)
                if shape is None:
                    if cu.parent.name in MAPS:
                        refused.append({"file": rel, "kernel": fn.name, "why": why})
                    continue
                if cu.parent.name not in MAPS:
                    continue  # Transposes have their own transformation; this batch measures the maps.
                for v in VECTORS:
                    text = rules.rewrite_source(model, fn.name, v)
                    if text is None:
                        refused.append({"file": rel, "kernel": fn.name, "why": f"no rewrite for v{v}"})
                        continue
                    total = shape.lanes * v
                    changes: tuple[LaunchChange, ...] = ()
                    if shape.form != "loop":
                        changes = (
                            LaunchChange(
                                "grid", 0, f"max(1, -(-(value) // {total}))", f"grid.x / {total} (rounded up)"
                            ),
                        )
                    op = cu.parent.name + ("_ood" if suite.endswith("_ood") else "")
                    name = f"{cu.stem}__v{v}"
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
                            "mapping": f"v{v}",
                            "form": shape.form + (f" ({shape.stride_kind}-stride)" if shape.stride_kind else ""),
                            "vectorized": list(shape.vectorized),
                            "mechanism": f"transformation scalar-elementwise-map, params vectors={v} "
                            f"({total} elements per thread as {v} x {shape.vector}"
                            + (f", grid.x / {total})" if changes else ", launch kept)"),
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
