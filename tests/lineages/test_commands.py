"""The GPU batch's commands end to end on the CPU, with the scripted stand-in in place of the local GPU backend.

bench/gpu/lineage_batch.sh runs `warpwise lineage build ... --pack`, `warpwise cards admit ... --no-write` and
`bench/quality.py`, then `warpwise lineage ingest` reads their files on the workstation. These tests run the same
commands with the same arguments, so a plumbing error shows up here before it costs GPU time.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.lineages.fakes import ScriptedBackend
from tests.skills.cardtest import copy_cards
from warpwise.cli import main
from warpwise.verify.types import Status


def faster(original: str, candidate: str) -> tuple[Status, float]:
    return Status.VERIFIED, 1.4


@pytest.fixture
def scripted_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make `local` mean the scripted stand-in, with its own result cache."""
    from warpwise.verify import backends

    monkeypatch.setenv("WARPWISE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(backends, "gpu_count", lambda: 1)
    monkeypatch.setattr(backends, "make_backend", lambda name, **kw: ScriptedBackend(faster))


def _quality_module():
    spec = importlib.util.spec_from_file_location("quality_script", ROOT / "bench" / "quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_batch_commands_write_what_ingest_reads(
    scripted_gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(ROOT)
    experts = [str(ROOT / "lineages/corpus" / op / "expert.cu") for op in ("reduce_sum", "transpose")]
    pack = out / "lineages.json"
    assert (
        main(["lineage", "build", *experts, "--backend", "local", "--no-write", "--no-evidence", "--pack", str(pack)])
        == 0
    )
    doc = json.loads(pack.read_text())
    assert set(doc["lineages"]) == {"reduce_sum", "transpose"}
    assert all(lin["mode"] == "gpu" and lin["steps"] for lin in doc["lineages"].values())

    admission = out / "admission.json"
    args = ["cards", "admit", "--suite", "bench/suite", "--backend", "local", "--lineages", str(pack)]
    assert main([*args, "--out", str(admission), "--no-write", "--budget-s", "60"]) == 0
    adm = json.loads(admission.read_text())
    assert adm["roundtrips"] and any(d["admitted"] for d in adm["decisions"])
    assert admission.with_suffix(".md").is_file()

    assert _quality_module().main(["--out", str(out), "--only", "sum,transpose", "--no-eager", "--budget-s", "60"]) == 0
    quality = json.loads((out / "quality.json").read_text())
    assert [r["operator"] for r in quality["rows"]] == ["sum", "transpose"]
    assert all(r["chain"] for r in quality["rows"])

    root, cards = tmp_path / "repo", tmp_path / "cards"
    copy_cards(cards)
    from warpwise.lineages.ingest import ingest

    changes = ingest(out, root=root, cards=cards)
    assert any("status admitted" in c for c in changes)
    assert (root / "lineages/results/transpose/lineage.md").is_file()


def test_lineage_build_writes_results_and_evidence_where_told(
    scripted_gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warpwise.skills import library

    cards = tmp_path / "cards"
    copy_cards(cards)
    monkeypatch.setattr(library, "BUILTIN_CARDS", cards)
    library.builtin_library.cache_clear()
    try:
        expert = str(ROOT / "lineages/corpus/reduce_sum/expert.cu")
        assert main(["lineage", "build", expert, "--backend", "local", "--out", str(tmp_path / "lin")]) == 0
        assert (tmp_path / "lin" / "lineage.md").is_file()
        lib = library.load_library([cards], include_builtin=False)
        assert any(str(e.source).startswith("lineage ") for e in lib.get("scalar-global-access").header.evidence)
        assert main(["lineage", "render", str(tmp_path / "lin" / "lineage.json")]) == 0
    finally:
        library.builtin_library.cache_clear()
