"""scripts/check_vsix.py: a platform-specific VSIX is checked against its target, down to its native headers.

`make vsix-platforms` (in .ci/run) builds every target and runs the checker on the real packages; these tests show
the checker itself catches each kind of wrong package, from synthetic archives.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


check_vsix = _load("check_vsix")
bundle_libs = _load("bundle_libs")

PACKAGES = ("warpwise", "pygls", "lsprotocol", "pathspec", "pydantic")


def elf(machine: int) -> bytes:
    return b"\x7fELF\x02\x01\x01" + b"\0" * 11 + struct.pack("<H", machine) + b"\0" * 40


def pe(machine: int) -> bytes:
    head = bytearray(b"MZ" + b"\0" * 0x7E)
    struct.pack_into("<I", head, 0x3C, 0x80)
    return bytes(head) + b"PE\0\0" + struct.pack("<H", machine) + b"\0" * 32


def macho(cpu: int) -> bytes:
    return b"\xcf\xfa\xed\xfe" + struct.pack("<I", cpu) + b"\0" * 24


def fat(*cpus: int) -> bytes:
    out = b"\xca\xfe\xba\xbe" + struct.pack(">I", len(cpus))
    for cpu in cpus:
        out += struct.pack(">IIIII", cpu, 0, 0, 0, 0)
    return out


def vsix(
    tmp_path: Path,
    target: str | None,
    natives: dict[str, bytes],
    bundle: dict | None = None,
    packages: tuple[str, ...] = PACKAGES,
) -> str:
    path = tmp_path / f"w-{target}.vsix"
    identity = f'<Identity Id="warpwise" Version="0.1.0" Publisher="warpwise"{f" TargetPlatform={chr(34)}{target}{chr(34)}" if target else ""}/>'
    manifest = f'<PackageManifest xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011"><Metadata>{identity}</Metadata></PackageManifest>'
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("extension.vsixmanifest", manifest)
        z.writestr("extension/package.json", "{}")
        if bundle is not None:
            z.writestr("extension/bundled/libs/bundle.json", json.dumps(bundle))
            for pkg in packages:
                z.writestr(f"extension/bundled/libs/{pkg}/__init__.py", "")
        for name, data in natives.items():
            z.writestr(f"extension/bundled/libs/{name}", data)
    return str(path)


def good_win(tmp_path: Path, **over: object) -> str:
    natives = {
        "cp312/tree_sitter/_binding.cp312-win_amd64.pyd": pe(0x8664),
        "cp312/yaml/_yaml.cp312-win_amd64.pyd": pe(0x8664),
        "cp312/pydantic_core/_pydantic_core.cp312-win_amd64.pyd": pe(0x8664),
        "abi3/tree_sitter_cuda/_binding.pyd": pe(0x8664),
    }
    natives.update(over.pop("natives", {}))  # type: ignore[arg-type]
    bundle = {"target": "win32-x64", "platform": "win32", "arch": "x64", "pythons": ["3.12"]}
    bundle.update(over.pop("bundle", {}))  # type: ignore[arg-type]
    return vsix(tmp_path, str(over.pop("target", "win32-x64")), natives, bundle)


def test_a_well_formed_platform_vsix_passes(tmp_path: Path) -> None:
    assert check_vsix.check(good_win(tmp_path), "win32-x64") == []
    assert check_vsix.check(good_win(tmp_path), None) == []  # the target it declares


@pytest.mark.parametrize(
    ("over", "words"),
    [
        ({"natives": {"cp312/yaml/_yaml.cp312-win_amd64.pyd": elf(0x3E)}}, "is elf for x86_64, not pe for x86_64"),
        ({"natives": {"abi3/tree_sitter_cuda/_binding.pyd": pe(0xAA64)}}, "is pe for arm64, not pe for x86_64"),
        ({"natives": {"cp312/junk.pyd": b"not a library"}}, "is not a native library"),
        ({"bundle": {"target": "linux-x64"}}, "bundle.json is for 'linux-x64'"),
        ({"bundle": {"pythons": ["3.12", "3.13"]}}, "lists CPython 3.13 but"),
        ({"target": "win32-arm64"}, "expected 'win32-x64'"),
    ],
)
def test_each_kind_of_wrong_package_is_named(tmp_path: Path, over: dict, words: str) -> None:
    problems = check_vsix.check(good_win(tmp_path, **over), "win32-x64")
    assert any(words in p for p in problems), problems


def test_missing_packages_and_a_universal_vsix_with_libraries_are_caught(tmp_path: Path) -> None:
    bundle = {"target": "linux-x64", "platform": "linux", "arch": "x64", "pythons": ["3.12"]}
    natives = {"cp312/tree_sitter/_binding.cpython-312-x86_64-linux-gnu.so": elf(0x3E)}
    problems = check_vsix.check(vsix(tmp_path, "linux-x64", natives, bundle, packages=("pygls",)), "linux-x64")
    assert any("package `warpwise` is missing" in p for p in problems)
    universal = vsix(tmp_path, None, natives, bundle)
    assert any("a universal VSIX carries" in p for p in check_vsix.check(universal, None))
    assert check_vsix.check(vsix(tmp_path, None, {}), None) == []


def test_headers_of_every_format_are_read() -> None:
    assert check_vsix.binary_kind(elf(0xB7)) == ("elf", frozenset({"arm64"}))
    assert check_vsix.binary_kind(macho(0x0100000C)) == ("macho", frozenset({"arm64"}))
    assert check_vsix.binary_kind(fat(0x01000007, 0x0100000C)) == ("macho", frozenset({"x86_64", "arm64"}))
    assert check_vsix.binary_kind(pe(0x8664)) == ("pe", frozenset({"x86_64"}))
    assert check_vsix.binary_kind(b"#!/bin/sh\n") is None


def test_bundle_targets_agree_with_the_checker_and_the_extension() -> None:
    """Every target bundle_libs.py builds is one the checker knows, with Node's platform and arch names."""
    assert set(bundle_libs.TARGETS) == set(check_vsix.TARGET_BINARIES)
    for name, (platform, arch, tags) in bundle_libs.TARGETS.items():
        assert name.split("-")[0] in ("linux", "darwin", "win32", "alpine") and arch in ("x64", "arm64")
        assert platform in ("linux", "darwin", "win32") and tags
    makefile = (ROOT / "Makefile").read_text()
    targets = next(line for line in makefile.splitlines() if line.startswith("VSIX_TARGETS"))
    assert set(targets.split("=", 1)[1].split()) <= set(bundle_libs.TARGETS)
    assert "make vsix-platforms" in (ROOT / ".ci" / "run").read_text()
