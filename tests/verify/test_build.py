"""Device-code extraction and builds: NVRTC on every example kernel, compiler logs at the user's lines, nvcc."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, needs_nvcc
from warpwise.analyzers.build import analyze_text
from warpwise.verify.extract import device_source, qualified_name
from warpwise.verify.gate import Candidate, PreparedJob, prepare
from warpwise.verify.types import Options, Source
from warpwise.verify.worker import nvbuild

EXAMPLE_KERNELS = [
    (path.name, k.name) for path in sorted(EXAMPLES.glob("*.cu")) for k in analyze_text(path.read_bytes()).kernels
]


def test_host_code_is_blanked_and_lines_kept() -> None:
    text = (EXAMPLES / "vector_ops.cu").read_text()
    dev = device_source(text, "vector_ops.cu")
    assert dev.dropped_functions == ("main",)
    assert "cstdio" in dev.dropped_includes
    body = dev.text.split('#line 1 "vector_ops.cu"\n', 1)[1]
    assert body.count("\n") == text.count("\n")
    assert "cudaMalloc" not in body and "__global__ void saxpy" in body


@pytest.mark.parametrize(("file", "kernel"), EXAMPLE_KERNELS)
def test_every_example_kernel_builds_with_nvrtc(file: str, kernel: str) -> None:
    path = EXAMPLES / file
    prepared = prepare(Candidate.from_files(str(path), kernel, str(path)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob), prepared
    build = nvbuild.build(prepared.job.original, "sm_90")
    assert build.info.ok, build.info.log
    assert build.info.registers and build.info.registers > 0
    assert build.info.spill_stores == 0
    assert build.cubin[:4] == b"\x7fELF"


def test_compile_errors_point_at_the_users_line() -> None:
    text = "#include <cstdio>\n\n__global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n"
    build = nvbuild.build(Source(device_source(text, "user.cu").text, "k", "user.cu"), "sm_90")
    assert not build.info.ok
    assert 'user.cu(4): error: identifier "undefined_name" is undefined' in build.info.log


def test_templates_are_instantiated_by_name_expression() -> None:
    text = "template <typename T, int B>\n__global__ void k(T* x) { x[threadIdx.x] = T(B); }\n"
    build = nvbuild.build(Source(device_source(text).text, "k<double, 64>"), "sm_90")
    assert build.info.ok, build.info.log
    assert build.info.lowered_name == "_Z1kIdLi64EEvPT_"


def test_kernels_in_namespaces_are_qualified() -> None:
    text = "namespace a { namespace b {\n__global__ void k(float* x) { x[0] = 1; }\n} }\n"
    model = analyze_text(text)
    assert qualified_name(text, model.kernels[0].base, "k") == "a::b::k"


def test_build_cache_hits_on_same_source(tmp_path: object) -> None:
    cache = nvbuild.BuildCache(str(tmp_path))
    src = Source("__global__ void k(float* x) { x[0] = 2; }\n", "k")
    first = nvbuild.build(src, "sm_90", cache)
    again = nvbuild.build(src, "sm_90", nvbuild.BuildCache(str(tmp_path)))
    assert first.info.ok and not first.info.cached
    assert again.info.cached and again.cubin == first.cubin


def test_ptxas_report_is_parsed_per_entry() -> None:
    log = (
        "ptxas info    : Compiling entry function 'a' for 'sm_90'\n"
        "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem\n"
        "ptxas info    : Compiling entry function 'b' for 'sm_90'\n"
        "ptxas info    : Used 12 registers, used 0 barriers\n"
    )
    assert nvbuild.parse_ptxas(log, "a") == {
        "registers": 255,
        "shared_bytes": 4096,
        "stack_bytes": 8,
        "spill_stores": 4,
        "spill_loads": 4,
    }
    assert nvbuild.parse_ptxas(log, "b")["registers"] == 12


@needs_nvcc
def test_nvcc_fallback_builds_plain_kernels() -> None:
    src = Source(device_source((EXAMPLES / "vector_ops.cu").read_text()).text, "saxpy", "vector_ops.cu")
    build = nvbuild._build_nvcc(src, src.text, "sm_90", "nvcc")
    assert build.info.ok, build.info.log
    assert build.info.lowered_name == "_Z5saxpyifPKfPf"
    assert build.info.registers is not None


def test_a_compiler_past_its_limit_is_killed_with_its_children(tmp_path: Path) -> None:
    import subprocess
    import time

    marker = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {marker}; wait"
    t0 = time.perf_counter()
    with pytest.raises(subprocess.TimeoutExpired):
        nvbuild.run_group(["sh", "-c", script], 0.5)
    assert time.perf_counter() - t0 < 10
    child = int(marker.read_text())
    # The compiler's child is gone, or a zombie waiting to be reaped: it no longer runs.
    for _ in range(50):
        stat = Path(f"/proc/{child}/stat")
        if not stat.exists() or stat.read_text().split(")")[-1].split()[0] in ("Z", "X"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"process {child} still runs after its compiler's limit")
