"""bench/row_coop/s7_19.py on the CPU: the candidates it prepares (every row's naive kernel, the transformations'
candidates with their launch changes, the refusals with their reasons), that corpus_check discovers them under the
names the report looks up, and how the report picks a row's best candidate and counts incorrect ones (on a
corpus_check result written here by hand: the plumbing, not a measurement)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.lineages.kernels import corpus_check

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("s7_19", ROOT / "bench" / "row_coop" / "s7_19.py")
assert _spec is not None and _spec.loader is not None
s7 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s7)

PARTIALS = "bench/suite_ood/reduce_sum/interleaved_partials.cu"
TWO_LOADS = "bench/suite_ood/reduce_sum/sequential_two_loads.cu"
WELFORD = "bench/suite_ood/layernorm/welford_stats.cu"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("s7_19_prep")
    return out, s7.prep(out)


def test_every_row_has_its_naive_kernel(prepared: tuple[Path, dict[str, Any]]) -> None:
    out, manifest = prepared
    naive = {e["original"]: e for e in manifest["entries"] if e["key"] == "naive"}
    assert set(naive) == set(s7.ROWS)
    for rel, e in naive.items():
        assert (out / f"{e['candidate']}.cu").read_bytes() == (ROOT / rel).read_bytes()


def test_reductions_get_a_warp_per_partial_for_each_grid_factor(prepared: tuple[Path, dict[str, Any]]) -> None:
    out, manifest = prepared
    for rel in (PARTIALS, TWO_LOADS):
        keys = sorted(e["key"] for e in manifest["entries"] if e["original"] == rel and e["key"] != "naive")
        assert keys == sorted(["bp8", "bp32", "bp128"])
    entry = next(e for e in manifest["entries"] if e["original"] == PARTIALS and e["key"] == "bp32")
    assert "block-partials-few-per-thread" in entry["mechanism"]
    ns: dict[str, Any] = {}
    problem = out / f"{entry['candidate']}.problem.py"
    exec(compile(problem.read_text(), str(problem), "exec"), ns)

    class Sized:
        def numel(self) -> int:
            return 0

    grid, block, _ = ns["launch"]({"n": 1 << 26, "g_odata": Sized()})
    assert grid == ((1 << 18) // 32, 1, 1) and block == (256, 1, 1)


def test_every_row_has_a_transformation(prepared: tuple[Path, dict[str, Any]]) -> None:
    _out, manifest = prepared
    refused = {r["file"]: r["why"] for r in manifest["refused"]}
    # Every row has a candidate now: the Welford layernorm through row-cooperative-reduction's Welford combine, the
    # column kernels through thread-per-column-reduction.
    assert refused == {}
    keys = {(e["original"], e["key"]) for e in manifest["entries"]}
    assert (WELFORD, "warp4") in keys and (WELFORD, "block256") in keys
    for rel in ("bench/suite/gemv_colmajor/naive.cu", "bench/suite_ood/gemv/transposed_2d_block.cu"):
        assert {(rel, "cols8"), (rel, "cols16"), (rel, "cols32")} <= keys


def test_corpus_check_discovers_the_candidates_under_the_reported_names(
    prepared: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, manifest = prepared
    cc = corpus_check()
    monkeypatch.setenv(cc.SUITE_ENV, str(out))
    idents = {e.ident for e in cc.discover(experts=False)}
    assert idents == {s7._ident(e["candidate"]) for e in manifest["entries"]}


def _result(ident: str, status: str, ms: float = 0.0, eager_ms: float = 1.0, pct: float = 0.0) -> dict[str, Any]:
    if status != "ok":
        return {"entry": ident, "status": status}
    timing = {
        "kernel": {"median_ms": ms},
        "eager": {"median_ms": eager_ms},
        "speedup_vs_eager": eager_ms / ms,
        "pct_copy": pct,
        "geometry": [[1, 1, 1], [256, 1, 1], 0],
    }
    return {"entry": ident, "status": "ok", "timing": timing}


def test_report_takes_the_fastest_correct_candidate_and_counts_incorrect_ones() -> None:
    manifest = {
        "commit": "abc",
        "entries": [
            {
                "original": PARTIALS,
                "candidate": "r/p__naive",
                "kernel": "k",
                "key": "naive",
                "mechanism": "none",
                "kind": "reduction",
                "target": "85% of copy",
            },
            {
                "original": PARTIALS,
                "candidate": "r/p__bp8",
                "kernel": "k",
                "key": "bp8",
                "mechanism": "m8",
                "kind": "reduction",
                "target": "85% of copy",
            },
            {
                "original": PARTIALS,
                "candidate": "r/p__bp32",
                "kernel": "k",
                "key": "bp32",
                "mechanism": "m32",
                "kind": "reduction",
                "target": "85% of copy",
            },
            {
                "original": PARTIALS,
                "candidate": "r/p__bp128",
                "kernel": "k",
                "key": "bp128",
                "mechanism": "m128",
                "kind": "reduction",
                "target": "85% of copy",
            },
        ],
        "refused": [],
    }
    corpus = {
        "peaks": {"copy_gbps": 4000.0},
        "results": [
            _result("naive/r/p__naive", "ok", ms=4.0, pct=20.0),
            _result("naive/r/p__bp8", "ok", ms=1.0, pct=80.0),
            _result("naive/r/p__bp32", "incorrect"),
            _result("naive/r/p__bp128", "ok", ms=2.0, pct=40.0),
        ],
    }
    rep = s7.report(manifest, corpus)
    (row,) = rep["rows"]
    assert row["best"]["key"] == "bp8" and row["best_vs_naive"] == 4.0
    assert row["met"] is False  # 80% of copy is short of 85%
    assert rep["incorrect_candidates"] == 1
    text = s7.render(rep, "python3 bench/row_coop/s7_19.py run")
    assert f"| {PARTIALS} | 4.0000 | 1.0000 |" in text and "**no**" in text
    json.dumps(rep)


def test_report_marks_a_row_without_results_as_not_met() -> None:
    manifest = {
        "entries": [
            {
                "original": WELFORD,
                "candidate": "l/w__naive",
                "kernel": "k",
                "key": "naive",
                "mechanism": "none",
                "kind": "row operator",
                "target": "0.95x eager",
            }
        ],
        "refused": [{"file": WELFORD, "kernel": "k", "why": ["no"]}],
    }
    rep = s7.report(manifest, {"results": []})
    assert rep["rows"][0]["met"] is False and rep["rows"][0]["naive"]["status"] == "not_run"
    assert "Rows no transformation took" in s7.render(rep, "cmd")
    assert os.sep not in rep["rows"][0]["kernel"]
