"""The public lineage index and the expert-change mapping (issue 21), and bench/agreement.py on a mirror of our own.

The committed index and mapping must load and agree with each other and with the card library; the checker
must catch what disagrees; and the agreement script must run end to end on a tiny bare-git mirror built here
from two kernels we wrote (no public code is involved).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from warpwise.lineages import public_index as pi
from warpwise.skills.library import builtin_library

ROOT = Path(__file__).resolve().parents[2]
CARD_IDS = {c.skill_id for c in builtin_library()}


def _agreement() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agreement", ROOT / "bench" / "agreement.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agreement"] = module
    spec.loader.exec_module(module)
    return module


def test_committed_index_and_mapping_are_consistent() -> None:
    lineages = pi.load_index()
    changes = pi.load_changes()
    assert len(lineages) >= 20
    assert pi.consistency_problems(lineages, changes, CARD_IDS) == []
    for li in lineages:
        assert all(v.lines is not None for v in li.versions), f"{li.id}: line ranges missing (run `lines`)"
    mapped = {(s.lineage, s.step) for s in changes.steps}
    steps = [(li.id, (a.id, b.id)) for li in lineages for a, b in li.steps()]
    # Almost every step is mapped; the few that are not are the ones whose change was not read.
    assert len(mapped & set(steps)) >= len(steps) - 4


def test_rendered_index_is_up_to_date() -> None:
    assert (pi.PUBLIC / "INDEX.md").read_text(encoding="utf-8") == pi.render_markdown(pi.load_index())


def test_mapping_names_the_missing_cards_of_the_issue() -> None:
    proposed = pi.load_changes().proposed
    for cid in (
        "single-buffered-shared-tile",
        "register-tile-outputs",
        "thread-per-row-reduction",
        "warp-per-row-long-rows",
        "scalar-shared-fragment-loads",
        "streamed-data-without-cache-hint",
        "untransposed-shared-tile",
        "block-tile-without-warp-tile",
        "fp32-fma-contraction-without-tensor-cores",
        "unswizzled-shared-tile",
    ):
        assert cid in proposed and cid not in CARD_IDS


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_checker_reports_unknown_steps_and_cards(tmp_path: Path) -> None:
    index = _write(tmp_path / "INDEX.yaml", _INDEX.format(commit="0" * 40))
    changes = _write(
        tmp_path / "changes.yaml",
        "schema: 1\nproposed_cards: {made-up-pattern: something}\nsteps:\n"
        "  - {lineage: toy, step: v1 -> v2, cards: [no-such-card]}\n"
        "  - {lineage: toy, step: v2 -> v1, cards: [made-up-pattern]}\n"
        "  - {lineage: nope, step: v1 -> v2, cards: []}\n",
    )
    problems = pi.consistency_problems(pi.load_index(index), pi.load_changes(changes), CARD_IDS)
    assert any("`no-such-card` is neither built in nor proposed" in p for p in problems)
    assert any("v2 -> v1: not consecutive" in p for p in problems)
    assert any("nope" in p and "no such lineage" in p for p in problems)
    assert not any("made-up-pattern" in p for p in problems)


def test_index_rejects_unpinned_commits_and_duplicate_versions(tmp_path: Path) -> None:
    with pytest.raises(pi.PublicIndexError, match="not a 40-digit commit"):
        pi.load_index(_write(tmp_path / "a.yaml", _INDEX.format(commit="main")))
    dup = _INDEX.format(commit="0" * 40).replace("id: v2", "id: v1")
    with pytest.raises(pi.PublicIndexError, match="listed twice"):
        pi.load_index(_write(tmp_path / "b.yaml", dup))


_INDEX = """schema: 1
repositories:
  - {{repo: toy/lineage, commit: '{commit}'}}
lineages:
  - id: toy
    repo: toy/lineage
    operator: vector_add
    family: elementwise
    problem: null
    versions:
      - {{id: v1, file: src/v1.cu, kernel: add_v1, adds: baseline}}
      - {{id: v2, file: src/v2.cu, kernel: add_v2, adds: float4 loads}}
"""

# Our own toy lineage: a scalar elementwise add (version 1) and its float4 form (version 2). Version 1 includes a
# header of the same repository, to check that quoted includes are inlined.
_HEADER = "#pragma once\n#define TOY_BLOCK 256\n"
_V1 = """#include "common.cuh"

