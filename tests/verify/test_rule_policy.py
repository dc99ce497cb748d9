"""Rule settings of the project configuration: select/ignore, per-file-ignores and severity overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.findings import Severity
from warpwise.verify import project
from warpwise.verify.rule_policy import RulePolicy, policy_for


def _project(tmp_path: Path, table: str, name: str = "pyproject.toml") -> Path:
    header = "[tool.warpwise]\n" if name == "pyproject.toml" else ""
    (tmp_path / name).write_text(header + table)
    for rel in ("src/k.cu", "src/deep/h.cuh", "tests/a/t.cu", "third_party/x.cu"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("__global__ void k() {}\n")
    return tmp_path


def test_without_configuration_every_rule_reports_at_its_default(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("")
    pol = policy_for(tmp_path / "k.cu")
    assert pol.config is None and pol.enabled("missing-restrict")
    assert pol.severity_of("missing-restrict", Severity.HINT) is Severity.HINT


@pytest.mark.parametrize(
    ("rel", "ignored"),
    [
        ("tests/a/t.cu", {"missing-restrict", "scalar-global-access"}),  # `tests/**`
        ("src/deep/h.cuh", {"missing-restrict", "missing-launch-bounds"}),  # `*.cuh` at any depth
        ("third_party/x.cu", {"missing-restrict", "*"}),  # `/third_party/` anchored, "all"
        ("src/k.cu", {"missing-restrict"}),
    ],
)
def test_per_file_ignores_are_gitignore_globs_relative_to_the_configuration(
    tmp_path: Path, rel: str, ignored: set[str]
) -> None:
    root = _project(
        tmp_path,
        'ignore = ["missing-restrict"]\n'
        "[tool.warpwise.per-file-ignores]\n"
        '"tests/**" = ["scalar-global-access"]\n'
        '"*.cuh" = ["missing-launch-bounds"]\n'
        '"/third_party/" = ["all"]\n',
    )
    pol = policy_for(root / rel)
    for rule in ("missing-restrict", "scalar-global-access", "missing-launch-bounds", "int32-index-overflow"):
        assert pol.enabled(rule) == ("*" not in ignored and rule not in ignored), (rel, rule)


def test_select_restricts_and_the_command_line_replaces_select_and_adds_ignore(tmp_path: Path) -> None:
    root = _project(
        tmp_path, 'select = ["missing-restrict", "scalar-global-access"]\nignore = ["scalar-global-access"]\n'
    )
    pol = policy_for(root / "src/k.cu")
    assert pol.enabled("missing-restrict")
    assert not pol.enabled("scalar-global-access") and not pol.enabled("int32-index-overflow")
    cli = pol.with_cli({"int32-index-overflow", "missing-restrict"}, {"missing-restrict"})
    assert cli.enabled("int32-index-overflow") and not cli.enabled("missing-restrict")
    assert pol.with_cli(None, ()).enabled("missing-restrict")


def test_severity_overrides_and_their_problems(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        "[tool.warpwise.severity]\n"
        '"missing-restrict" = "error"\n'
        '"scalar-global-access" = "Hint"\n'
        '"int32-index-overflow" = "loud"\n'
        '"warpwise-missing-launch-bounds" = "info"\n',
    )
    pol = policy_for(root / "src/k.cu")
    assert pol.severity_of("missing-restrict", Severity.HINT) is Severity.ERROR
    assert pol.severity_of("scalar-global-access", Severity.WARNING) is Severity.HINT
    assert pol.severity_of("int32-index-overflow", Severity.WARNING) is Severity.WARNING
    assert [p.key for p in pol.problems] == ["tool.warpwise.severity.int32-index-overflow"]
    assert "`loud` is not one of error, warning, info, hint" in pol.problems[0].message
    unknown = pol.unknown({"missing-restrict", "scalar-global-access", "int32-index-overflow", "missing-launch-bounds"})
    assert len(unknown) == 1 and "write `missing-launch-bounds`" in unknown[0].message
    assert pol.describe("missing-restrict") == f"severity `error` from `{root / 'pyproject.toml'}`"


@pytest.mark.parametrize(
    ("table", "key", "words"),
    [
        ('per-file-ignores = ["tests"]', "tool.warpwise.per-file-ignores", "must be a table"),
        ('per-file-ignores = { "tests/**" = 3 }', 'tool.warpwise.per-file-ignores."tests/**"', "list of rule ids"),
        ('per-file-ignores = { "" = ["all"] }', 'tool.warpwise.per-file-ignores.""', "empty"),
        ('severity = "hint"', "tool.warpwise.severity", "must be a table"),
        ('severity = { "missing-restrict" = 2 }', "tool.warpwise.severity.missing-restrict", "is not one of"),
    ],
)
def test_bad_rule_settings_are_named_and_never_raise(tmp_path: Path, table: str, key: str, words: str) -> None:
    root = _project(tmp_path, table + "\n")
    config = project.load_config(root / "pyproject.toml")
    assert any(p.key == key and words in p.message for p in config.problems), config.problems
    assert policy_for(root / "src/k.cu").enabled("missing-restrict")


def test_unknown_ids_in_select_ignore_and_per_file_ignores_are_reported(tmp_path: Path) -> None:
    root = _project(
        tmp_path, 'select = ["nope"]\nignore = ["missing-restrict"]\nper-file-ignores = { "*.cu" = ["also-nope"] }\n'
    )
    keys = [p.key for p in policy_for(root / "src/k.cu").unknown({"missing-restrict"})]
    assert keys == ["tool.warpwise.select", 'tool.warpwise.per-file-ignores."*.cu"']


def test_a_warpwise_toml_and_a_changed_configuration_are_read_again(tmp_path: Path) -> None:
    root = _project(tmp_path, 'ignore = ["missing-restrict"]\n', name="warpwise.toml")
    assert not policy_for(root / "src/k.cu").enabled("missing-restrict")
    (root / "warpwise.toml").write_text('ignore = ["scalar-global-access", "int32-index-overflow"]\n')
    pol = policy_for(root / "src/k.cu")
    assert pol.enabled("missing-restrict") and not pol.enabled("scalar-global-access")


def test_a_file_outside_the_configuration_folder_matches_no_pattern(tmp_path: Path) -> None:
    config = project.ProjectConfig(str(tmp_path / "a" / "pyproject.toml"), per_file_ignores=(("**", ("all",)),))
    from warpwise.verify.rule_policy import policy_of

    assert policy_of(config, tmp_path / "b" / "k.cu").enabled("missing-restrict")
    assert not policy_of(config, tmp_path / "a" / "k.cu").enabled("missing-restrict")
    assert RulePolicy("x").enabled("anything")
