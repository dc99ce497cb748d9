"""CUDA sources inside `load_inline(...)` strings of Python files: analysed, diagnosed and built at their offsets."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from warpwise.analyzers.embedded import cuda_strings, mask_python
from warpwise.engine import InputProblem, analyze_path, collect_sources
from warpwise.verify.gate import Candidate, PreparedJob, prepare
from warpwise.verify.types import Options
from warpwise.verify.worker import nvbuild

INLINE = FIXTURES / "realworld" / "inline" / "model_new.py"


def test_the_cuda_string_keeps_its_offsets_and_everything_else_is_blank() -> None:
    text = INLINE.read_bytes()
    masked = mask_python(text)
    assert masked is not None and len(masked) == len(text) and masked.count(b"\n") == text.count(b"\n")
    k = text.index(b"__global__ void elementwise_add_kernel")
    assert masked[k : k + 40] == text[k : k + 40]
    assert b"import torch" not in masked and b"class ModelNew" not in masked
    assert b"elementwise_add_cuda(torch::Tensor a, torch::Tensor b);" not in masked, "cpp_sources are not CUDA"


def test_check_analyses_the_kernel_in_the_python_file() -> None:
    files, problems = collect_sources([str(INLINE.parent)])
    assert files == [str(INLINE)] and not problems
    report = analyze_path(str(INLINE))
    assert not isinstance(report, InputProblem), report
    assert [k.name for k in report.model.kernels] == ["elementwise_add_kernel"]
    line = report.model.lines.position(report.model.kernels[0].base).line
    assert INLINE.read_text().splitlines()[line].startswith("__global__ void elementwise_add_kernel")


def test_a_python_file_without_load_inline_is_a_clear_problem(tmp_path: Path) -> None:
    p = tmp_path / "plain.py"
    p.write_text("x = 1\n")
    res = analyze_path(str(p))
    assert isinstance(res, InputProblem) and "load_inline" in res.message
    assert cuda_strings(b"def broken(:\n") == []


def test_the_kernel_of_a_python_file_builds_and_names_the_python_file() -> None:
    prepared = prepare(
        Candidate.from_files(str(INLINE), "elementwise_add_kernel", str(INLINE)), Options(compile_only=True)
    )
    assert isinstance(prepared, PreparedJob), prepared
    build = nvbuild.build(prepared.job.original, "sm_90")
    assert build.info.ok, build.info.log
    broken = INLINE.read_text().replace("out[idx] = a[idx] + b[idx];", "out[idx] = a[idx] + undefined_b[idx];")
    c = Candidate(str(INLINE), broken, "elementwise_add_kernel", broken, str(INLINE))
    prepared = prepare(c, Options(compile_only=True))
    assert isinstance(prepared, PreparedJob)
    failed = nvbuild._build_nvrtc(prepared.job.original, "sm_90", "nvrtc")
    line = next(i for i, ln in enumerate(broken.splitlines(), 1) if "undefined_b" in ln)
    assert f"model_new.py({line}): error" in failed.info.log
