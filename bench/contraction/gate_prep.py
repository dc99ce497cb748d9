"""Prepare the gate run of the contraction rewrite on naive SGEMMs of the public lineages (run here, not on the GPU).

The public kernels are never committed: this script reads each named version from its mirror (the `fetch` tool's
bare git directories) at the commit `lineages/public/INDEX.yaml` pins, keeps the kernel's own lines (the index's
`lines`), and writes it beside a problem file of ours that extends the lineage's shared problem file
(`lineages/public/problems/`), into a folder the GPU batch carries. Usage:

    .venv/bin/python bench/contraction/gate_prep.py --mirrors /work/.mirror --out DIR --src-rel ../src

`--src-rel` is where the carried warpwise source lies relative to DIR/public (the problem files name the shared
problem file through it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from warpwise.lineages.public_index import load_index, read_file

# (lineage, version, extra problem-file lines): the naive SGEMMs the batch verifies the rewrite on.
VERSIONS = [
    ("learncuda-sgemm", "v1", "sgemm_plain", []),
    (
        "cudacodes-sgemm",
        "naive",
        "sgemm_plain",
        [
            "_base_make_inputs, _base_reference = make_inputs, reference",
            "",
            "",
            "def make_inputs(seed):",
            '    """Return the shared inputs under the kernel\'s own names (Ad, Bd, Cd)."""',
            "    return {_CC.get(k, k): v for k, v in _base_make_inputs(seed).items()}",
            "",
            "",
            "def reference(inputs):",
            '    """Return the shared reference under the kernel\'s own output name."""',
            "    back = {v: k for k, v in _CC.items()}",
            '    return {"Cd": _base_reference({back.get(k, k): v for k, v in inputs.items()})["C"]}',
            "",
            "",
        ],
    ),
    ("wangzyon-sgemm", "k1", "sgemm", []),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--src-rel", default="../src")
    args = ap.parse_args()
    lineages = {lin.id: lin for lin in load_index()}
    out = args.out / "public"
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for lid, vid, problem, extra in VERSIONS:
        lin = lineages[lid]
        ver = next(v for v in lin.versions if v.id == vid)
        text = read_file(args.mirrors, lin.repo, lin.commit, ver.file).decode("utf-8", "replace")
        if ver.lines is not None:
            lines = text.splitlines()[ver.lines[0] - 1 : ver.lines[1]]
            text = "\n".join(lines) + "\n"
        stem = f"{lid}-{vid}".replace("-", "_")
        header = f"// {lin.repo}@{lin.commit}: {ver.file} lines {ver.lines} (kernel `{ver.kernel}`), not ours\n"
        (out / f"{stem}.cu").write_text(header + text)
        prob = [
            f'"""Problem for {lin.repo} {ver.file} `{ver.kernel}` (ours): the lineage\'s shared problem file."""',
            "",
            f'problem_extends = "{args.src_rel}/lineages/public/problems/{problem}.problem.py"',
            f'kernel = "{ver.kernel}"',
            *extra,
            f'_variant_launch = VARIANTS["{lid}/{vid}"]["launch"]',
            "",
            "",
            "def launch(inputs):",
            '    """Return the launch of the repository\'s host code."""',
            "    return _variant_launch(inputs)",
            "",
        ]
        (out / f"{stem}.problem.py").write_text("\n".join(prob))
        manifest.append(
            {
                "lineage": lid,
                "version": vid,
                "repo": lin.repo,
                "commit": lin.commit,
                "file": ver.file,
                "lines": list(ver.lines) if ver.lines else None,
                "kernel": ver.kernel,
                "path": f"public/{stem}.cu",
            }
        )
    (args.out / "public.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {len(manifest)} public kernels to {out}")


if __name__ == "__main__":
    main()
