"""CPU-side checks of the expert corpus and the naive suite: layout, parsing, compilation, problem files.

Nothing here runs a kernel (there is no GPU on CI); bench/gpu/corpus_check.py does that on the device machine.
What can be checked without one is checked: every kernel parses without syntax problems and compiles for
sm_90 (nvcc, and NVRTC through the gate's own build path, with no register spills in the experts); the gate
keeps every device function when it extracts the translation unit; and every problem file satisfies the gate's
contract, through the gate's own `resolve_spec` and the worker's `Problem.case`, on the small presets.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import needs_nvcc
from tests.lineages.kernels import ALL, Kernel, corpus_check, experts, load_problem, naives, scale, small_presets
from warpwise.analyzers.build import analyze_text

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")

REQUIRED_OPERATORS = {
    "reduce_sum",
    "softmax_rows",
    "layernorm",
    "transpose",
    "sgemm",
    "gemv",
    "histogram",
    "blur3x3",
    "scan",
    "bias_gelu",
    "rmsnorm_f16",
}
REQUIRED_NAIVE = {
    "cross_entropy",
    "rmsnorm",
    "topk",
    "conv3x3",
    "gemv_colmajor",
    "sum",
    "softmax",
    "layernorm",
    "transpose",
    "matmul",
    "histogram",
    "scan_rows",
    "bias_gelu",
}
MAX_SMEM = 227 * 1024


def _ids(k: Kernel) -> str:
    return k.ident


def test_corpus_has_every_operator_with_its_files() -> None:
    found = {k.operator for k in experts()}
    assert found >= REQUIRED_OPERATORS, f"missing: {sorted(REQUIRED_OPERATORS - found)}"
    for k in experts():
        assert k.source.is_file() and k.problem.is_file(), k.ident
        assert (k.source.parent / "README.md").is_file(), f"{k.ident} needs a README.md naming its optimizations"
    half = [k.operator for k in experts() if "__half" in k.source.read_text()]
    assert half, "the corpus needs at least one half-precision operator"


def test_suite_has_the_naive_kernels() -> None:
    found = {k.operator for k in naives()}
    assert len(found) >= 12
    assert found >= REQUIRED_NAIVE, f"missing: {sorted(REQUIRED_NAIVE - found)}"
    for k in naives():
        assert k.source.is_file() and k.problem.is_file(), k.ident


@pytest.mark.parametrize("k", ALL, ids=_ids)
def test_parses_without_syntax_problems_and_names_one_kernel(k: Kernel) -> None:
    text = k.source.read_text(encoding="utf-8")
    model = analyze_text(text, str(k.source))
    assert model.syntax_problems == (), model.syntax_problems
    ns = load_problem(k.problem)
    assert [f.name for f in model.kernels] == [ns["kernel"]], "one __global__ entry kernel, named by the problem file"
    # The GPU script maps inputs to parameters with its own signature parser: it must agree with the analyzer.
    fn = model.kernels[0]
    parsed = corpus_check().parse_signature(text, ns["kernel"])
    assert [(p.name, p.pointer) for p in parsed] == [(p.name, p.is_pointer) for p in fn.params]


@pytest.mark.parametrize("k", ALL, ids=_ids)
def test_gate_extraction_keeps_every_device_function(k: Kernel) -> None:
    from warpwise.verify.extract import device_source

    extracted = device_source(k.source.read_text(encoding="utf-8"), k.source.name)
    assert extracted.dropped_functions == ()
    assert extracted.dropped_includes == ()


@needs_nvcc
def test_every_kernel_compiles_with_nvcc(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # nvcc costs about 1.5 s a file here; a build that passed is remembered in pytest's cache under the hash of
    # the source, the flags and nvcc's version, so only changed kernels are compiled again.
    flags = ["-arch=sm_90", "-c", "-Xptxas", "-v"]
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False).stdout

    def key(k: Kernel) -> str:
        digest = hashlib.sha256("\0".join([k.source.read_text(encoding="utf-8"), *flags, version]).encode())
        return f"lineages/nvcc/{digest.hexdigest()[:32]}"

    def build(k: Kernel) -> tuple[Kernel, subprocess.CompletedProcess[str]]:
        out = tmp_path / f"{k.kind}_{k.operator}.o"
        cmd = ["nvcc", *flags, str(k.source), "-o", str(out)]
        return k, subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)

    todo = [k for k in ALL if request.config.cache.get(key(k), False) is not True]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = list(pool.map(build, todo))
    failed = {k.ident: p.stderr[-2000:] for k, p in results if p.returncode != 0}
    assert not failed, failed
    spilling = {k.ident: p.stderr for k, p in results if k.kind == "expert" and " 0 bytes spill stores" not in p.stderr}
    assert not spilling, f"experts must not spill registers: {spilling}"
    for k, _ in results:
        request.config.cache.set(key(k), True)


@pytest.mark.parametrize("k", ALL, ids=_ids)
def test_compiles_through_the_gate_build_path(k: Kernel) -> None:
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC is not installed (pip install -e '.[compile]')")
    from warpwise.verify.extract import device_source
    from warpwise.verify.types import Source
    from warpwise.verify.worker import nvbuild

    if nvbuild.nvrtc_version() is None:
        pytest.skip("NVRTC cannot be loaded on this machine")
    ns = load_problem(k.problem)
    text = device_source(k.source.read_text(encoding="utf-8"), k.source.name).text
    build = nvbuild.build(Source(text, ns["kernel"], k.source.name), "sm_90")
    assert build.info.ok, build.info.log
    if k.kind == "expert":
        assert build.info.spill_stores == 0, build.info.log
        assert (build.info.stack_bytes or 0) == 0, "register arrays must not fall back to local memory"


@pytest.mark.parametrize("k", ALL, ids=_ids)
def test_problem_file_satisfies_the_gate_contract(k: Kernel) -> None:
    from warpwise.verify.spec import ProblemSpec, resolve_spec
    from warpwise.verify.worker import gpu_job

    text = k.source.read_text(encoding="utf-8")
    ns = load_problem(k.problem)
    assert "full" in ns["SIZES"], "the full-size preset is the default"
    spec = resolve_spec(str(k.source), text, ns["kernel"])
    assert isinstance(spec, ProblemSpec), spec
    assert spec.source == "problem_file", spec.origin
    pointers = [a.param for a in spec.run.args if a.buffer is not None]
    for preset in small_presets(ns):
        with scale(preset):
            problem = gpu_job.Problem(spec.run, torch.device("cpu"))
            case = problem.case(1)
            again = problem.case(1)
            other = problem.case(2)
        assert case.expected, f"{preset}: reference() gives no outputs"
        assert set(case.expected) <= set(pointers)
        inputs = [n for n in case.pristine if n not in case.expected]
        assert all(torch.equal(case.pristine[n], again.pristine[n]) for n in inputs), "seeded inputs repeat"
        assert any(not torch.equal(case.pristine[n], other.pristine[n]) for n in inputs), "seeds change the inputs"
        for geometry in case.geometry.values():
            threads = geometry.block[0] * geometry.block[1] * geometry.block[2]
            assert 1 <= threads <= 1024 and threads % 32 == 0, geometry
            assert min(geometry.grid) >= 1 and geometry.grid[0] < 2**31 and max(geometry.grid[1:]) <= 65535
            assert 0 <= geometry.smem <= MAX_SMEM


@pytest.mark.parametrize("k", ALL, ids=_ids)
def test_problem_file_declares_its_roofline(k: Kernel) -> None:
    ns = load_problem(k.problem)
    assert ns["roofline"] in ("memory", "compute")
    preset = small_presets(ns)[0]
    with scale(preset):
        inputs = ns["make_inputs"](0)
    assert ns["bytes_moved"](inputs) > 0
    if ns["roofline"] == "compute":
        assert ns["flops"](inputs) > 0
    ns["eager"](inputs)


def test_unknown_scale_is_refused() -> None:
    ns = load_problem(experts()[0].problem)
    with scale("huge"), pytest.raises(ValueError, match="WARPWISE_PROBLEM_SCALE"):
        ns["make_inputs"](0)
