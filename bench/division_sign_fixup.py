"""Which signed divisions by a power of two does nvcc already compile to a shift? (issue 18)

For each case a kernel is built twice with `nvcc -cubin` (sm_90): once with `x / 2^k` (or `x % 2^k`), once with
the shift (or mask) the `division-by-power-of-two` card would write. When both machine codes are byte-identical the
compiler already emits the shift, and the card must not fire; when they differ the compiler kept the sign
correction. The comparison reads the kernel's `.text` section with `readelf` (binutils), so no disassembler is
needed. Writes bench/results/division_sign_fixup-<date>.json and .md.

    python bench/division_sign_fixup.py
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = [
    ("int t = threadIdx.x", "t / 32", "t >> 5", "a thread index converted to int"),
    ("int i = blockIdx.x * blockDim.x + threadIdx.x", "i / 32", "i >> 5", "a global index in int"),
    ("int t = threadIdx.x + 32 * threadIdx.y", "t % 32", "t & 31", "a 2-D thread index in int"),
    ("int t = threadIdx.x", "(t + n) / 32", "(t + n) >> 5", "a sum with a parameter"),
    ("", "n / 32", "n >> 5", "a parameter"),
    ("unsigned u = threadIdx.x", "u / 32", "u >> 5", "an unsigned value"),
    ("for (int j = 0; j < n; ++j)", "j / 32", "j >> 5", "a loop counter from 0"),
    ("for (int j = 0; j < n; j += 4)", "j % 8", "j & 7", "a loop counter from 0 by 4"),
    ("for (int j = 4; j < n; j += 4)", "(2 * j + 1) / 16", "(2 * j + 1) >> 4", "arithmetic of a loop counter"),
    ("for (int j = threadIdx.x; j < n; j += blockDim.x)", "j / 32", "j >> 5", "a grid-stride counter"),
]


def _kernel(setup: str, expr: str) -> str:
    if setup.startswith("for"):
        return f"__global__ void k(int* out, int n) {{ {setup} out[j] = {expr}; }}\n"
    head = f"{setup}; " if setup else ""
    return f"__global__ void k(int* out, int n) {{ {head}out[threadIdx.x] = {expr}; }}\n"


def _text(nvcc: str, source: str, folder: Path, name: str) -> bytes:
    cu = folder / f"{name}.cu"
    cubin = folder / f"{name}.cubin"
    cu.write_text(source)
    subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", str(cubin), str(cu)], check=True, capture_output=True)
    sections = subprocess.run(["readelf", "-S", "-W", str(cubin)], capture_output=True, text=True).stdout
    name_of = next(w for line in sections.splitlines() for w in line.split() if w.startswith(".text."))
    dump = subprocess.run(["readelf", "-x", name_of, str(cubin)], capture_output=True, text=True).stdout
    return dump.split("\n", 2)[-1].encode()


def main() -> int:
    """Build every case twice and write the results."""
    nvcc = shutil.which("nvcc")
    if nvcc is None or shutil.which("readelf") is None:
        print("needs nvcc and readelf on PATH", file=sys.stderr)
        return 2
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i, (setup, division, shift, what) in enumerate(CASES):
            a = _text(nvcc, _kernel(setup, division), folder, f"d{i}")
            b = _text(nvcc, _kernel(setup, shift), folder, f"s{i}")
            rows.append({"dividend": what, "setup": setup, "division": division, "shift": shift, "same": a == b})
    date = datetime.date.today().isoformat()
    out = Path(__file__).resolve().parent / "results"
    command = "python bench/division_sign_fixup.py"
    doc = {"date": date, "nvcc": version, "arch": "sm_90", "command": command, "cases": rows}
    (out / f"division_sign_fixup-{date}.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        f"# Signed division by a power of two: does nvcc already shift? ({date})",
        "",
        f"`{command}`; {version}; `nvcc -arch=sm_90 -cubin`, no GPU needed. Each case is built with the division and",
        "with the shift the `division-by-power-of-two` card writes; *same* means byte-identical machine code (the",
        "compiler already emits the shift, so the card must not fire).",
        "",
        "| dividend | code | division | shift | machine code |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        verdict = "same (no gain)" if r["same"] else "differs (sign correction)"
        setup = f"`{r['setup']}`" if r["setup"] else "(parameter `n`)"
        lines.append(f"| {r['dividend']} | {setup} | `{r['division']}` | `{r['shift']}` | {verdict} |")
    (out / f"division_sign_fixup-{date}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
