"""bench/gpu/public_lineages.py on the CPU: prepare a carry folder from a mirror of our own, then check and time
its versions on a stand-in device whose "kernel" writes the reference (or nothing), so the batch's plumbing is
tested before it spends GPU time. The toy lineage reuses the id and kernel names of an indexed LeetCUDA lineage so
that the real problem file (lineages/public/problems/elementwise.problem.py) drives it; its kernels are ours."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[2]

_KERNELS = """#include <cuda_runtime.h>
#include <torch/extension.h>

__global__ void elementwise_add_f32_kernel(float *a, float *b, float *c, int N) {
  int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) c[i] = a[i] + b[i];
}

__global__ void elementwise_add_f32x4_kernel(float *a, float *b, float *c, int N) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 3 < N) {
    float4 x = reinterpret_cast<float4 *>(a)[i / 4], y = reinterpret_cast<float4 *>(b)[i / 4];
    reinterpret_cast<float4 *>(c)[i / 4] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

void host_wrapper(int32_t n) {}
"""

_INDEX = """schema: 1
repositories:
  - {{repo: toy/lineage, commit: '{commit}'}}
lineages:
  - id: leetcuda-elementwise
    repo: toy/lineage
    operator: elementwise_add
    family: elementwise
    problem: elementwise
    versions:
      - {{id: f32, file: add.cu, kernel: elementwise_add_f32_kernel, adds: baseline}}
      - {{id: f32x4, file: add.cu, kernel: elementwise_add_f32x4_kernel, adds: float4}}
  - id: no-problem
    repo: toy/lineage
    operator: elementwise_add
    family: elementwise
    problem: null
    versions:
      - {{id: a, file: add.cu, kernel: elementwise_add_f32_kernel, adds: baseline}}
      - {{id: b, file: add.cu, kernel: elementwise_add_f32x4_kernel, adds: float4}}
"""


def _driver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("public_lineages", ROOT / "bench" / "gpu" / "public_lineages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["public_lineages"] = module
    spec.loader.exec_module(module)
    return module


def _mirror(root: Path) -> str:
    work = root / "work"
    work.mkdir(parents=True)
    (work / "add.cu").write_text(_KERNELS, encoding="utf-8")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "toy"]):
        subprocess.run(cmd, cwd=work, check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"})
    mirror = root / "mirrors" / "toy+lineage" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror)], check=True, capture_output=True)
    out = subprocess.run(
        ["git", f"--git-dir={mirror}", "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


class StandIn:
    """The parts of `corpus_check.Gpu` the driver uses, on the CPU, with no build."""

    torch = torch
    dev = torch.device("cpu")

    def build(self, source: str, name: str, filename: str) -> tuple[Any, dict[str, Any]]:
        return (None, "stand-in"), {"ok": True, "registers": 0}

    def sync(self) -> None:
        return None

    def bench(self, fn: Any, **_: Any) -> dict[str, Any]:
        fn()
        return {"median_ms": 2.0, "q1_ms": 1.9, "q3_ms": 2.1, "iqr_ms": 0.2, "reps": 1}


@pytest.fixture
def carry(tmp_path: Path) -> tuple[Path, ModuleType]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    commit = _mirror(tmp_path)
    index = tmp_path / "INDEX.yaml"
    index.write_text(_INDEX.format(commit=commit), encoding="utf-8")
    driver = _driver()
    driver.prepare(tmp_path / "mirrors", tmp_path / "carry", build=False, index=index, rewrites=False)
    return tmp_path / "carry", driver


def test_prepare_writes_device_sources_and_a_manifest(carry: tuple[Path, ModuleType]) -> None:
    folder, _ = carry
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [e["id"] for e in manifest["entries"]] == ["leetcuda-elementwise/f32", "leetcuda-elementwise/f32x4"]
    assert {n["id"]: n["why"] for n in manifest["not_run"]} == {
        "no-problem/a": "the lineage has no problem file",
        "no-problem/b": "the lineage has no problem file",
    }
    entry = manifest["entries"][0]
    source = (folder / entry["source"]).read_text()
    # Host code and host headers are blanked (the runtime header by the extractor when it finds no toolkit, else by
    # the bridge), the fixed-width types the torch header gave are defined, and the kernels stay.
    assert "host_wrapper" not in source and "torch/extension.h" not in source and "cuda_runtime.h" not in source
    assert "__global__ void elementwise_add_f32x4_kernel" in source and "typedef int int32_t" in source
    assert any("fixed-width integer types" in s for s in entry["shims"])
    assert (folder / "problems" / "elementwise.problem.py").is_file()


def _measure(driver: ModuleType, writes: bool) -> Any:
    cc = driver._corpus_check()

    class Reference(driver.Measure):  # type: ignore[name-defined,misc]
        def launch(self, fn: Any, geometry: Any, values: list[Any], args: dict[str, Any], ns: dict[str, Any]) -> None:
            if not writes:
                return
            want = ns["reference"]({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in args.items()})
            for name, value in want.items():
                args[name].copy_(value)

    return Reference(StandIn(), cc)


def test_a_correct_kernel_is_checked_and_timed(carry: tuple[Path, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    folder, driver = carry
    monkeypatch.setattr(driver, "SEEDS", (0,))
    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "tiny")
    entries = json.loads((folder / "manifest.json").read_text())["entries"]
    # Only the tiny preset: the full one is 2^27 elements, too big for a CPU test.
    original = driver.load_problem

    def small(path: Path) -> dict[str, Any]:
        ns = original(path)
        ns["SIZES"].pop("full", None)
        return ns

    monkeypatch.setattr(driver, "load_problem", small)
    results = [_measure(driver, writes=True).run(folder, e) for e in entries]
    assert [r["status"] for r in results] == ["ok", "ok"]
    assert results[0]["timing"]["kernel"]["median_ms"] == 2.0 and results[0]["timing"]["gb_per_s"] > 0
    assert results[1]["name_expression"] == "elementwise_add_f32x4_kernel"
    (step,) = driver.steps(results, entries)
    assert step == {
        "lineage": "leetcuda-elementwise",
        "step": "f32 -> f32x4",
        "ms_before": 2.0,
        "ms_after": 2.0,
        "speedup": 1.0,
    }
    bad = _measure(driver, writes=False).run(folder, entries[0])
    assert bad["status"] == "incorrect" and "differ" in bad["checks"][0]["problems"][0]


def test_rewrites_of_version_k_are_entries_on_its_variant(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    commit = _mirror(tmp_path)
    index = tmp_path / "INDEX.yaml"
    index.write_text(_INDEX.format(commit=commit), encoding="utf-8")
    driver = _driver()
    manifest = driver.prepare(tmp_path / "mirrors", tmp_path / "carry", build=False, index=index)
    rewrites = [e for e in manifest["entries"] if e.get("rewrite_of")]
    # The scalar loads of version f32 are what scalar-global-access rewrites; the last version gets no rewrites.
    assert rewrites and all(e["rewrite_of"] == "leetcuda-elementwise/f32" for e in rewrites)
    vec = next(e for e in rewrites if e["card"] == "scalar-global-access")
    assert vec["id"] == "leetcuda-elementwise/f32+scalar-global-access" and vec["variant"] == vec["rewrite_of"]
    assert (tmp_path / "carry" / vec["source"]).read_text() != (
        tmp_path / "carry" / "sources" / "leetcuda-elementwise" / "f32.cu"
    ).read_text()
    # The steps pair versions only, never a rewrite with a version.
    results = [{"id": e["id"], "timing": {"kernel": {"median_ms": 1.0}}} for e in manifest["entries"]]
    assert [s["step"] for s in driver.steps(results, manifest["entries"])] == ["f32 -> f32x4"]
    # Only the wanted cards when an agreement file names them.
    agreement = tmp_path / "agreement.json"
    step = {"lineage": "leetcuda-elementwise", "step": "f32 -> f32x4", "expected_builtin": ["scalar-global-access"]}
    agreement.write_text(json.dumps({"steps": [{**step, "order": []}]}))
    again = driver.prepare(tmp_path / "mirrors", tmp_path / "c2", build=False, index=index, rewrite_cards=agreement)
    assert [e["card"] for e in again["entries"] if e.get("rewrite_of")] == ["scalar-global-access"]


def test_a_grid_factor_divides_the_launch() -> None:
    driver = _driver()
    launch = driver._shrunk(lambda i: ((1000, 1, 1), (256, 1, 1)), 4)
    assert launch({}) == ((250, 1, 1), (256, 1, 1))
    assert driver._shrunk(lambda i: (1001, 256), 4)({}) == ((251,), 256)


def test_launch_changes_give_the_gates_candidate_geometry() -> None:
    """A card's own launch (a grid over rows, a grid of output tiles) is applied as the gate's generated
    `launch_candidate` applies it to the same problem file launch."""
    from warpwise.verify.launch import LaunchChange, problem_source, set_block, shrink_grid

    driver = _driver()
    changes = (
        *set_block((128, 1, 1), (True, False, False)),
        LaunchChange("grid", 1, 'max(1, -(-int(inputs["M"]) // 128))', "grid.y = ceil(M / 128)"),
        *shrink_grid(3),
        LaunchChange("grid", 2, "_ww_tdiv(-7, 2) + 5", "grid.z = 2 (C division)"),
    )
    base = "def launch(inputs):\n    return ((inputs['M'] // 16, 5), (16, 16), 64)\n"
    ns: dict[str, Any] = {}
    exec(problem_source(base, (), changes), ns)
    inputs = {"M": 1000}
    ours = driver._changed(lambda i: ((i["M"] // 16, 5), (16, 16), 64), [c.to_dict() for c in changes])(inputs)
    assert ours == ns["launch_candidate"](inputs) == ((3, 8, 2), (128, 1, 1), 64)


def test_a_child_that_dies_costs_only_its_entry(tmp_path: Path) -> None:
    # Without a GPU the child dies before measuring anything: each entry is reported, none dropped, and the parent
    # starts a fresh child for the next one.
    driver = _driver()
    carry = tmp_path / "carry"
    carry.mkdir()
    entries = [{"id": f"x/{i}", "repo": "toy/lineage", "lineage": "x", "version": str(i), "index": i} for i in range(2)]
    (carry / "manifest.json").write_text(json.dumps({"entries": entries, "not_run": []}))
    results, _ = driver._measure_all(carry, entries, per_entry_s=300, budget_s=900)
    assert [r["id"] for r in results] == ["x/0", "x/1"]
    assert {r["status"] for r in results} <= {"crashed", "failed", "timed_out"}
