"""Admission of cards across the public lineages' repositories (bench/public_steps.py, issue 21)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def steps_mod():
    spec = importlib.util.spec_from_file_location("public_steps", ROOT / "bench" / "public_steps.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["public_steps"] = module
    spec.loader.exec_module(module)
    return module


def _step(repo: str, card: str, explanation: str = "explained", rewrites: list | None = None) -> dict:
    return {
        "repo": repo,
        "lineage": f"{repo}-l",
        "step": "a -> b",
        "speedup": {"median": 1.5, "low": 1.4, "high": 1.6},
        "explanation": explanation,
        "explained_by": [card],
        "rewrites": rewrites or [],
    }


def test_a_card_is_admitted_only_when_confirmed_on_another_repository(steps_mod) -> None:
    faster = {"card": "c", "status": "ok", "measured": "faster"}
    doc = {"steps": [_step("r1", "c", rewrites=[faster])]}
    (row,) = steps_mod.admission(doc)
    assert not row["admitted"] and "only in the repositories it was mined from" in row["why"]
    rt = {"repo": "r2", "version": "l/v", "card": "c", "status": "ok", "measured": "faster"}
    rt["speedup"] = {"median": 1.2, "low": 1.1, "high": 1.3}
    (row,) = steps_mod.admission(doc, [rt])
    assert row["admitted"] and row["confirmed_on"] == ["r2"] and "mined from r1, confirmed on r2" in row["why"]
    slower = {**rt, "measured": "within spread"}
    assert not steps_mod.admission(doc, [slower])[0]["admitted"]
    # mined from two repositories, faster in both: each confirms the other
    both = {"steps": [_step("r1", "c", rewrites=[faster]), _step("r2", "c", rewrites=[faster])]}
    assert steps_mod.admission(both)[0]["confirmed_on"] == ["r1", "r2"]
    # nothing mined: never admitted, whatever ran faster
    unmined = {"steps": [_step("r1", "c", explanation="named, not detected", rewrites=[faster])]}
    assert not steps_mod.admission(unmined, [rt])[0]["admitted"]


def test_an_incorrect_rewrite_anywhere_blocks_admission(steps_mod) -> None:
    faster = {"card": "c", "status": "ok", "measured": "faster"}
    doc = {"steps": [_step("r1", "c", rewrites=[faster])]}
    rt = {"repo": "r2", "version": "l/v", "card": "c", "status": "ok", "measured": "faster"}
    assert steps_mod.admission(doc, [rt])[0]["admitted"]
    bad = {"repo": "r3", "version": "m/v2", "card": "c", "status": "incorrect"}
    (row,) = steps_mod.admission(doc, [rt, bad])
    assert not row["admitted"] and row["confirmed_on"] == [] and "incorrect on roundtrip m/v2" in row["why"]
    wrong_step = {"steps": [_step("r1", "c", rewrites=[faster, {"card": "c", "status": "incorrect"}])]}
    assert not steps_mod.admission(wrong_step, [rt])[0]["admitted"]


def test_roundtrips_are_timed_against_their_version_of_the_same_batch(steps_mod, tmp_path: Path, monkeypatch) -> None:
    timing = lambda ms: {"median_ms": ms, "q1_ms": ms * 0.99, "q3_ms": ms * 1.01}  # noqa: E731
    doc = {
        "repo": "o/n",
        "results": [
            {"id": "l/v", "status": "ok", "timing": {"kernel": timing(2.0)}},
            {"id": "l/v+c", "status": "ok", "timing": {"kernel": timing(1.0)}},
            {"id": "l/w", "status": "incorrect"},
            {"id": "l/w+c", "status": "ok", "timing": {"kernel": timing(1.0)}},
        ],
    }
    (tmp_path / "public_roundtrips-o+n-2099-01-01.json").write_text(json.dumps(doc))
    monkeypatch.setattr(steps_mod, "RESULTS", tmp_path)
    monkeypatch.setattr(steps_mod, "ROOT", tmp_path)
    rows = {r["version"]: r for r in steps_mod.load_roundtrips(["2099-01-01"])}
    assert set(rows) == {"l/v", "l/w"}
    assert rows["l/v"]["measured"] == "faster" and rows["l/v"]["speedup"]["median"] == pytest.approx(2.0)
    assert "speedup" not in rows["l/w"] and rows["l/w"]["status"].startswith("version l/w: not run")
