"""docs/configuration.md is generated from the settings schema, the extension's manifest and the CLI parser."""

from __future__ import annotations

import json
from pathlib import Path

from warpwise import reference

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"


def test_the_reference_is_up_to_date() -> None:
    assert reference.main(["--check", str(DOC)]) == 0, "run `python -m warpwise.reference docs/configuration.md`"


def test_every_key_and_option_is_documented() -> None:
    text = DOC.read_text()
    schema = json.loads((ROOT / "server" / "settings.schema.json").read_text())
    for key, prop in schema["properties"].items():
        assert f"| `{key}` |" in text, key
        for value in prop.get("enum", []):
            assert f"`{value}`" in text
    manifest = json.loads((ROOT / "vscode-extension" / "package.json").read_text())
    for key in manifest["contributes"]["configuration"]["properties"]:
        assert f"| `{key}` |" in text, key
    for flag in ("--format", "--select", "--ignore", "--fix", "--unsafe-fixes", "--settings-schema", "--version"):
        assert f"`{flag}`" in text, flag


def test_a_stale_reference_is_detected(tmp_path: Path) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text(DOC.read_text().replace("warpwise.compiler.arch", "warpwise.compiler.archx"))
    assert reference.main(["--check", str(stale)]) == 1
    assert reference.main([str(stale)]) == 0 and stale.read_text() == DOC.read_text()
