"""scripts/check_wheel.py: a wheel that misses a tracked file of a package folder, or holds a stray one, fails."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "scripts" / "check_wheel.py")
assert _spec is not None and _spec.loader is not None
check_wheel = importlib.util.module_from_spec(_spec)
sys.modules["check_wheel"] = check_wheel
_spec.loader.exec_module(check_wheel)


def _wheel(tmp_path: Path, entries: list[str], name: str | None = None) -> Path:
    path = tmp_path / (name or f"warpwise-{check_wheel.version()}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for e in entries:
            z.writestr(e, "")
    return path


def test_expected_entries_map_folders_to_packages() -> None:
    expected = check_wheel.expected_entries()
    assert expected["warpwise/skills/card.schema.json"] == "skills/card.schema.json"
    assert expected["warpwise/server/settings.schema.json"] == "server/settings.schema.json"
    assert expected["warpwise/analyzers/suppressions.py"] == "analyzers/suppressions.py"
    assert any(e.startswith("warpwise/skills/") and e.endswith(".md") for e in expected)
    assert not any(e.startswith("warpwise/tests/") for e in expected)


def test_a_complete_wheel_passes(tmp_path: Path) -> None:
    entries = [*check_wheel.expected_entries(), f"warpwise-{check_wheel.version()}.dist-info/METADATA"]
    assert check_wheel.main([str(_wheel(tmp_path, entries))]) == 0


def test_a_missing_data_file_is_named(tmp_path: Path, capsys) -> None:
    entries = [e for e in check_wheel.expected_entries() if e != "warpwise/skills/card.schema.json"]
    assert check_wheel.main([str(_wheel(tmp_path, entries))]) == 1
    assert "missing skills/card.schema.json" in capsys.readouterr().err


def test_a_stray_top_level_file_and_a_wrong_version_fail(tmp_path: Path, capsys) -> None:
    entries = [*check_wheel.expected_entries(), "server/__init__.py"]
    assert check_wheel.main([str(_wheel(tmp_path, entries))]) == 1
    assert "server/__init__.py is outside the warpwise package" in capsys.readouterr().err
    assert check_wheel.main([str(_wheel(tmp_path, entries, "warpwise-0.0.0-py3-none-any.whl"))]) == 1


def test_the_version_has_one_source(capsys) -> None:
    import tomllib

    import pytest

    from warpwise import __version__
    from warpwise.cli import main

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert check_wheel.version() == __version__
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"warpwise {__version__}\n"


def test_card_fixtures_are_test_data_and_a_card_folder_maps_into_the_package(monkeypatch) -> None:
    files = ["skills/some-card/card.md", "skills/some-card/fixtures/positive.cu", "lineages/corpus/x/k.cu", "README.md"]
    monkeypatch.setattr(check_wheel, "tracked_files", lambda: files)
    expected = check_wheel.expected_entries()
    assert expected == {
        "warpwise/skills/some-card/card.md": "skills/some-card/card.md",
        "warpwise/lineages/corpus/x/k.cu": "lineages/corpus/x/k.cu",
    }
