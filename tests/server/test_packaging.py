"""The server's packages are all listed in pyproject.toml, so a wheel install has the whole server."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_server_package_is_packaged() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = set(config["tool"]["setuptools"]["packages"])
    found = {
        "warpwise.server" + ".".join(("", *init.parent.relative_to(ROOT / "server").parts)).rstrip(".")
        for init in (ROOT / "server").rglob("__init__.py")
    }
    assert found <= packages, f"add {sorted(found - packages)} to [tool.setuptools] packages"
