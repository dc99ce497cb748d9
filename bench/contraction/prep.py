"""Prepare the GPU check of the untiled-contraction rewrite: naive kernels and their rewrites, as one manifest.

Runs where warpwise is installed (tree-sitter). For each naive kernel of the card's fixtures (and the suite's own
`bench/suite/matmul/naive.cu`) it writes the kernel alone (host code dropped: the GPU script launches through
CuPy/NVRTC) and the rewritten kernel for each tile configuration. Usage:

    .venv/bin/python bench/contraction/prep.py OUT_DIR
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import builtin_library

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "skills" / "untiled-contraction"
SOURCES = {
    "suite_matmul_naive": ROOT / "bench" / "suite" / "matmul" / "naive.cu",
    "nn_basic": CARD / "fixtures" / "pos_nn_basic.cu",
    "restyled_macros": CARD / "fixtures" / "pos_restyled_macros.cu",
    "uint_typedef": CARD / "fixtures" / "pos_uint_typedef.cu",
    "swapped_roles": CARD / "fixtures" / "pos_swapped_roles.cu",
    "transposed_b": CARD / "fixtures" / "pos_transposed_b.cu",
    "alpha_beta_tn": CARD / "fixtures" / "pos_alpha_beta_tn.cu",
    "while_tt": CARD / "fixtures" / "pos_while_tt.cu",
}
TILES = [
    (128, 128, 8, 8, 8, 0),
    (128, 128, 8, 8, 8, 2),
    (128, 128, 16, 8, 8, 0),
    (128, 128, 16, 8, 8, 2),
    (64, 128, 16, 4, 8, 0),
    (128, 64, 16, 8, 4, 0),
    (64, 64, 16, 4, 4, 0),
]


def _module():
    card = builtin_library().get("untiled-contraction")
    if card is None or card.rules is None:
        raise SystemExit("the untiled-contraction card did not load (warpwise cards lint skills/)")
    return card.rules


def _device_only(text: bytes) -> str:
    """Return the text with host functions removed (they launch with <<<>>>, which NVRTC does not compile)."""
    model = analyze_text(text)
    cuts = sorted((f.base, f.base + f.length) for f in model.functions if f.kind is FunctionKind.HOST)
    out, pos = bytearray(), 0
    for a, b in cuts:
        out += text[pos:a]
        pos = b
    out += text[pos:]
    return out.decode()


def main(out_dir: str) -> None:
    mod = _module()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    manifest = {"commit": commit, "styles": {}}
    for style, path in SOURCES.items():
        text = path.read_bytes()
        model = analyze_text(text, str(path))
        fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
        c, why = mod.recognise(model, fn)
        if c is None:
            raise SystemExit(f"{path}: not recognised: {why}")
        entry = {
            "kernel": fn.name,
            "source": str(path.relative_to(ROOT)),
            "layout": c.layout,
            "naive": _device_only(text),
        }
        gens = {}
        for t in TILES:
            tiles = mod.Tiles(*t)
            new = mod.rewrite_source(model, fn.name, tiles)
            gens[tiles.key] = {"threads": tiles.threads, "source": _device_only(new)}
        entry["generated"] = gens
        manifest["styles"][style] = entry
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {out / 'manifest.json'} ({len(manifest['styles'])} styles, {len(TILES)} tile configurations)")


if __name__ == "__main__":
    main(sys.argv[1])
