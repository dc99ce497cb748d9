"""Check a packaged VSIX against the VS Code target it was built for.

    python scripts/check_vsix.py dist/vsix/warpwise-win32-x64.vsix [--target win32-x64]

A platform-specific VSIX must say its target in `extension.vsixmanifest` (`TargetPlatform`), carry a bundle
(`extension/bundled/libs/bundle.json`) for that target with the server's pure-Python packages and, for every
CPython the manifest lists, a `cpXY/` folder of native extension modules; and every native library in it must be
built for the target's operating system and processor, read from its header (ELF `e_machine`, Mach-O `cputype`
including each slice of a universal binary, PE `Machine`). A universal VSIX (no target) must carry no bundle
libraries at all: it falls back to the interpreter's packages and the bundled wheel. Exit 0 when it holds, else 1
with one line per problem.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import zipfile
from pathlib import PurePosixPath
from xml.etree import ElementTree

LIBS = "extension/bundled/libs/"
# The server's packages, pure or native, each of which the bundle must hold (in any of its folders).
PACKAGES = (
    "warpwise",
    "pygls",
    "lsprotocol",
    "pathspec",
    "yaml",
    "pydantic",
    "pydantic_core",
    "tree_sitter",
    "tree_sitter_cuda",
)
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")

# (format, machine) for each target's processor.
TARGET_BINARIES = {
    "linux-x64": ("elf", "x86_64"),
    "linux-arm64": ("elf", "arm64"),
    "alpine-x64": ("elf", "x86_64"),
    "darwin-x64": ("macho", "x86_64"),
    "darwin-arm64": ("macho", "arm64"),
    "win32-x64": ("pe", "x86_64"),
    "win32-arm64": ("pe", "arm64"),
}
_ELF_MACHINES = {0x3E: "x86_64", 0xB7: "arm64"}
_MACHO_CPUS = {0x01000007: "x86_64", 0x0100000C: "arm64"}
_PE_MACHINES = {0x8664: "x86_64", 0xAA64: "arm64"}


def binary_kind(data: bytes) -> tuple[str, frozenset[str]] | None:
    """Return (format, the processors it is built for) from a native library's header, or None if not one."""
    if data[:4] == b"\x7fELF" and len(data) >= 20:
        endian = "<" if data[5] == 1 else ">"
        (machine,) = struct.unpack_from(endian + "H", data, 18)
        return "elf", frozenset({_ELF_MACHINES.get(machine, f"elf-machine-{machine:#x}")})
    if data[:4] in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe") and len(data) >= 8:
        (cpu,) = struct.unpack_from("<I", data, 4)
        return "macho", frozenset({_MACHO_CPUS.get(cpu, f"macho-cpu-{cpu:#x}")})
    if data[:4] == b"\xca\xfe\xba\xbe" and len(data) >= 8:  # a universal (fat) Mach-O: one slice per processor
        (count,) = struct.unpack_from(">I", data, 4)
        cpus = set()
        for i in range(min(count, 16)):
            if 8 + 20 * (i + 1) > len(data):
                break
            (cpu,) = struct.unpack_from(">I", data, 8 + 20 * i)
            cpus.add(_MACHO_CPUS.get(cpu, f"macho-cpu-{cpu:#x}"))
        return "macho", frozenset(cpus)
    if data[:2] == b"MZ" and len(data) >= 64:
        (offset,) = struct.unpack_from("<I", data, 0x3C)
        if data[offset : offset + 4] == b"PE\0\0" and len(data) >= offset + 6:
            (machine,) = struct.unpack_from("<H", data, offset + 4)
            return "pe", frozenset({_PE_MACHINES.get(machine, f"pe-machine-{machine:#x}")})
    return None


def _declared_target(manifest: bytes) -> str | None:
    """Return the `TargetPlatform` of the manifest's `Identity` element, or None (universal, or unreadable)."""
    try:
        root = ElementTree.fromstring(manifest)
    except ElementTree.ParseError:
        return None
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] == "Identity":
            return el.get("TargetPlatform")
    return None


def check(path: str, target: str | None) -> list[str]:
    """Return the problems of the VSIX at `path` (`target`: the one it must be for; default: the one it says)."""
    problems: list[str] = []
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        return [f"{path}: not a VSIX: {exc}"]
    with z:
        names = z.namelist()
        declared = _declared_target(z.read("extension.vsixmanifest") if "extension.vsixmanifest" in names else b"")
        target = target or declared
        libs = [n for n in names if n.startswith(LIBS)]
        if target is None:
            if libs:
                problems.append(f"{path}: a universal VSIX carries {len(libs)} bundled library files")
            return problems
        if declared != target:
            problems.append(f"{path}: extension.vsixmanifest says TargetPlatform={declared!r}, expected {target!r}")
        if target not in TARGET_BINARIES:
            return [*problems, f"{path}: unknown target {target!r}"]
        try:
            bundle = json.loads(z.read(LIBS + "bundle.json"))
        except (KeyError, ValueError) as exc:
            return [*problems, f"{path}: no readable {LIBS}bundle.json ({exc})"]
        if bundle.get("target") != target:
            problems.append(f"{path}: bundle.json is for {bundle.get('target')!r}, not {target!r}")
        pythons = bundle.get("pythons") or []
        if not pythons:
            problems.append(f"{path}: bundle.json serves no Python")
        dirs = {part for n in libs for part in PurePosixPath(n[len(LIBS) :]).parts[:-1]}
        for pkg in PACKAGES:
            if pkg not in dirs:
                problems.append(f"{path}: package `{pkg}` is missing from the bundle")
        fmt, machine = TARGET_BINARIES[target]
        natives = [n for n in libs if n.endswith(NATIVE_SUFFIXES) or ".so." in n]
        for py in pythons:
            folder = f"{LIBS}cp{py.replace('.', '')}/"
            if not any(n.startswith(folder) for n in natives):
                problems.append(f"{path}: bundle.json lists CPython {py} but {folder} holds no native module")
        if not natives:
            problems.append(f"{path}: the bundle holds no native library for {target}")
        for n in natives:
            kind = binary_kind(z.read(n)[:4096])
            if kind is None:
                problems.append(f"{path}: {n} is not a native library")
            elif kind[0] != fmt or machine not in kind[1]:
                problems.append(f"{path}: {n} is {kind[0]} for {', '.join(sorted(kind[1]))}, not {fmt} for {machine}")
        for n in libs:
            if "/__pycache__/" in n or n.startswith(LIBS + "bin/"):
                problems.append(f"{path}: {n} should not be packaged")
                break
    return problems


def main(argv: list[str] | None = None) -> int:
    """Check each VSIX given; print the problems; return 1 when there are any."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vsix", nargs="+")
    ap.add_argument("--target", help="the target every VSIX given must be for")
    args = ap.parse_args(argv)
    bad = 0
    for path in args.vsix:
        problems = check(path, args.target)
        for p in problems:
            print(p, file=sys.stderr)
        bad += bool(problems)
        if not problems:
            print(f"{path}: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
