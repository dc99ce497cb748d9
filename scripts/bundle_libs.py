"""Bundle the language server's Python libraries into the VS Code extension (`vscode-extension/bundled/libs`).

    python scripts/bundle_libs.py WHEEL OUT [--pythons 3.11,3.12,3.13]

`OUT/` receives warpwise and every pure-Python dependency (pygls, lsprotocol, pydantic, ...), `OUT/abi3/` the
compiled ones built for CPython's stable ABI (tree-sitter-cuda), and `OUT/cpXY/` those built for one CPython X.Y
(tree-sitter, pydantic-core, PyYAML), all for this machine's platform, so that the extension runs the server with
any of those Pythons the user has, with nothing installed in it:
`PYTHONPATH=OUT:OUT/abi3:OUT/cpXY python -m warpwise serve`. `OUT/bundle.json` says which platform and Pythons the
bundle serves; the extension reads it (`warpwise.importStrategy`: `useBundled`) and falls back to the
interpreter's own packages for any other. Everything comes from the package index as wheels (`pip install
--target --only-binary=:all:`); nothing is compiled.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

PLATFORMS = {
    ("Linux", "x86_64"): ("linux", "x64", ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"])
}


def _install(wheel: Path, target: Path, python: str, tags: list[str]) -> None:
    """Install the wheel and its dependencies for CPython `python` into `target` (wheels only)."""
    abi = "cp" + python.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    cmd += ["--target", str(target)]
    cmd += ["--only-binary=:all:", "--python-version", python, "--implementation", "cp", "--abi", abi]
    for tag in tags:
        cmd += ["--platform", tag]
    subprocess.run([*cmd, str(wheel)], check=True)


def _kind(dist_info: Path) -> str:
    """Return `pure`, `abi3` (compiled against the stable ABI: one copy serves every Python) or `native`."""
    wheel = (dist_info / "WHEEL").read_text()
    if "Root-Is-Purelib: true" in wheel:
        return "pure"
    return "abi3" if "-abi3-" in wheel else "native"


def _move_distribution(dist_info: Path, src: Path, dest: Path) -> None:
    """Move every file a distribution installed (its RECORD) from `src` to `dest`."""
    for line in (dist_info / "RECORD").read_text().splitlines():
        rel = line.split(",")[0]
        if not rel or rel.startswith(".."):
            continue
        source = src / rel
        if source.is_file():
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(source), out)


def main(argv: list[str] | None = None) -> int:
    """Build the bundle; return 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--pythons", default="3.11,3.12,3.13")
    args = ap.parse_args(argv)
    key = (platform.system(), platform.machine())
    if key not in PLATFORMS:
        print(f"bundle_libs: no bundle for {key[0]} {key[1]}; the extension will use the interpreter's packages")
        return 0
    os_name, arch, tags = PLATFORMS[key]
    pythons = [p.strip() for p in args.pythons.split(",") if p.strip()]
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    shared_done: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="warpwise-bundle-") as tmp:
        for python in pythons:
            target = Path(tmp) / python
            _install(args.wheel, target, python, tags)
            native_dir = args.out / ("cp" + python.replace(".", ""))
            for dist_info in sorted(target.glob("*.dist-info")):
                kind = _kind(dist_info)
                if kind == "native":
                    _move_distribution(dist_info, target, native_dir)
                elif dist_info.name not in shared_done:
                    _move_distribution(dist_info, target, args.out if kind == "pure" else args.out / "abi3")
                    shared_done.add(dist_info.name)
    for bin_dir in [args.out / "bin", *args.out.glob("*/bin")]:
        if bin_dir.is_dir():
            shutil.rmtree(bin_dir)
    manifest = {"platform": os_name, "arch": arch, "pythons": pythons, "soabi": sysconfig.get_config_var("SOABI")}
    (args.out / "bundle.json").write_text(json.dumps(manifest, indent=2) + "\n")
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file()) / 2**20
    print(f"bundle_libs: {args.out} ({size:.1f} MiB) for {os_name}-{arch}, CPython {', '.join(pythons)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
