"""Quoted includes the build finds through an include folder nobody told warpwise about: looked up in the project."""

from __future__ import annotations

from tests.conftest import FIXTURES
from warpwise.verify.instances import project_header
from warpwise.verify.spec import ProblemSpec, SpecMissing, resolve_spec
from warpwise.verify.torchspec import DEFAULT_SHAPES

PROJECT = FIXTURES / "realworld" / "project_header"


def _spec(name: str, kernel: str) -> ProblemSpec | SpecMissing:
    path = PROJECT / "ops" / "fused" / name
    return resolve_spec(str(path), path.read_text(), kernel)


def test_a_header_in_another_folder_of_the_project_is_found_by_its_path() -> None:
    path = PROJECT / "ops" / "fused" / "axpy_kernel.cu"
    assert project_header(path, "dtype_switch.h") == PROJECT / "common" / "dtype_switch.h"
    assert project_header(path, "no_such_header.h") is None


def test_two_headers_of_one_name_are_ambiguous_and_neither_is_read() -> None:
    assert project_header(PROJECT / "ops" / "fused" / "ambiguous.cu", "twice.h") is None


def test_the_dispatch_macro_of_a_project_header_binds_the_numbered_type_names() -> None:
    spec = _spec("axpy_kernel.cu", "axpy_kernel")
    assert isinstance(spec, ProblemSpec), spec
    assert {b.name: b.dtype for b in spec.run.buffers} == {"src": "f32", "dst": "f32"}
    assert spec.template_args == ("float", "float")
    assert any("`real_0` is float" in n for n in spec.notes)
    assert any("`real_1` is float" in n for n in spec.notes)


def test_an_ambiguous_header_leaves_its_macro_names_unbound() -> None:
    spec = _spec("ambiguous.cu", "fill_kernel")
    assert isinstance(spec, SpecMissing)
    assert "element type of `out` (elem_t)" in spec.missing


def test_a_macro_argument_holding_statements_still_binds_the_names_the_macro_declares() -> None:
    path = PROJECT / "ops" / "channel_sum.cu"
    spec = resolve_spec(str(path), path.read_text(), "channel_sum_kernel")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.template_args == ("float", "double")
    # `rows = in.numel() / channels` reads `in` as rows of channels (rank 2), so `in.size(in.dim() - 1)` is the
    # rank-2 representative's last dimension.
    rows, channels = DEFAULT_SHAPES[2]
    assert {b.name: (b.dtype, b.count) for b in spec.run.buffers} == {
        "in": ("f32", rows * channels),
        "sums": ("f64", channels),
    }
    assert {a.param: a.value for a in spec.run.args if a.buffer is None} == {"rows": rows, "channels": channels}
    assert spec.run.original_geometry.grid == (channels // 128, 1, 1)
