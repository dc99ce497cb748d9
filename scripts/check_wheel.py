"""Check a built wheel against the source tree: every file git tracks under a package folder is in the wheel.

    python scripts/check_wheel.py dist/warpwise-0.1.0-py3-none-any.whl

The folders come from `[tool.setuptools] package-dir` in pyproject.toml (`skills/` is `warpwise/skills/` in the
wheel), so a module in a package that `packages` does not list, or a data file (a card, a schema, a corpus
kernel, a lineage) that no `package-data` glob matches, is named here instead of failing for a user at run time.
The wheel must also hold nothing outside `warpwise/` and its `.dist-info`, and carry the version of
`warpwise/__init__.py`. Files below a `fixtures/` folder (a card's test cases) are test data and not required.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def version() -> str:
    """Return `__version__` from warpwise/__init__.py, read without importing it."""
    tree = ast.parse((ROOT / "warpwise" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return str(ast.literal_eval(node.value))
    raise SystemExit("warpwise/__init__.py defines no __version__")


def tracked_files() -> list[str]:
    """Return the files git tracks (or, outside a git checkout, every file below the root)."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if line and (ROOT / line).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]


TEST_DATA = "fixtures"
"""Tracked files below a `fixtures/` folder (a card's test cases) are test data: the wheel need not carry them."""


def expected_entries() -> dict[str, str]:
    """Return {path in the wheel: source path} for every tracked file under a package folder (test data aside)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dir: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    folders = sorted(((folder.rstrip("/"), pkg) for pkg, folder in package_dir.items()), key=lambda x: -len(x[0]))
    out: dict[str, str] = {}
    for path in tracked_files():
        if TEST_DATA in Path(path).parts[:-1]:
            continue
        for folder, pkg in folders:
            if path.startswith(folder + "/"):
                out[pkg.replace(".", "/") + "/" + path[len(folder) + 1 :]] = path
                break
    return out


def main(argv: list[str]) -> int:
    """Compare the wheel with the tree; print what is missing or extra and return 1 if anything is."""
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    wheel = Path(argv[0])
    v = version()
    if f"-{v}-" not in wheel.name:
        print(f"{wheel.name}: the wheel's version is not warpwise.__version__ ({v})", file=sys.stderr)
        return 1
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = expected_entries()
    missing = sorted(src for entry, src in expected.items() if entry not in names)
    info = f"warpwise-{v}.dist-info/"
    stray = sorted(n for n in names if not (n.startswith("warpwise/") or n.startswith(info)))
    for src in missing:
        print(
            f"{wheel.name}: missing {src}: add its package to [tool.setuptools] packages or a glob for it to "
            "[tool.setuptools.package-data] in pyproject.toml",
            file=sys.stderr,
        )
    for name in stray:
        print(f"{wheel.name}: {name} is outside the warpwise package", file=sys.stderr)
    if missing or stray:
        return 1
    data = sum(1 for e in expected if not e.endswith(".py"))
    print(
        f"{wheel.name}: all {len(expected)} tracked files of the package folders are in the wheel ({data} data files)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
