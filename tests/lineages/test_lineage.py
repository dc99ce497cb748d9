"""The lineage walk, its launch geometry, evidence, reports and storage (CPU).

The walk's decisions are driven by a scripted stand-in for the GPU (tests/lineages/fakes.py): which attempts
are accepted or rejected, in which order, and what the lineage records for each. The launch code a walk writes
into the problem file runs through the gate's own worker-side `Problem` on the CPU. A compile-only walk runs
for real where NVRTC is installed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.lineages.fakes import ScriptedBackend
from tests.lineages.kernels import CORPUS, scale
from warpwise.lineages.evidence import is_mined, lineage_records
from warpwise.lineages.lineage import (
    Budget,
    LineageBuilder,
    LineageError,
    kernel_times,
    load_expert,
    profile_steps,
)
from warpwise.lineages.report import lineage_markdown, text_bar_chart
from warpwise.lineages.store import write_lineage, write_proposed_cards
from warpwise.verify.gate import Gate
from warpwise.verify.launch import LaunchChange, problem_source
from warpwise.verify.types import Options, Status

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")

REDUCE = CORPUS / "reduce_sum" / "expert.cu"


def rule(original: str, candidate: str) -> tuple[Status, float]:
    """Restrict does not matter, the shared-memory exchange is 'incorrect', everything else is 1.5x."""
    if "__restrict__" in candidate and "__restrict__" not in original:
        return Status.NOT_FASTER, 1.0
    if "ww_shfl" in original and "ww_shfl" not in candidate:
        return Status.INCORRECT, 1.0
    return Status.VERIFIED, 1.5


@pytest.fixture(scope="module")
def reduce_lineage() -> dict:
    backend = ScriptedBackend(rule)
    builder = LineageBuilder(Gate(backend), Options())
    return builder.build(load_expert(REDUCE))


def test_walk_accepts_verified_steps_and_records_rejections(reduce_lineage: dict) -> None:
    lin = reduce_lineage
    assert lin["mode"] == "gpu" and lin["complete"] and lin["evidence"]
    walked = [s["key"] for s in reversed(lin["steps"])]
    assert walked == ["unroll:factor", "devectorize:global", "atomics:aggregated", "coarsening:grid-x"]
    rejected = {r["key"]: r["outcome"] for r in lin["rejected"]}
    assert rejected == {"read-only:restrict": "not_slower", "shuffles:shared-exchange": "incorrect"}
    n = len(lin["kernels"]) - 1
    assert lin["kernels"][n]["is_expert"] and lin["kernels"][n]["source"] == REDUCE.read_text()
    assert [s["to"] for s in lin["steps"]] == list(range(1, n + 1))
    # Each step stops at its first accepted candidate: restrict was rejected on the expert (K4), the exchange on K2
    # (after two accepted steps), and neither was tried again.
    assert [r["at_kernel"] for r in lin["rejected"]] == [n, n - 2]
    k0 = lin["kernels"][0]
    assert k0["launch_text"] == "grid.x = ceil(n4 / SUM_THREADS)" and lin["steps"][0]["diff"] == ""


def test_steps_carry_timings_builds_and_diffs(reduce_lineage: dict) -> None:
    step = next(s for s in reduce_lineage["steps"] if s["key"] == "devectorize:global")
    assert step["status"] == "verified" and step["card"] == "scalar-global-access"
    assert step["before_timing"]["median_ms"] == pytest.approx(1.5)
    assert step["speedup"]["median"] == pytest.approx(1.5)
    assert "-  for (; i < n4; i += stride) acc[0] += sum4(ww_ld16((x4) + (i)));" in step["diff"]
    assert step["resource_delta"] == {"registers": 0, "shared_bytes": 0, "spill_stores": 0}
    assert kernel_times(reduce_lineage)[-1]["median_ms"] == pytest.approx(1.0)


def test_forward_steps_become_evidence_on_their_cards(reduce_lineage: dict) -> None:
    records = lineage_records(reduce_lineage, "lineage lineages/results/reduce_sum/lineage.json")
    assert set(records) == {
        "scalar-global-access",
        "atomic-accumulate-single-address",
        "one-element-per-thread",
        "readonly-data-without-restrict",
    }
    (fwd,) = records["scalar-global-access"]
    assert fwd.context["role"] == "forward step" and is_mined(fwd)
    (rej,) = records["readonly-data-without-restrict"]
    assert rej.context["status"] == "not_faster" and not is_mined(rej)
    assert "single-load-in-flight" not in records, "unexplained steps propose cards; they are not card evidence"


def test_compile_only_lineages_are_not_evidence(reduce_lineage: dict) -> None:
    preview = {**reduce_lineage, "mode": "compile-only"}
    assert lineage_records(preview, "lineage x") == {}


def test_report_and_files(reduce_lineage: dict, tmp_path: Path) -> None:
    md = lineage_markdown(reduce_lineage)
    assert md.startswith("# Lineage of `sum_f32` (reduce_sum)")
    assert "## Risk evidence" in md and "`shuffles:shared-exchange`" in md and "incorrect" in md
    assert "[`scalar-global-access`](../../../skills/scalar-global-access/card.md)" in md
    files = write_lineage(reduce_lineage, tmp_path / "reduce_sum", "<svg/>")
    assert [f.name for f in files] == ["lineage.json", "lineage.md", "time_per_kernel.svg"]
    assert json.loads(files[0].read_text())["operator"] == "reduce_sum"
    assert "![time per kernel](time_per_kernel.svg)" in files[1].read_text()
    proposed = write_proposed_cards([(files[0], reduce_lineage)], tmp_path / "proposed")
    assert [p.parent.name for p in proposed] == ["single-load-in-flight"]
    from warpwise.skills.library import load_library

    lib = load_library([tmp_path / "proposed"], include_builtin=False)
    assert not lib.problems, lib.problems
    card = lib.get("single-load-in-flight")
    assert card is not None and card.header.status.value == "preview" and "```diff" in card.body


def test_text_bar_chart_scales_to_the_largest() -> None:
    chart = text_bar_chart(["K0", "K1"], [2.0, 1.0], "ms", width=10)
    assert chart.splitlines()[0].count("█") == 10 and chart.splitlines()[1].count("█") == 5


def test_budget_stops_the_walk() -> None:
    builder = LineageBuilder(Gate(ScriptedBackend(rule)), Options(), Budget(0.0))
    lin = builder.build(load_expert(REDUCE))
    assert not lin["complete"] and lin["steps"] == [] and lin["attempts"] == 0


def test_load_expert_errors(tmp_path: Path) -> None:
    with pytest.raises(LineageError, match="cannot read"):
        load_expert(tmp_path / "missing.cu")
    (tmp_path / "alone.cu").write_text("__global__ void a(float* x) {}\n")
    with pytest.raises(LineageError, match="no problem file"):
        load_expert(tmp_path / "alone.cu")
    (tmp_path / "k.cu").write_text("__global__ void a(float* x) {}\n__global__ void b(float* x) {}\n")
    (tmp_path / "k.problem.py").write_text("x = 1\n")
    with pytest.raises(LineageError, match="2 kernels"):
        load_expert(tmp_path / "k.cu")


def test_problem_source_launches_both_kernels_in_the_worker() -> None:
    from warpwise.verify.types import Side
    from warpwise.verify.worker import gpu_job

    expert = load_expert(REDUCE)
    change = LaunchChange("grid", 0, 'max(1, -(-(int(inputs["n"]) >> 2) // 64))', "test")
    text = problem_source(expert.problem_text, (change,), ())
    run = dataclasses.replace(expert.spec.run, problem_source=text)
    with scale("odd"):
        case = gpu_job.Problem(run, torch.device("cpu")).case(0)
    n = 3 * 4096 + 7
    assert case.geometry[Side.ORIGINAL].grid == (-(-(n >> 2) // 64), 1, 1)
    assert case.geometry[Side.CANDIDATE].grid == (min(132 * 8, -(-(n // 4) // 256)), 1, 1)
    assert problem_source(expert.problem_text, (), ()) == expert.problem_text


@pytest.mark.parametrize("operator", ["reduce_sum", "histogram", "gemv", "bias_gelu", "transpose"])
def test_every_launch_change_of_the_corpus_evaluates(operator: str) -> None:
    from warpwise.lineages.deopt import KernelSource, candidates
    from warpwise.verify.types import Side
    from warpwise.verify.worker import gpu_job

    expert = load_expert(CORPUS / operator / "expert.cu")
    changes = [c for d in candidates(KernelSource.parse(expert.text, expert.kernel)) for c in d.launch]
    assert changes
    run = dataclasses.replace(expert.spec.run, problem_source=problem_source(expert.problem_text, changes, ()))
    with scale("tiny"):
        case = gpu_job.Problem(run, torch.device("cpu")).case(0)
    g = case.geometry[Side.ORIGINAL]
    assert all(v >= 1 for v in g.grid) and 32 <= g.block[0] * g.block[1] * g.block[2] <= 1024


def test_compile_only_walk_builds_every_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC is not installed (pip install -e '.[compile]')")
    from warpwise.verify.backends import make_backend
    from warpwise.verify.worker import nvbuild

    if nvbuild.nvrtc_version() is None:
        pytest.skip("NVRTC cannot be loaded on this machine")
    monkeypatch.setenv("WARPWISE_CACHE_DIR", str(tmp_path))
    backend = make_backend("compile-only")
    try:
        lin = LineageBuilder(Gate(backend), Options(compile_only=True)).build(load_expert(REDUCE))
    finally:
        backend.close()
    assert lin["mode"] == "compile-only" and not lin["evidence"]
    assert {s["status"] for s in lin["steps"]} == {"no_gpu"} and len(lin["steps"]) == 6
    assert all(s["before_build"]["ok"] and s["after_build"]["ok"] for s in lin["steps"])
    assert "Compile-only preview" in lineage_markdown(lin)


def test_profile_steps_adds_profiles_and_keeps_the_walks_timings(reduce_lineage: dict) -> None:
    lin = json.loads(json.dumps(reduce_lineage))
    backend = ScriptedBackend(lambda o, c: (Status.VERIFIED, 2.0))  # A profile run that measures other timings.
    builder = LineageBuilder(Gate(backend), Options(profile=True))
    before = [(s["speedup"], s["before_timing"]) for s in lin["steps"]]
    assert profile_steps(builder, load_expert(REDUCE), lin) == len(lin["steps"])
    assert [(s["speedup"], s["before_timing"]) for s in lin["steps"]] == before
    step = lin["steps"][-1]
    assert step["before_profile"]["dram_pct"] == pytest.approx(20.0) and step["after_profile"]["dram_pct"] == 40.0
    assert step["profile_delta"]["dram_pct"] == pytest.approx(20.0) and "separate run" in step["profile_run"]["note"]
    # Each profile run is the step's own pair: K<i-1> as the original, K<i> as the candidate, with their launches.
    kernels = {k["index"]: k["source"] for k in lin["kernels"]}
    pairs = [(j.original.text, j.candidate.text) for j in backend.jobs]
    assert [
        (a.endswith(kernels[s["from"]]), b.endswith(kernels[s["to"]]))
        for (a, b), s in zip(pairs, lin["steps"], strict=True)
    ] == [(True, True)] * len(lin["steps"])
    assert all(j.options.profile for j in backend.jobs)
    md = lineage_markdown(lin)
    assert "- profile (Nsight Compute, before -> after): DRAM 960 -> 1920 GB/s; DRAM throughput 20 -> 40% of peak" in md


def test_profile_steps_stops_when_the_budget_is_spent(reduce_lineage: dict) -> None:
    lin = json.loads(json.dumps(reduce_lineage))
    builder = LineageBuilder(Gate(ScriptedBackend(rule)), Options(profile=True), Budget(0.0))
    assert profile_steps(builder, load_expert(REDUCE), lin) == 0
    assert not any("before_profile" in s and s["before_profile"] for s in lin["steps"])
