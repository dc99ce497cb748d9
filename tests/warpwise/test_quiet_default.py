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
    # Every finding is there, or named as an alternative by the one kept for its region and problem.
    kept = {(f["rule"], f["line"], f["column"]) for f in quiet}
    alternatives = {(f["function"], a) for f in quiet for a in f["data"].get("alternatives", ())}
    for f in full:
        assert (f["rule"], f["line"], f["column"]) in kept or (f["function"], f["rule"]) in alternatives, f
    lowered = [f for f in quiet if f["data"].get("declared_severity")]  # shown at another severity
    assert lowered, "vector_ops.cu has findings shown at another severity"
    by_key = {(f["rule"], f["line"], f["column"]): f["severity"] for f in full}
    assert any(f["severity"] == "hint" for f in lowered)
    for f in lowered:
        assert f["severity"] in ("hint", "warning")
        assert by_key[(f["rule"], f["line"], f["column"])] == f["data"]["declared_severity"]


def _shown(capsys: pytest.CaptureFixture[str], path: Path) -> list[dict]:
    main(["check", "--format", "json", str(path)])
    return json.loads(capsys.readouterr().out)["files"][0]["findings"]


@pytest.mark.parametrize(
    ("example", "kernel", "cards"),
    [
        ("vector_ops.cu", "saxpy", {"scalar-elementwise-map", "one-element-per-thread", "scalar-global-access"}),
        (
            "matmul.cu",
            "matmul_naive",
            {"untiled-contraction", "contraction-without-shared-tiles", "contraction-lanes-walk-rows"},
        ),
    ],
)
def test_one_diagnostic_per_region_and_problem(
    capsys: pytest.CaptureFixture[str], example: str, kernel: str, cards: set[str]
) -> None:
    """Cards that address one region and problem show one finding; it names the others, whose fixes remain."""
    main(["check", "--all", "--format", "json", str(EXAMPLES / example)])
    full = json.loads(capsys.readouterr().out)["files"][0]["findings"]
    assert cards <= {f["rule"] for f in full if f["function"] == kernel}
    quiet = [f for f in _shown(capsys, EXAMPLES / example) if f["function"] == kernel and f["rule"] in cards]
    assert len(quiet) == 1
    (kept,) = quiet
    assert cards - {kept["rule"]} <= set(kept["data"]["alternatives"])
    notes = [r["message"] for r in kept.get("related", ())]
    for card in cards - {kept["rule"]}:
        assert any(f"`{card}`" in n for n in notes), notes


def test_one_per_region_keeps_the_best_ranked_and_needs_one_kernel() -> None:
    from warpwise.skills.presentation import Contender, one_per_region

    def c(card: str, fn: str, span: tuple[int, int], rank: float, conflicts=(), provides=()) -> Contender:
        return Contender(card, fn, span, span, frozenset(conflicts), frozenset(provides), (rank,))

    a = c("a", "k", (0, 10), 1.0, conflicts=("b",))
    b = c("b", "k", (50, 60), 2.0)
    other_kernel = c("a", "k2", (100, 110), 3.0, conflicts=("b",))
    shared_feature = c("d", "k", (52, 58), 0.5, provides=("tiling",))
    disjoint_feature = c("e", "k", (0, 5), 0.4, provides=("tiling",))
    tiled = c("f", "k", (50, 55), 0.6, provides=("tiling",))
    got = one_per_region([a, b, other_kernel, None, shared_feature, disjoint_feature, tiled])
    # `b` outranks `a` (a names it in conflicts); `d` overlaps `f` and provides its feature; `e` overlaps no one.
    assert got == {0: 1, 4: 6}
