"""The editor's `warpwise.build.*` settings map onto the same build model as `[tool.warpwise]`."""

from __future__ import annotations

from pathlib import Path

from warpwise.server.settings import parse_settings
from warpwise.server.verification import build_flags


def test_build_settings_give_include_dirs_defines_std_flags_and_arch(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    raw = {
        "build": {
            "includeDirs": ["inc"],
            "defines": ["BLOCK=128"],
            "std": "c++20",
            "nvrtcFlags": ["--use_fast_math"],
            "nvccFlags": ["-lineinfo"],
            "arch": "sm_80",
        }
    }
    settings, problems = parse_settings(raw)
    assert problems == []
    flags = build_flags(str(src), settings)
    assert flags.include_dirs == (str((tmp_path / "inc").resolve()),)
    assert flags.defines == ("BLOCK=128",) and flags.std == "c++20" and flags.arch == "sm_80"
    assert flags.nvrtc_flags == ("--use_fast_math",) and flags.nvcc_flags == ("-lineinfo",)
    # The hover's line: where the file's flags came from.
    assert flags.describe() == "flags from the editor settings `warpwise.build.*`"


def test_project_configuration_comes_first_and_the_editor_adds_to_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.warpwise]\ndefines = ["A=1"]\n')
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    settings, _ = parse_settings({"build.defines": ["B=2"]})
    flags = build_flags(str(src), settings)
    assert flags.defines == ("A=1", "B=2")
    assert "pyproject.toml" in flags.describe() and "warpwise.build.*" in flags.describe()


def test_a_build_setting_of_the_wrong_type_is_named_and_replaced_by_its_default() -> None:
    settings, problems = parse_settings({"build.defines": "A=1", "build.std": "gnu17"})
    assert {p.key for p in problems} == {"build.defines", "build.std"}
    assert settings.build_defines == () and settings.build_std == ""
    assert any("not a list of strings" in p.message for p in problems)
