"""`warpwise ranking train|evaluate|explain`."""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from warpwise.cli import main
from warpwise.ranking import dataset, store


def test_explain_lists_every_rewrite_best_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ranking", "explain", str(EXAMPLES / "vector_ops.cu"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["card"] for r in rows} >= {"scalar-global-access", "one-element-per-thread", "missing-restrict"}
    scores = [r["p_verified"] for r in rows]
    assert all(0 < s < 1 for s in scores)
    # Which card leads is the shipped model's to say (retrained as evidence lands): the rows come by expected gain
    # (P(verified) times the log of the upper speedup), and the best, a predicted speedup, gives its reasons.
    gains = [r["p_verified"] * math.log(max(r["high"], 1.0)) + 1e-3 * r["p_verified"] for r in rows]
    assert all(a >= b - 1e-3 for a, b in itertools.pairwise(gains)), gains  # to the rounding of the JSON fields
    best = rows[0]
    assert best["speedup"] > 1 and best["label"].startswith("predicted ")
    assert best["reasons"] and all(r["text"] for r in best["reasons"])


def test_explain_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["ranking", "explain", str(EXAMPLES / "vector_ops.cu"), "--kernel", "saxpy", "--card", "missing-restrict"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "`saxpy`, predicted" in out and "chance to verify" in out
    assert "`missing-restrict` verified on" in out


def test_explain_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["ranking", "explain", str(tmp_path / "missing.cu")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["ranking", "explain", str(EXAMPLES / "vector_ops.cu"), "--model", str(bad)]) == 2
    assert "no ranking model loads" in capsys.readouterr().err


@pytest.mark.slow
def test_train_writes_the_user_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    # A project without evidence of its own trains on the shipped training set (and its cache: none here).
    assert main(["ranking", "train", "--root", str(root), "--no-cache", "--dataset", str(tmp_path / "ts.json")]) == 0
    out = capsys.readouterr().out
    shipped = dataset.load_shipped()
    assert shipped is not None
    assert f"trained on {len(shipped.labelled)} labelled examples" in out
    assert store.user_model_path().is_file()
    assert json.loads((tmp_path / "ts.json").read_text())["sources"]["shipped training set"] == len(shipped.examples)


@pytest.mark.parametrize("sub", ["train", "evaluate"])
def test_without_scikit_learn_train_and_evaluate_say_which_extra(
    sub: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # `import sklearn` raises; find_spec answers None
    assert main(["ranking", sub, "--root", str(tmp_path), "--no-cache"]) == 2
    assert "scikit-learn" in capsys.readouterr().err
