"""`warpwise verify` and `warpwise cache` from the command line (compile-only here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, FIXTURES, ROOT


def run(*args: str, cache: Path) -> tuple[int, str, str]:
    env = {"WARPWISE_CACHE_DIR": str(cache), "PATH": "/usr/local/cuda/bin:/usr/bin:/bin"}
    import os

    proc = subprocess.run(
        [sys.executable, "-m", "warpwise", *args], capture_output=True, text=True, env={**os.environ, **env}
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def cand(tmp_path: Path) -> Path:
    p = tmp_path / "saxpy_candidate.cu"
    p.write_text(
        "__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = fmaf(a, x[i], y[i]);\n}\n"
    )
    return p


def test_verify_compile_only_on_an_example(tmp_path: Path, cand: Path) -> None:
    code, out, err = run(
        "verify",
        str(EXAMPLES / "vector_ops.cu"),
        "--kernel",
        "saxpy",
        "--candidate",
        str(cand),
        "--backend",
        "compile-only",
        cache=tmp_path,
    )
    assert code == 0, out + err
    assert "status: no_gpu" in out and "registers" in out and "compile-only (sm_90" in out
    assert "build ..." in err
    code, out, _ = run(
        "verify",
        str(EXAMPLES / "vector_ops.cu"),
        "--kernel",
        "saxpy",
        "--candidate",
        str(cand),
        "--backend",
        "compile-only",
        "--json",
        cache=tmp_path,
    )
    doc = json.loads(out)
    assert doc["status"] == "no_gpu" and doc["cached"] is True
    assert doc["candidate_build"]["lowered_name"] == "_Z5saxpyifPKfPf"


def test_verify_reports_compile_errors(tmp_path: Path) -> None:
    code, out, _ = run(
        "verify",
        str(FIXTURES / "verify" / "axpy.cu"),
        "--kernel",
        "axpy",
        "--candidate",
        str(FIXTURES / "verify" / "broken_axpy.cu"),
        "--backend",
        "compile-only",
        cache=tmp_path,
    )
    assert code == 1
    assert "status: compile_failed" in out and "--- candidate compiler log ---" in out


def test_verify_on_gpu_backend_without_spec_offers_an_annotation(tmp_path: Path) -> None:
    code, out, _ = run(
        "verify", str(EXAMPLES / "softmax.cu"), "--kernel", "softmax_rows", "--backend", "local", cache=tmp_path
    )
    assert code == 1
    assert "status: spec_missing" in out and "// warpwise: x:in[?] y:out[?]" in out


def test_verify_usage_errors(tmp_path: Path) -> None:
    code, _, err = run("verify", str(tmp_path / "nope.cu"), "--kernel", "k", cache=tmp_path)
    assert code == 2 and "cannot read" in err
    code, _, err = run("verify", str(EXAMPLES / "vector_ops.cu"), "--kernel", "saxpy", "--seeds", "1", cache=tmp_path)
    assert code == 2 and "at least 3" in err


def test_cache_commands(tmp_path: Path, cand: Path) -> None:
    run(
        "verify",
        str(EXAMPLES / "vector_ops.cu"),
        "--kernel",
        "saxpy",
        "--candidate",
        str(cand),
        "--backend",
        "compile-only",
        cache=tmp_path,
    )
    code, out, _ = run("cache", "stats", cache=tmp_path)
    assert code == 0 and "results: 1" in out and "no_gpu" in out
    export = tmp_path / "shared.jsonl"
    assert run("cache", "export", str(export), cache=tmp_path)[0] == 0
    assert run("cache", "clear", cache=tmp_path)[1].startswith("removed 1 results")
    code, out, _ = run("cache", "import", str(export), cache=tmp_path)
    assert code == 0 and "imported 1 results" in out


def test_verify_a_skill_rewrite(tmp_path: Path) -> None:
    code, out, err = run(
        "verify",
        str(EXAMPLES / "vector_ops.cu"),
        "--kernel",
        "center",
        "--skill",
        "double-literal-promotion",
        "--backend",
        "compile-only",
        "--json",
        cache=tmp_path,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["status"] == "no_gpu" and doc["candidate_build"]["ok"]
    code, _, err = run(
        "verify", str(EXAMPLES / "vector_ops.cu"), "--kernel", "saxpy", "--skill", "no-such-card", cache=tmp_path
    )
    assert code == 2 and "unknown skill" in err


def test_a_skill_rewrite_that_shrinks_launches_runs_with_the_shrunk_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    # The problem file launches one thread per value; the 16-byte rewrite of 2-byte values covers eight per thread,
    # so its candidate runs with an eighth of the grid while the original keeps the problem's launch.
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
    from warpwise.commands.verify import _skill_candidate
    from warpwise.skills.launches import shrunk_problem_spec
    from warpwise.verify.types import Side
    from warpwise.verify.worker.gpu_job import Problem

    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "tiny")  # 4096 values: 16 blocks of 256 threads
    path = ROOT / "bench" / "suite" / "gelu_f16" / "naive.cu"
    text = path.read_text()
    candidate, factor, _ = _skill_candidate(str(path), text, "gelu_f16_naive", "scalar-global-access")
    assert factor == 8 and "reinterpret_cast<const uint4*>(x)" in candidate
    spec = shrunk_problem_spec(str(path), text, "gelu_f16_naive", factor)
    assert spec is not None
    case = Problem(spec.run, torch.device("cpu")).case(0)
    assert case.geometry[Side.ORIGINAL].grid == (16, 1, 1)
    assert case.geometry[Side.CANDIDATE].grid == (2, 1, 1)
    # A card that does not change launches keeps the file's geometry for both kernels.
    _, none, _ = _skill_candidate(str(path), text, "gelu_f16_naive", "missing-restrict")
    assert none is None


def test_no_grid_shrink_where_the_problem_file_does_not_launch_or_the_rewrite_keeps_launches(tmp_path: Path) -> None:
    import re

    from warpwise.commands.verify import _skill_candidate
    from warpwise.skills.launches import shrunk_problem_spec
    from warpwise.verify.spec import ProblemSpec, resolve_spec

    # The problem file gives inputs and the reference, an annotation the launch: no problem launch to shrink.
    src = ROOT / "bench" / "suite" / "gelu_f16"
    problem = (src / "naive.problem.py").read_text()
    problem = re.sub(r"\ndef launch\(.*?(?=\n\ndef |\Z)", "\n", problem, flags=re.S)
    assert "def launch" not in problem
    (tmp_path / "naive.problem.py").write_text(problem)
    annotation = "// warpwise: n=4096 x:in[n] y:out[n] grid=(n+255)/256 block=256\n"
    kernel = (src / "naive.cu").read_text().replace("__global__", annotation + "__global__", 1)
    (tmp_path / "naive.cu").write_text(kernel)
    path = str(tmp_path / "naive.cu")
    spec = resolve_spec(path, kernel, "gelu_f16_naive")
    assert isinstance(spec, ProblemSpec) and spec.source == "problem_file"
    _, factor, _ = _skill_candidate(path, kernel, "gelu_f16_naive", "scalar-global-access")
    assert factor == 8
    assert shrunk_problem_spec(path, kernel, "gelu_f16_naive", factor) is None
    # A grid-stride loop covers every element with any grid: the rewrite does not shrink launches, nor do we.
    loop = (
        "#include <cuda_fp16.h>\n"
        "__global__ void twice(const __half* __restrict__ x, __half* __restrict__ y, int n) {\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {\n"
        "    y[i] = __hadd(x[i], x[i]);\n"
        "  }\n"
        "}\n"
    )
    (tmp_path / "loop.cu").write_text(loop)
    _, none, _ = _skill_candidate(str(tmp_path / "loop.cu"), loop, "twice", "scalar-global-access")
    assert none is None


def test_verify_takes_its_gpu_defaults_from_the_project_configuration(tmp_path: Path, cand: Path) -> None:
    (tmp_path / "warpwise.toml").write_text('[gpu]\nbackend = "compile-only"\nseeds = 2\nflavour = "x"\n')
    original = tmp_path / "vector_ops.cu"
    original.write_bytes((EXAMPLES / "vector_ops.cu").read_bytes())
    code, out, err = run("verify", str(original), "--kernel", "saxpy", "--candidate", str(cand), cache=tmp_path)
    assert "(compile-only)" in err and "compile-only (sm_90" in out, err
    assert "`gpu.seeds`: must be a whole number of at least 3" in err
    assert "`gpu.flavour`: is not a GPU setting" in err
    # The command line wins over the configuration.
    code, out, err = run(
        "verify", str(original), "--kernel", "saxpy", "--candidate", str(cand), "--seeds", "2", cache=tmp_path
    )
    assert code == 2 and "--seeds must be at least 3" in err
