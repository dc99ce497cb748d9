"""`warpwise optimize` on the command line: the compile-only dry run on a real kernel, errors, writing the edit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.search.conftest import Runner
from tests.search.fakes import AXPY
from tests.search.test_tree import GRAPH, OUTCOMES
from warpwise.cli import main
from warpwise.commands.optimize import _write


def test_dry_run_builds_every_candidate_and_claims_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for name in ("naive.cu", "naive.problem.py"):
        shutil.copy(ROOT / "bench" / "suite" / "sum" / name, tmp_path / name)
    # The suite problem extends the corpus one by a relative path: copy that one too and point at the copy.
    shutil.copy(ROOT / "lineages" / "corpus" / "reduce_sum" / "expert.problem.py", tmp_path / "base.problem.py")
    problem = tmp_path / "naive.problem.py"
    text = problem.read_text(encoding="utf-8")
    assert "../../../lineages/corpus/reduce_sum/expert.problem.py" in text
    problem.write_text(text.replace("../../../lineages/corpus/reduce_sum/expert.problem.py", "base.problem.py"))
    code = main(
        ["optimize", str(tmp_path / "naive.cu"), "--kernel", "sum_naive", "--dry-run", "--candidates", "4", "--json"]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["mode"] == "compile-only" and out["best"] is None and out["edits"] == [] and out["diff"] == ""
    assert len(out["nodes"]) == 4 and {n["status"] for n in out["nodes"]} == {"no_gpu"}
    assert all(n["build"]["ok"] and n["build"]["registers"] for n in out["nodes"])
    assert "speedup" not in json.dumps(out["nodes"])
    (plan,) = out["plans"]  # The committed lineage's forward steps, ending with the expert.
    assert plan["operator"] == "reduce_sum" and plan["steps"][-1] == "expert kernel of reduce_sum"
    assert out["stop_reason"] == "the candidate budget of 4 is spent"


def test_text_output_and_progress(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "axpy.cu"
    path.write_text(AXPY)
    assert main(["optimize", str(path), "--kernel", "axpy", "--dry-run", "--candidates", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# Optimize `axpy` (axpy.cu)")
    assert "no speedup is claimed" in captured.out
    assert "compile-only dry run" in captured.err and "nodes 2 · best -" in captured.err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "axpy.cu"
    path.write_text(AXPY)
    assert main(["optimize", str(path), "--kernel", "nope", "--dry-run"]) == 2
    assert "there is no kernel `nope`" in capsys.readouterr().err
    assert main(["optimize", str(path), "--kernel", "axpy", "--llm"]) == 2
    assert "--llm needs an endpoint and a model" in capsys.readouterr().err
    assert main(["optimize", str(tmp_path / "missing.cu"), "--kernel", "axpy"]) == 2
    assert main(["optimize", str(path), "--kernel", "axpy", "--dry-run", "--budget-s", "0"]) == 2


def test_a_kernel_without_spec_says_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "k.cu"
    path.write_text("__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.0f; }\n")
    assert main(["optimize", str(path), "--kernel", "k", "--backend", "local", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["stop_reason"].startswith("spec_missing:") and out["nodes"] == []


def test_write_applies_the_edit(run: Runner, kernel_file: Path) -> None:
    report, _ = run(GRAPH, OUTCOMES, candidates=12)
    _write(report)
    assert kernel_file.read_text() == report.best_text
