"""Bundle the language server's Python libraries into the VS Code extension (`vscode-extension/bundled/libs`).

    python scripts/bundle_libs.py WHEEL OUT [--target linux-x64] [--pythons 3.11,3.12,3.13]

`OUT/` receives warpwise and every pure-Python dependency (pygls, lsprotocol, pydantic, ...), `OUT/abi3/` the
compiled ones built for CPython's stable ABI (tree-sitter-cuda), and `OUT/cpXY/` those built for one CPython X.Y
(tree-sitter, pydantic-core, PyYAML), all for one platform (`--target`, a VS Code target such as `win32-x64`;
this machine's by default), so that the extension runs the server with any of those Pythons the user has, with
nothing installed in it:
`PYTHONPATH=OUT:OUT/abi3:OUT/cpXY python -m warpwise serve`. `OUT/bundle.json` says which platform and Pythons the
bundle serves; the extension reads it (`warpwise.importStrategy`: `useBundled`) and falls back to the
interpreter's own packages for any other. Everything comes from the package index as wheels (`pip install
--target --only-binary=:all:`); nothing is compiled. A Python for which the package index has no wheel of some
dependency on that platform is left out of the bundle and named (the manifest lists only the Pythons it serves);
a target none of whose Pythons can be served fails. `scripts/check_vsix.py` checks a packaged VSIX against its
target, down to the machine type in every native library's header.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# VS Code target -> (Node's process.platform, process.arch, the wheel platform tags that serve it). The macOS
# tags name the oldest macOS VS Code itself supports (11); pip also takes wheels for older ones.
TARGETS: dict[str, tuple[str, str, list[str]]] = {
    "linux-x64": ("linux", "x64", ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"]),
    "linux-arm64": ("linux", "arm64", ["manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64"]),
    "darwin-x64": ("darwin", "x64", ["macosx_11_0_x86_64"]),
    "darwin-arm64": ("darwin", "arm64", ["macosx_11_0_arm64"]),
    "win32-x64": ("win32", "x64", ["win_amd64"]),
    "win32-arm64": ("win32", "arm64", ["win_arm64"]),
    "alpine-x64": ("linux", "x64", ["musllinux_1_2_x86_64"]),
}
HOSTS = {
    ("Linux", "x86_64"): "linux-x64",
    ("Linux", "aarch64"): "linux-arm64",
    ("Darwin", "x86_64"): "darwin-x64",
    ("Darwin", "arm64"): "darwin-arm64",
    ("Windows", "AMD64"): "win32-x64",
    ("Windows", "ARM64"): "win32-arm64",
}


def _install(wheel: Path, target: Path, python: str, tags: list[str]) -> str | None:
    """Install the wheel and its dependencies for CPython `python` into `target` (wheels only).

    Return None on success, else pip's last error line (the index has no wheel of some dependency there).
    """
    abi = "cp" + python.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    cmd += ["--target", str(target)]
    cmd += ["--only-binary=:all:", "--python-version", python, "--implementation", "cp", "--abi", abi]
    for tag in tags:
        cmd += ["--platform", tag]
    proc = subprocess.run([*cmd, str(wheel)], capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return None
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    # pip's last error names the requirement it could not satisfy; earlier ones list versions it ignored.
    return errors[-1] if errors else f"pip exited with {proc.returncode}"


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
    ap.add_argument("--target", choices=sorted(TARGETS), help="a VS Code target (default: this machine's)")
    args = ap.parse_args(argv)
    target_name = args.target or HOSTS.get((platform.system(), platform.machine()))
    if target_name is None:
        print(
            f"bundle_libs: no bundle for {platform.system()} {platform.machine()}; the extension will use the "
            "interpreter's packages"
        )
        return 0
    os_name, arch, tags = TARGETS[target_name]
    wanted = [p.strip() for p in args.pythons.split(",") if p.strip()]
    pythons: list[str] = []
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    shared_done: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="warpwise-bundle-") as tmp:
        for python in wanted:
            target = Path(tmp) / python
            missing = _install(args.wheel, target, python, tags)
            if missing is not None:
                print(f"bundle_libs: {target_name}: CPython {python} left out: {missing}", file=sys.stderr)
                continue
            pythons.append(python)
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
    if not pythons:
        print(f"bundle_libs: {target_name}: no CPython of {', '.join(wanted)} can be served", file=sys.stderr)
        return 1
    manifest = {"target": target_name, "platform": os_name, "arch": arch, "pythons": pythons}
    (args.out / "bundle.json").write_text(json.dumps(manifest, indent=2) + "\n")
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file()) / 2**20
    print(f"bundle_libs: {args.out} ({size:.1f} MiB) for {target_name}, CPython {', '.join(pythons)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
