"""The gate builds what nvcc builds: the failure classes of the real-projects corpus (issue 17, part A).

Each fixture under tests/fixtures/realworld is our own minimal reproduction of one class that kept the gate from
building kernels nvcc builds from their repository: template arguments named by a dispatch lambda's locals,
`std::` math in device code, template kernels of a header instantiated by the files that include it, host-only
`std::` state next to device code, cuRAND's device headers, and host code tree-sitter cannot parse.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from warpwise.verify.extract import device_source, missing_hint
from warpwise.verify.gate import Candidate, PreparedJob, kernel_instantiations, prepare
from warpwise.verify.types import Options
from warpwise.verify.worker import nvbuild

REAL = FIXTURES / "realworld"


def _prepared(path: Path, kernel: str) -> PreparedJob:
    """Prepare `kernel` of `path` compile-only."""
    prepared = prepare(Candidate.from_files(str(path), kernel, str(path)), Options(compile_only=True))
    assert isinstance(prepared, PreparedJob), prepared
    return prepared


def _build(path: Path, kernel: str, name: str | None = None) -> nvbuild.Build:
    """Build the original of `kernel` (with the name expression `name` when given)."""
    source = _prepared(path, kernel).job.original
    return nvbuild.build(source if name is None else replace(source, name_expression=name), "sm_90")


def test_a_dispatch_lambdas_aliases_and_constants_are_bound_per_dtype() -> None:
    path = REAL / "torch_ext" / "vector_loss.cu"
    found = kernel_instantiations(path.read_text(), str(path), "vector_loss")
    # The lambda's own `VEC` wins over the function's; `accscalar_t` and `scalar_t` take each dispatched dtype.
    assert found == [
        ("(sizeof(packed_t) / sizeof(double))", "double", "at::acc_type<double, true>"),
        ("(sizeof(packed_t) / sizeof(float))", "float", "at::acc_type<float, true>"),
        ("(sizeof(packed_t) / sizeof(at::Half))", "at::Half", "at::acc_type<at::Half, true>"),
    ]


@pytest.mark.parametrize("dtype", ["double", "float", "at::Half"])
def test_every_dtype_of_a_kernel_with_lambda_local_arguments_builds_with_nvrtc(dtype: str) -> None:
    path = REAL / "torch_ext" / "vector_loss.cu"
    name = f"vector_loss<(sizeof(packed_t) / sizeof({dtype})), {dtype}, at::acc_type<{dtype}, true>>"
    build = _build(path, "vector_loss", name)
    assert build.info.ok, build.info.log
    # `::pow(double, float)` and `std::log1p` are what <cmath> gives device code; the shim gives them to NVRTC.
    assert build.info.builder == "nvrtc", build.info.builder_reason


def test_std_math_and_mixed_pow_are_shimmed_only_when_device_code_uses_them(tmp_path: Path) -> None:
    src = tmp_path / "m.cu"
    src.write_text("#include <cmath>\n__global__ void k(double* x, float g) { x[0] = std::log(::pow(x[1], g)); }\n")
    dev = device_source(src.read_text(), "m.cu", path=src)
    assert "using ::log;" in dev.text and "__warpwise_float<T>::type pow(double a, T b)" in dev.text
    plain = device_source("#include <cmath>\n__global__ void k(float* x) { x[0] = 1; }\n", "p.cu")
    assert "using ::log;" not in plain.text
    build = _build(src, "k")
    assert build.info.ok and build.info.builder == "nvrtc", build.info.log


def test_a_header_kernel_takes_its_instances_from_the_file_that_instantiates_its_host_template() -> None:
    from warpwise.verify import includers

    header = REAL / "traits_header" / "scan_kernel.cuh"
    text = header.read_text()
    # Alone, the header names no instance; `scan_fp32.cu` instantiates `scan_cuda<float>`, which launches it.
    assert kernel_instantiations(text, str(header), "scan_kernel") == [("ScanTraits<128, float>",)]
    assert includers.origin(str(header), text, "scan_kernel") == str(REAL / "traits_header" / "scan_fp32.cu")
    build = _build(header, "scan_kernel")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc" and build.info.shared_bytes == 512, build.info.builder_reason


def test_a_header_without_includers_keeps_its_unknown_arguments(tmp_path: Path) -> None:
    header = tmp_path / "lonely.cuh"
    header.write_text((REAL / "traits_header" / "scan_kernel.cuh").read_text())
    assert kernel_instantiations(header.read_text(), str(header), "scan_kernel") == [("?",)]


def test_host_only_std_state_next_to_device_code_is_blanked() -> None:
    path = REAL / "host_std" / "clear.cu"
    dev = device_source(path.read_text(), "clear.cu", path=path)
    assert "tune_results" not in dev.text.split("__global__")[0], "the std::map global is host-only"
    assert "std::hash" not in dev.text and "__global__ void clear" in dev.text
    build = _build(path, "clear")
    assert build.info.ok and build.info.builder == "nvrtc", build.info.log


def test_curand_device_headers_in_an_include_folder_stay_an_include(tmp_path: Path) -> None:
    lib = tmp_path / "curand_headers"
    lib.mkdir()
    # Our stand-ins: the library's device header uses its host header's enum and a `QUALIFIERS` macro function.
    (lib / "curand.h").write_text("#pragma once\nenum curandStatus { CURAND_STATUS_SUCCESS = 0 };\n")
    (lib / "curand_kernel.h").write_text(
        '#pragma once\n#include "curand.h"\n#define QUALIFIERS static __forceinline__ __device__\n'
        "QUALIFIERS unsigned int curand_stub(unsigned int* s) { return *s = *s * 1664525u + 1013904223u; }\n"
    )
    src = tmp_path / "r.cu"
    src.write_text("#include <curand_kernel.h>\n__global__ void k(unsigned* s) { s[1] = curand_stub(s); }\n")
    dev = device_source(src.read_text(), "r.cu", path=src, user_include_dirs=[str(lib)])
    # Inlined, its `QUALIFIERS` function would be blanked as host code and `curand.h` dropped as host-only.
    assert "#include <curand_kernel.h>" in dev.text and "curand_stub(unsigned" not in dev.text
    assert "curand.h" not in dev.dropped_includes


def test_curand_headers_found_nowhere_are_named_with_what_to_install(tmp_path: Path) -> None:
    src = tmp_path / "r.cu"
    src.write_text("#include <curand_kernel.h>\n__global__ void k(float* x) { x[0] = 1; }\n")
    dev = device_source(src.read_text(), "r.cu", include_dirs=[str(tmp_path / "no-toolkit")], path=src)
    assert dev.missing_headers == ("curand_kernel.h",)
    hint = missing_hint("curand_kernel.h", [str(tmp_path / "no-toolkit")])
    assert hint.startswith("`curand_kernel.h` (cuRAND's device API) is not in the CUDA toolkit's include folders")
    assert "nvidia-curand" in hint and str(tmp_path / "no-toolkit") in hint


def test_macro_qualifiers_and_host_libraries_tree_sitter_misreads_build_with_nvrtc() -> None:
    path = REAL / "macro_header" / "scale.cu"
    dev = device_source(path.read_text(), "scale.cu", path=path)
    # fmt and nlohmann's JSON are host-only libraries: dropped, never inlined.
    assert {"fmt/format.h", "json/json.hpp"} <= set(dev.dropped_includes)
    # Members whose qualifier is a macro stay; host members and aliases of host-only types are blanked or stubbed.
    assert "HOST_DEVICE pair2(T x, T y)" in dev.text and "T twice(T x) { return x + x; }" in dev.text
    assert "copy_from_host" not in dev.text and "struct json {};" in dev.text
    assert "alignas(8) unsigned char m_owner[16];" in dev.text and "class Base {};" in dev.text
    # The multi-line macro keeps its continuations; that the header's macros were masked to parse it is said.
    assert dev.parse_errors == ("common.h: parsed with its qualifier and member-list macros masked",)
    assert "} while (0)" in dev.text
    build = _build(path, "scale")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc", build.info.builder_reason


def test_atens_philox_seed_state_builds_with_nvrtc() -> None:
    build = _build(REAL / "torch_ext" / "dropout_mask.cu", "dropout_mask")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc", build.info.builder_reason


def test_a_projects_own_dispatch_switch_gives_one_instance_per_case() -> None:
    path = REAL / "macro_dispatch" / "mean.cu"
    # Each case of the macro declares `scalar_t_0`; the macro's arguments declare `acc_t` before the launch.
    assert kernel_instantiations(path.read_text(), str(path), "row_mean") == [("float", "double"), ("double", "double")]
    build = _build(path, "row_mean", "row_mean<double, double>")
    assert build.info.ok and build.info.builder == "nvrtc", build.info.log


def test_an_instance_table_macro_gives_its_calls_arguments() -> None:
    path = REAL / "macro_dispatch" / "mean.cu"
    assert kernel_instantiations(path.read_text(), str(path), "row_copy") == [("1",), ("4",)]
    build = _build(path, "row_copy")
    assert build.info.ok and build.info.builder == "nvrtc", build.info.log


def test_atens_half_mixes_with_int_in_every_operator() -> None:
    build = _build(REAL / "torch_ext" / "half_merge.cu", "half_merge", "half_merge<at::Half>")
    assert build.info.ok and build.info.builder == "nvrtc", build.info.log


def test_a_launch_table_macro_given_the_kernel_and_a_header_type_gives_its_instances() -> None:
    path = REAL / "macro_dispatch" / "sum.cu"
    # `Fp32IO` is defined in a local header, so the instance means something where the kernel is built.
    assert kernel_instantiations(path.read_text(), str(path), "block_sum") == [("Fp32IO", "64"), ("Fp32IO", "128")]
    build = _build(path, "block_sum")
    assert build.info.ok and build.info.builder == "nvrtc" and build.info.shared_bytes == 256, build.info.log


def test_a_dispatch_macro_from_an_include_folder_is_found_through_the_projects_include_dirs(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "inc" / "dispatch.h").write_text((REAL / "macro_dispatch" / "dispatch.h").read_text())
    src = tmp_path / "src" / "mean.cu"
    src.write_text((REAL / "macro_dispatch" / "mean.cu").read_text())
    assert kernel_instantiations(src.read_text(), str(src), "row_mean") == [("?", "?")]
    found = kernel_instantiations(src.read_text(), str(src), "row_mean", None, (str(tmp_path / "inc"),))
    assert found == [("float", "double"), ("double", "double")]


def test_c10_complex_and_math_constants_build_with_nvrtc() -> None:
    build = _build(REAL / "torch_ext" / "complex_exp.cu", "complex_exp")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc", build.info.builder_reason


def test_cubs_umbrella_header_keeps_its_block_level_and_builds_with_nvrtc() -> None:
    path = REAL / "cub_umbrella" / "block_sum.cu"
    dev = device_source(path.read_text(), str(path), path=path)
    # The device-wide algorithms (host launch code NVRTC rejects) and the host allocator are left out.
    assert "#include <cub/block/block_reduce.cuh>" in dev.text
    assert "cub/device/" not in dev.text and "util_allocator" not in dev.text
    assert "cub/cub.cuh (its cub/device/ headers)" in dev.dropped_includes
    build = _build(path, "block_sum")
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc", build.info.builder_reason


@pytest.mark.parametrize("dtype", ["double", "float", "at::Half"])
def test_host_type_aliases_a_using_declared_acc_type_and_at_numeric_limits_build_with_nvrtc(dtype: str) -> None:
    path = REAL / "torch_ext" / "masked_max.cu"
    found = kernel_instantiations(path.read_text(), str(path), "masked_max")
    # `acc_type` is unqualified, but `using at::acc_type;` declares it at file scope: a name NVRTC can use.
    assert (dtype, f"acc_type<{dtype}, true>") in found
    build = _build(path, "masked_max", f"masked_max<{dtype}, acc_type<{dtype}, true>>")
    # `using TensorList = at::TensorList;` is host-only and blanked; `at::numeric_limits` comes from the shim.
    assert build.info.ok, build.info.log
    assert build.info.builder == "nvrtc", build.info.builder_reason
