"""The `warpwise check` command: text, JSON and SARIF output, exit codes, and input errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from warpwise.cli import main


def run(*args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "warpwise", *args], capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_check_examples_groups_by_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--all", str(EXAMPLES)])
    out = capsys.readouterr().out
    assert code == 1
    assert "kernel `transpose_naive`" in out
    # The card that stages the transpose through shared memory supersedes the rule on that access.
    assert "examples/transpose.cu:13:7: warning: `out[x * rows + (y + j)]` is written with a stride" in out
    assert "[strided-transpose-access]" in out
    assert "transpose.cu:13:7: warning: `out` is written with a stride of `rows` elements" not in out
    assert out.strip().splitlines()[-1].endswith(".")


def test_clean_file_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "ok.cu"
    f.write_text("__global__ void k(float* __restrict__ a) { a[blockIdx.x * blockDim.x + threadIdx.x] = 0; }\n")
    assert main(["check", str(f)]) == 0
    assert "nothing found" in capsys.readouterr().out


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--format", "json", str(EXAMPLES / "transpose.cu")])
    doc = json.loads(capsys.readouterr().out)
    (file,) = doc["files"]
    assert file["kernels"] == ["transpose_naive", "transpose_tiled"]
    rules = {f["rule"] for f in file["findings"]}
    assert {"strided-transpose-access", "shared-bank-conflict"} <= rules
    first = file["findings"][0]
    assert first["line"] == first["range"]["start"]["line"] + 1


def test_sarif_output_is_valid_2_1_0(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--format", "sarif", str(EXAMPLES)])
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0"
    run0 = log["runs"][0]
    rule_ids = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    assert run0["results"]
    for res in run0["results"]:
        assert rule_ids[res["ruleIndex"]] == res["ruleId"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert res["level"] in ("error", "warning", "note")


def test_select_and_ignore(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--format", "json", "--select", "shared-bank-conflict", str(EXAMPLES)])
    doc = json.loads(capsys.readouterr().out)
    assert {f["rule"] for file in doc["files"] for f in file["findings"]} == {"shared-bank-conflict"}
    main(["check", "--format", "json", "--ignore", "shared-bank-conflict", str(EXAMPLES)])
    doc = json.loads(capsys.readouterr().out)
    assert "shared-bank-conflict" not in {f["rule"] for file in doc["files"] for f in file["findings"]}


def test_usage_and_input_errors_exit_two(tmp_path: Path) -> None:
    code, out = run("check", str(tmp_path / "missing.cu"))
    assert code == 2 and "no such file or folder" in out
    code, out = run("check", "--select", "no-such-rule", str(EXAMPLES))
    assert code == 2 and "unknown rule id" in out
    code, out = run("check")
    assert code == 2
    code, out = run("frobnicate")
    assert code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = run("check", str(empty))
    assert code == 2 and "no CUDA files" in out


def test_oversized_file_is_skipped_with_a_message(tmp_path: Path) -> None:
    big = tmp_path / "big.cu"
    big.write_text("// padding\n" * 200_000)
    code, out = run("check", "--max-file-size", "1", str(big))
    assert code == 2 and "over the 1 MiB limit" in out


def test_help_documents_exit_codes() -> None:
    code, out = run("--help")
    assert code == 0 and "Exit codes" in out
    code, out = run("check", "--help")
    assert code == 0 and "--format" in out


def _configured_project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.warpwise]\n" + table)
    for rel in ("src/vector_ops.cu", "tests/vector_ops.cu"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((EXAMPLES / "vector_ops.cu").read_bytes())
    return tmp_path


def _rules_by_file(out: str) -> dict[str, set[tuple[str, str]]]:
    doc = json.loads(out)
    return {Path(f["path"]).parent.name: {(x["rule"], x["severity"]) for x in f["findings"]} for f in doc["files"]}


def test_check_applies_the_project_rule_settings_per_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _configured_project(
        tmp_path,
        'ignore = ["missing-launch-bounds"]\n'
        'per-file-ignores = { "tests/**" = ["all"], "src/*.cu" = ["streaming-cache-hints"] }\n'
        'severity = { "uncoalesced-global-access" = "error", "missing-restrict" = "hint" }\n',
    )
    main(["check", "--format", "json", "--all", str(root)])
    found = _rules_by_file(capsys.readouterr().out)
    assert found["tests"] == set()
    rules = {r for r, _ in found["src"]}
    assert "missing-launch-bounds" not in rules and "streaming-cache-hints" not in rules
    assert ("uncoalesced-global-access", "error") in found["src"]
    assert ("missing-restrict", "hint") in found["src"]
    assert ("scalar-global-access", "info") in found["src"]  # untouched rules keep their default
    # The configured severity is the last word in the quiet default too (which shows most findings as hints).
    main(["check", "--format", "json", str(root)])
    quiet = _rules_by_file(capsys.readouterr().out)["src"]
    assert ("uncoalesced-global-access", "error") in quiet and ("missing-restrict", "hint") in quiet, sorted(quiet)


def test_command_line_select_replaces_the_configured_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _configured_project(tmp_path, 'select = ["missing-restrict"]\n')
    main(["check", "--format", "json", str(root / "src")])
    assert {r for r, _ in _rules_by_file(capsys.readouterr().out)["src"]} == {"missing-restrict"}
    main(["check", "--format", "json", "--select", "scalar-global-access", str(root / "src")])
    assert {r for r, _ in _rules_by_file(capsys.readouterr().out)["src"]} == {"scalar-global-access"}


def test_configuration_problems_are_warnings_printed_once(tmp_path: Path) -> None:
    root = _configured_project(tmp_path, 'ignore = ["no-such-rule"]\nseverity = { "missing-restrict" = "loud" }\n')
    code, out = run("check", str(root))
    assert code == 1  # the findings still come; a bad key never stops the check
    assert out.count("warning: ") >= 2
    assert out.count("`no-such-rule` is not a warpwise rule id") == 1
    assert "`tool.warpwise.severity.missing-restrict`: `loud` is not one of error, warning, info, hint" in out


def test_fix_leaves_files_whose_rules_are_ignored_alone(tmp_path: Path) -> None:
    root = _configured_project(tmp_path, 'per-file-ignores = { "tests/**" = ["all"] }\n')
    before = (root / "tests/vector_ops.cu").read_bytes()
    assert main(["check", "--fix", str(root)]) == 0
    assert (root / "tests/vector_ops.cu").read_bytes() == before
    assert (root / "src/vector_ops.cu").read_bytes() != before
