"""Kernels as they live in real repositories: local headers, host-only includes, project flags, nvcc fallback.

Each fixture under tests/fixtures/realworld reproduces one failure class seen on public CUDA code (issue 17).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, needs_nvcc
from warpwise.verify import project
from warpwise.verify.extract import device_source
from warpwise.verify.gate import Candidate, PreparedJob, prepare
from warpwise.verify.types import Options
from warpwise.verify.worker import nvbuild

REAL = FIXTURES / "realworld"


def _build(path: Path, kernel: str, flags: project.BuildFlags | None = None) -> nvbuild.Build:
    """Prepare `kernel` of `path` compile-only and build the original."""
    c = Candidate.from_files(str(path), kernel, str(path))
    if flags is not None:
        c = Candidate(c.original_path, c.original_text, kernel, c.candidate_text, c.candidate_path, flags=flags)
    prepared = prepare(c, Options(compile_only=True))
    assert isinstance(prepared, PreparedJob), prepared
    return nvbuild.build(prepared.job.original, "sm_90")


def test_local_header_is_inlined_with_its_macros_typedefs_and_helpers() -> None:
    path = REAL / "local_header" / "norms.cu"
    dev = device_source(path.read_text(), "norms.cu", path=path)
    assert dev.headers == (str((REAL / "local_header" / "common.h").resolve()),)
    assert "#define WARP_SIZE 32" in dev.text and "typedef float floatX;" in dev.text
    assert "cudaGetErrorString" not in dev.text, "the header's host function is blanked"
    assert {"cuda.h", "cublas_v2.h", "iostream", "cstdio"} <= set(dev.dropped_includes)
    # The file keeps its own line numbers after the inlined header.
    body = dev.text.split('#line 5 "norms.cu"\n', 1)[1]
    assert body.splitlines()[2].startswith("__global__ void row_max_sq")
    assert '#include "common.h"' in dev.host_text or "#define WARP_SIZE" in dev.host_text


def test_local_header_cuda_h_cublas_infinity_and_uint_build_with_nvrtc() -> None:
    build = _build(REAL / "local_header" / "norms.cu", "row_max_sq")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc", build.info.builder_reason


def test_bits_stdcpp_and_main_build_with_nvrtc() -> None:
    build = _build(REAL / "stdcpp_main.cu", "phase")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc"


def test_header_that_cannot_be_found_is_named() -> None:
    from warpwise.verify.backends import make_backend
    from warpwise.verify.gate import Gate
    from warpwise.verify.types import Status

    path = REAL / "missing_header.cu"
    backend = make_backend("compile-only")
    try:
        result = Gate(backend).verify(Candidate.from_files(str(path), "scale", str(path)), Options(compile_only=True))
    finally:
        backend.close()
    assert result.status is Status.COMPILE_FAILED
    assert "`not_there.h` included by" in result.message and "missing_header.cu" in result.message


@needs_nvcc
def test_nvcc_builds_what_nvrtc_cannot_and_says_why() -> None:
    build = _build(REAL / "driver_type.cu", "fill")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvcc"
    assert build.info.builder_reason.startswith("NVRTC failed (")
    assert "CUdeviceptr" in build.info.builder_reason


@needs_nvcc
def test_nvcc_fallback_instantiates_a_template_kernel(tmp_path: Path) -> None:
    src = tmp_path / "t.cu"
    src.write_text(
        "#include <cuda.h>\nnamespace ops {\ntemplate <typename T, int N>\n"
        "__global__ void fill(CUdeviceptr p, T v) { reinterpret_cast<T*>(p)[threadIdx.x % N] = v; }\n}\n"
        "int main() { return 0; }\n"
    )
    from warpwise.verify.types import Source

    dev = device_source(src.read_text(), "t.cu", path=src)
    build = nvbuild.build(Source(dev.text, "ops::fill<float, 32>", "t.cu", host_text=dev.host_text), "sm_90")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvcc"
    assert build.info.lowered_name == "_ZN3ops4fillIfLi32EEEvyT_"


def test_pyproject_config_gives_defines_and_include_dirs() -> None:
    path = REAL / "configured" / "blocked.cu"
    flags = project.flags_for(path)
    assert flags.defines == ("BLOCK=128",)
    assert flags.include_dirs == (str((REAL / "configured" / "include").resolve()),)
    assert "pyproject.toml" in flags.describe()
    build = _build(path, "block_sum")
    assert build.info.ok, build.info.log


def test_without_the_define_the_file_hits_its_own_error(tmp_path: Path) -> None:
    src = tmp_path / "blocked.cu"
    src.write_text((REAL / "configured" / "blocked.cu").read_text().replace("#include <tile.cuh>\n", ""))
    build = _build(src, "block_sum")
    assert not build.info.ok
    assert "BLOCK must be defined" in build.info.log


def test_cli_define_builds_the_file(tmp_path: Path) -> None:
    src = tmp_path / "blocked.cu"
    src.write_text((REAL / "configured" / "blocked.cu").read_text())
    flags = project.cli_flags([str(REAL / "configured" / "include")], ["BLOCK=64"])
    assert flags.describe() == "flags from the command line"
    build = _build(src, "block_sum", project.flags_for(src, cli=flags))
    assert build.info.ok, build.info.log


def test_compile_commands_gives_the_files_own_flags() -> None:
    path = REAL / "cmake_project" / "src" / "tiled.cu"
    flags = project.flags_for(path)
    assert flags.defines == ("TILE=16",)
    assert flags.include_dirs == (str((REAL / "cmake_project" / "inc").resolve()),)
    assert flags.arch == "sm_90"
    assert "compile_commands.json (entry for tiled.cu)" in flags.describe()
    build = _build(path, "tiled_copy")
    assert build.info.ok, build.info.log


def test_malformed_compile_commands_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "compile_commands.json").write_text("[{not json")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    flags = project.flags_for(src)
    assert len(flags.problems) == 1
    assert "compile_commands.json" in str(flags.problems[0]) and "not valid JSON" in str(flags.problems[0])
    (tmp_path / "compile_commands.json").write_text(json.dumps([{"file": "k.cu"}]))
    problems = project.flags_for(src).problems
    assert problems and "neither `arguments`" in str(problems[0])


@pytest.mark.parametrize(
    ("table", "key", "words"),
    [
        ('include-dirs = "inc"\ndefines = 3', "tool.warpwise.defines", "list of strings"),
        ('std = "c++99"', "tool.warpwise.std", "c++17"),
        ("arch = 90", "tool.warpwise.arch", "must be a string"),
        ('selct = ["x"]', "tool.warpwise.selct", "not a warpwise setting"),
    ],
)
def test_config_key_of_the_wrong_type_is_named(tmp_path: Path, table: str, key: str, words: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.warpwise]\n{table}\n")
    config = project.load_config(tmp_path / "pyproject.toml")
    assert any(p.key == key and words in p.message for p in config.problems), config.problems
    # The one line the user sees names the file and the key.
    line = next(str(p) for p in config.problems if p.key == key)
    assert line.startswith(str(tmp_path / "pyproject.toml")) and f"`{key}`" in line


def test_warpwise_toml_is_found_walking_up_and_beats_pyproject_without_the_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "warpwise.toml").write_text('defines = ["A=1"]\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert project.find_config(deep / "k.cu") == tmp_path / "warpwise.toml"
    assert project.flags_for(deep / "k.cu").defines == ("A=1",)


def test_editor_settings_map_onto_the_same_model(tmp_path: Path) -> None:
    flags = project.flags_from_mapping({"includeDirs": [str(tmp_path)], "defines": ["X=2"]}, "editor settings")
    assert flags.include_dirs == (str(tmp_path.resolve()),) and flags.defines == ("X=2",)
    assert flags.describe() == "flags from editor settings"


def test_torch_extension_dispatch_gives_every_dtype() -> None:
    from warpwise.verify.gate import kernel_instantiations

    path = REAL / "torch_ext" / "add_one.cu"
    assert kernel_instantiations(path.read_text(), str(path), "add_one") == [("double",), ("float",), ("at::Half",)]


@pytest.mark.parametrize(
    ("macro", "args", "types"),
    [
        ("AT_DISPATCH_FLOATING_TYPES", ["x.scalar_type()", '"op"', "[&] {}"], ("double", "float")),
        (
            "AT_DISPATCH_FLOATING_TYPES_AND",
            ["at::ScalarType::BFloat16", "t", '"op"'],
            ("double", "float", "at::BFloat16"),
        ),
        (
            "AT_DISPATCH_FLOATING_TYPES_AND2",
            ["at::kHalf", "at::kBFloat16", "t"],
            ("double", "float", "at::Half", "at::BFloat16"),
        ),
        ("AT_DISPATCH_SOMETHING_ELSE", ["t"], None),
    ],
)
def test_dispatch_macros_bind_scalar_t(macro: str, args: list[str], types: tuple[str, ...] | None) -> None:
    from warpwise.verify.torchext import dispatch_of

    assert dispatch_of(macro, args) == types


@pytest.mark.parametrize("dtype", ["double", "float", "at::Half", "at::BFloat16"])
def test_every_dispatched_dtype_of_a_torch_extension_builds_with_nvrtc(dtype: str) -> None:
    from dataclasses import replace

    path = REAL / "torch_ext" / "add_one.cu"
    prepared = prepare(Candidate.from_files(str(path), "add_one", str(path)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob), prepared
    build = nvbuild.build(replace(prepared.job.original, name_expression=f"add_one<{dtype}>"), "sm_90")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc"
    # The shim's c10::Half mangles as torch's own, so a build by nvcc against torch loads the same name.
    if dtype == "at::Half":
        assert build.info.lowered_name == "_Z7add_oneIN3c104HalfEEvPKT_PS2_i"


@pytest.mark.parametrize("dtype", ["float", "at::Half"])
def test_atens_gpu_atomic_add_and_clocks_per_sec_build_with_nvrtc(dtype: str) -> None:
    from dataclasses import replace

    path = REAL / "torch_ext" / "scatter_add.cu"
    prepared = prepare(Candidate.from_files(str(path), "scatter_add", str(path)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob), prepared
    build = nvbuild.build(replace(prepared.job.original, name_expression=f"scatter_add<{dtype}>"), "sm_90")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc"


def test_torch_extension_without_torch_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from warpwise.verify import torchext

    monkeypatch.setattr(torchext, "torch_flags", lambda: "torch is not importable here (ImportError: no torch)")
    path = REAL / "torch_ext" / "add_one.cu"
    prepared = prepare(Candidate.from_files(str(path), "add_one", str(path)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob)
    assert (
        prepared.torch_note
        == "add_one.cu includes torch's headers: torch is not importable here (ImportError: no torch)"
    )


def test_template_kernel_in_a_cuh_is_instantiated_from_the_file_that_includes_it() -> None:
    from warpwise.verify.gate import kernel_instantiations

    path = REAL / "header_kernels" / "reduce.cuh"
    assert kernel_instantiations(path.read_text(), str(path), "block_reduce") == [("float", "128")]
    build = _build(path, "block_reduce")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc" and build.info.shared_bytes == 512


def test_a_constexpr_helper_without_device_is_kept_for_device_code(tmp_path: Path) -> None:
    src = tmp_path / "c.cu"
    src.write_text(
        "constexpr int pad(int x) { return (x + 31) / 32 * 32; }\n"
        "__global__ void k(float* x) { __shared__ float s[pad(40)]; s[threadIdx.x] = 1; x[0] = s[0]; }\n"
    )
    build = _build(src, "k")
    assert build.info.ok and build.info.builder == "nvrtc", build.info.log


def test_a_template_kernel_instantiated_through_a_host_template_builds_with_nvrtc(tmp_path: Path) -> None:
    src = tmp_path / "t.cu"
    src.write_text(
        "template <typename Traits> __global__ void k(float* x) { x[threadIdx.x] = Traits::value; }\n"
        "struct One { static constexpr float value = 1.0f; };\n"
        "template <typename Traits> void launch(float* x) { auto kernel = &k<Traits>; kernel<<<1, 32>>>(x); }\n"
        "template void launch<One>(float*);\n"
    )
    build = _build(src, "k")
    assert build.info.ok, build.info.log
    # `launch<One>` is instantiated explicitly, so `k<One>` is the instance the file makes (nvcc would build it).
    assert build.info.builder == "nvrtc", build.info.builder_reason
    assert build.info.lowered_name == "_Z1kI3OneEvPf"


@needs_nvcc
def test_flags_nvcc_rejects_are_a_compile_failure_naming_the_flag() -> None:
    flags = project.BuildFlags(nvcc_flags=("--no-such-flag",), origins=("test",))
    build = _build(REAL / "driver_type.cu", "fill", flags)
    assert not build.info.ok
    assert "--no-such-flag" in build.info.log
    assert build.info.builder == "nvcc" and "nvcc failed too" in build.info.builder_reason


def test_a_launch_inside_a_template_host_function_does_not_fix_the_arguments() -> None:
    from warpwise.verify.gate import kernel_instantiations

    text = (
        "template <typename T> __global__ void k(T* x) {}\n"
        "template <typename T, int W> void host(T* x) { k<T><<<1, W>>>(x); }\n"
    )
    assert kernel_instantiations(text, "a.cu", "k") == [("?",)]
    assert kernel_instantiations(text + "void h(float* x) { k<float><<<1, 1>>>(x); }\n", "a.cu", "k") == [("float",)]


def test_a_host_class_with_std_containers_is_blanked(tmp_path: Path) -> None:
    src = tmp_path / "g.cu"
    src.write_text(
        "#include <vector>\n#include <tuple>\nclass Graph {\n public:\n  std::vector<std::tuple<int, int>> labels;\n};\n"
        "struct Params { int n; float scale; };\n"
        "__global__ void k(Params p, float* x) { x[threadIdx.x] = p.scale * p.n; }\n"
    )
    dev = device_source(src.read_text(), "g.cu", path=src)
    assert "class Graph" not in dev.text and "struct Params" in dev.text
    build = _build(src, "k")
    assert build.info.ok and build.info.builder == "nvrtc", build.info.log


def test_template_arguments_that_are_a_host_functions_local_names_are_read_through_its_aliases() -> None:
    from warpwise.verify.gate import kernel_instantiations

    text = (
        "template <typename T, typename A> __global__ void k(T* x) {}\n"
        "struct Traits {};\n"
        "void h(float* x, int m) {\n  using acc_t = double;\n  k<float, acc_t><<<1, 1>>>(x);\n}\n"
    )
    # `acc_t` is local to `h`: its `using` gives it (`warpwise.verify.instances`).
    assert kernel_instantiations(text, "a.cu", "k") == [("float", "double")]
    unknown = text.replace("  using acc_t = double;\n", "")
    assert kernel_instantiations(unknown, "a.cu", "k") == [("float", "?")]
    with_type = text.replace("k<float, acc_t>", "k<float, Traits>")
    assert kernel_instantiations(with_type, "a.cu", "k") == [("float", "Traits")]


@needs_nvcc
def test_a_header_kernel_only_an_includers_macro_instantiates_is_built_by_nvcc_through_that_includer() -> None:
    # `scale_rows.cuh` makes no instance; `scale_rows_8.cu` includes it and instantiates `scale_rows<HalfScale, 8>`
    # through a macro of `row_traits.h`, which both include (inlined once).
    path = REAL / "includer_macro" / "scale_rows.cuh"
    text = path.read_text()
    prepared = prepare(Candidate(str(path), text, "scale_rows", text, str(path)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob)
    source = prepared.job.original
    assert "?" in source.name_expression
    assert source.host_origin == "`scale_rows_8.cu`"
    assert source.host_text.count("struct HalfScale") == 1
    build = nvbuild.build(source, "sm_90")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvcc"
    assert "so nvcc built the instances `scale_rows_8.cu`, which includes the file, makes" in build.info.builder_reason
    assert "9HalfScaleLi8E" in (build.info.lowered_name or "")


@needs_nvcc
def test_a_header_kernel_included_only_by_a_host_template_header_is_built_through_the_cu_that_includes_that() -> None:
    path = REAL / "includer_chain" / "shift_kernel.cuh"
    text = path.read_text()
    prepared = prepare(Candidate(str(path), text, "shift_rows", text, str(path)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob)
    source = prepared.job.original
    assert source.host_origin == "`shift_3.cu` (through `shift_launch.cuh`)"
    # The header stands where the host template includes it: after the template's own `<vector>`.
    assert source.host_text.index("<vector>") < source.host_text.index("__global__ void shift_rows")
    build = nvbuild.build(source, "sm_90")
    assert build.info.ok, build.info.log
    assert build.info.lowered_name == "_Z10shift_rowsILi3EEvPKiPii"
