"""`warpwise check` in the quiet default and with `--all` (issue 18)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warpwise.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Seven findings on a four-line kernel in the screenshots of issue 18: none of them is a correctness problem.
NOISY = """\
__global__ void center(float* x, const float* mean, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = (x[i] - mean[0]) * 0.5;
}
"""


def test_the_quiet_default_lists_no_hints_and_says_how_many(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "center.cu"
    f.write_text(NOISY)
    code = main(["check", str(f)])
    quiet = capsys.readouterr().out
    main(["check", "--all", str(f)])
    full = capsys.readouterr().out
    assert ": hint:" not in quiet
    assert "not listed (`warpwise check --all`" in quiet
    listed = quiet.count(f"{f}:")
    assert full.count(f"{f}:") > listed
    assert ": hint:" in full or ": info:" in full
    assert code == (1 if ": warning:" in quiet or ": error:" in quiet else 0)


def test_correctness_errors_stay_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLES / "reduce.cu")]) == 1
    out = capsys.readouterr().out
    assert "error: `__syncthreads()` runs under `threadIdx.x == 0`" in out


def test_json_carries_every_finding_with_its_declared_severity(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--format", "json", str(EXAMPLES / "vector_ops.cu")])
    quiet = json.loads(capsys.readouterr().out)["files"][0]["findings"]
    main(["check", "--all", "--format", "json", str(EXAMPLES / "vector_ops.cu")])
    full = json.loads(capsys.readouterr().out)["files"][0]["findings"]
    assert [f["rule"] for f in quiet] == [f["rule"] for f in full]
    lowered = [f for f in quiet if f["data"].get("declared_severity")]  # shown at another severity
    assert lowered, "vector_ops.cu has findings shown at another severity"
    by_key = {(f["rule"], f["line"], f["column"]): f["severity"] for f in full}
    assert any(f["severity"] == "hint" for f in lowered)
    for f in lowered:
        assert f["severity"] in ("hint", "warning")
        assert by_key[(f["rule"], f["line"], f["column"])] == f["data"]["declared_severity"]