__global__ void add_v1(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

void launch(const float* a, const float* b, float* c, int n) {
    add_v1<<<(n + TOY_BLOCK - 1) / TOY_BLOCK, TOY_BLOCK>>>(a, b, c, n);
}
"""
_V2 = """__global__ void add_v2(const float4* a, const float4* b, float4* c, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
"""


def _mirror(root: Path) -> str:
    """Build a bare-git mirror `toy+lineage/repo` under root and return its commit."""
    work = root / "work"
    _write(work / "src" / "common.cuh", _HEADER)
    _write(work / "src" / "v1.cu", _V1)
    _write(work / "src" / "v2.cu", _V2)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    run = lambda *a: subprocess.run(a, cwd=work, check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"})  # noqa: E731
    run("git", "init", "-q")
    run("git", "add", ".")
    run("git", "commit", "-qm", "toy")
    mirror = root / "mirrors" / "toy+lineage" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror)], check=True, capture_output=True)
    return subprocess.run(
        ["git", f"--git-dir={mirror}", "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_versions_are_read_from_the_mirror_at_the_commit(tmp_path: Path) -> None:
    commit = _mirror(tmp_path)
    index = _write(tmp_path / "INDEX.yaml", _INDEX.format(commit=commit))
    lineages = pi.load_index(index)
    text = pi.version_text(tmp_path / "mirrors", lineages[0], lineages[0].versions[0])
    assert b"#define TOY_BLOCK 256" in text and b'#include "common.cuh"' not in text
    spans, problems = pi.check_mirrors(lineages, tmp_path / "mirrors")
    assert problems == []
    assert spans[("toy", "v1")] == (3, 6) and spans[("toy", "v2")] == (1, 7)
    with pytest.raises(pi.PublicIndexError, match="no mirror"):
        pi.read_file(tmp_path / "elsewhere", "toy/lineage", commit, "src/v1.cu")
    with pytest.raises(pi.PublicIndexError, match=r"src/none\.cu"):
        pi.read_file(tmp_path / "mirrors", "toy/lineage", commit, "src/none.cu")


@needs_git
def test_agreement_runs_on_a_synthetic_mirror(tmp_path: Path) -> None:
    commit = _mirror(tmp_path)
    index = _write(tmp_path / "INDEX.yaml", _INDEX.format(commit=commit))
    changes = _write(
        tmp_path / "changes.yaml",
        "schema: 1\nsteps:\n  - {lineage: toy, step: v1 -> v2, cards: [scalar-global-access]}\n",
    )
    out = tmp_path / "out"
    agreement = _agreement()
    argv = ["--mirrors", str(tmp_path / "mirrors"), "--index", str(index), "--changes", str(changes)]
    assert agreement.main([*argv, "--out", str(out), "--date", "2000-01-01"]) == 0
    doc = json.loads((out / "agreement-2000-01-01.json").read_text())
    (step,) = doc["steps"]
    assert step["step"] == "v1 -> v2" and step["error"] is None
    # The scalar add is exactly what scalar-global-access vectorizes, so it is among the quick fixes.
    assert "scalar-global-access" in step["order"]
    assert step["rank"] == step["order"].index("scalar-global-access") + 1
    assert step["top3"] == (step["rank"] <= 3)
    assert doc["summary"]["all"]["steps"] == 1
    assert doc["repositories"] == {"toy/lineage": commit}
    md = (out / "agreement-2000-01-01.md").read_text()
    assert "| toy | v1 -> v2 | optimisation | `scalar-global-access` |" in md


@needs_git
def test_agreement_reports_a_missing_mirror_as_an_error(tmp_path: Path) -> None:
    index = _write(tmp_path / "INDEX.yaml", _INDEX.format(commit="1" * 40))
    changes = _write(
        tmp_path / "changes.yaml",
        "schema: 1\nsteps:\n  - {lineage: toy, step: v1 -> v2, cards: [scalar-global-access]}\n",
    )
    agreement = _agreement()
    results, _meta = agreement.score(tmp_path / "none", index, changes, None)
    assert results[0].error is not None and "no mirror" in results[0].error and results[0].rank is None


def _problem_cases() -> list[tuple[str, str, str]]:
    return [(li.problem, f"{li.id}/{v.id}", v.kernel) for li in pi.load_index() if li.problem for v in li.versions]


@pytest.mark.parametrize(("problem", "key", "kernel"), _problem_cases())
def test_problem_variants_run_on_the_cpu(problem: str, key: str, kernel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
    import runpy

    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "tiny")
    ns = runpy.run_path(str(pi.PUBLIC / "problems" / f"{problem}.problem.py"))
    var = ns["variant"](key)
    assert var["kernel"] == kernel
    if "unsupported" in var:
        assert var["unsupported"], f"{key}: an unsupported variant must say why"
        return
    inputs = var["make_inputs"](0)
    want = var["reference"]({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
    assert want and set(want) <= set(inputs), f"{key}: outputs {set(want)} are not inputs {set(inputs)}"
    for name, tensor in want.items():
        assert tensor.shape == inputs[name].shape and torch.isfinite(tensor).all()
    geometry = var["launch"](inputs)
    assert all(int(d) >= 1 for d in (*geometry[0], *geometry[1])) and geometry[1][0] * geometry[1][1] <= 1024
    assert set(var.get("scratch", ())) <= set(inputs) and set(var.get("inout", ())) <= set(inputs)


def test_problem_variant_references_compute_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
    import runpy

    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "tiny")
    ns = runpy.run_path(str(pi.PUBLIC / "problems" / "reduce_sum.problem.py"))
    v3, v8 = ns["variant"]("bbuf-reduce/v3"), ns["variant"]("bbuf-reduce/v8")
    inputs = v3["make_inputs"](1)
    x = inputs["g_idata"]
    # v3's blocks cover 512 elements each; v8's partial sums add up to the whole vector.
    assert torch.allclose(v3["reference"](inputs)["g_odata"][:3], x.view(-1, 512)[:3].sum(1), rtol=1e-5)
    inputs8 = v8["make_inputs"](1)
    assert torch.equal(inputs8["g_idata"], x)  # every version reads the same vector
    assert torch.allclose(v8["reference"](inputs8)["g_odata"].double().sum(), x.double().sum(), rtol=1e-6)
    # The partial-sum output is exactly as long as the grid the repository's launch uses (the 2026-12-01 batch
    # compared 1024 entries of which the launch wrote 256, so every version measured `incorrect`).
    for key in ns["VARIANTS"]:
        v = ns["variant"](key)
        made = v["make_inputs"](0)
        (grid, *_rest) = v["launch"](made)
        assert made["g_odata"].numel() == grid[0] * grid[1] * grid[2], key
    gemv = runpy.run_path(str(pi.PUBLIC / "problems" / "gemv.problem.py"))["variant"]("cudacodes-sgemv/k4")
    g = gemv["make_inputs"](2)
    assert torch.allclose(gemv["reference"](g)["resd"], g["matd"] @ g["vecd"], rtol=1e-4, atol=1e-4)


def test_problem_files_written_for_the_rerun_compute_their_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
    import runpy

    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "tiny")
    rows = runpy.run_path(str(pi.PUBLIC / "problems" / "reduce_rows.problem.py"))
    for key in rows["VARIANTS"]:
        v = rows["variant"](key)
        made = v["make_inputs"](3)
        assert torch.count_nonzero(made["output"]) == 0, key  # atomicAdd targets start at zero
        assert torch.allclose(v["reference"](made)["output"], made["input"].sum(1), rtol=1e-4, atol=1e-3)
        geometry = v["launch"](made)
        assert key == "learncuda-sum/v1" or geometry[2] == 4 * geometry[1][0], key  # a float of shared per thread
    parity = runpy.run_path(str(pi.PUBLIC / "problems" / "parity.problem.py"))["variant"]("gpumode-divergence/select")
    d = parity["make_inputs"](0)
    want = parity["reference"](d)["data"]
    assert torch.equal(want[d["data"] % 2 == 0], d["data"][d["data"] % 2 == 0] * 2)
    assert torch.equal(want[d["data"] % 2 == 1], d["data"][d["data"] % 2 == 1] + 1)
    elementwise = runpy.run_path(str(pi.PUBLIC / "problems" / "elementwise.problem.py"))
    relu = elementwise["variant"]("leetcuda-relu/f32x4")
    r = relu["make_inputs"](0)
    assert "b" not in r and torch.equal(relu["eager"](r), torch.relu(r["x"]))  # the 2026-12-01 batch: KeyError 'b'
    gemv = runpy.run_path(str(pi.PUBLIC / "problems" / "gemv.problem.py"))
    half = gemv["variant"]("leetcuda-hgemv/k128_x4")
    h = half["make_inputs"](0)
    assert h["a"].dtype == torch.float16 and half["tolerance"][1] > gemv["tolerance"][1]
    softmax = runpy.run_path(str(pi.PUBLIC / "problems" / "softmax.problem.py"))["VARIANTS"]
    assert "extended-lambda" in softmax["cudacodes-softmax/k4"]["unsupported"]
