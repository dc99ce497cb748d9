"""Run specs through a launcher's callers, and host code read in order (straight-line assignments, dim3 fields)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from warpwise.verify.callers import project_root
from warpwise.verify.spec import ProblemSpec, SpecMissing, resolve_spec
from warpwise.verify.torchspec import DEFAULT_SHAPES
from warpwise.verify.types import Role

CALLERS = FIXTURES / "realworld" / "callers"


def _spec(kernel: str) -> ProblemSpec | SpecMissing:
    path = CALLERS / "csrc" / "scale.cu"
    return resolve_spec(str(path), path.read_text(), kernel)


def test_the_project_root_is_the_nearest_folder_with_a_build_file() -> None:
    assert project_root(CALLERS / "csrc" / "scale.cu") == CALLERS.resolve()


def test_a_launcher_taking_raw_pointers_is_read_through_its_torch_caller_in_another_file() -> None:
    spec = _spec("scale_rows_kernel")
    assert isinstance(spec, ProblemSpec), spec
    rows, cols = DEFAULT_SHAPES[2]
    # `x.sizes() == y.sizes()`: both get the rank-2 representative shape the binding's size queries ask for.
    assert [(b.name, b.dtype, b.count, b.role) for b in spec.run.buffers] == [
        ("in", "f32", rows * cols, Role.IN),
        ("out", "f32", rows * cols, Role.OUT),
    ]
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    # `start = 3; start += 8;` in the caller, then `first = start / 8 * 8` in the launcher: 8.
    assert args == {"rows": rows, "cols": cols, "start": 8}
    # `block.x = THREADS; grid.x = DIVIDE(count, THREADS); grid.y = rows;` with the macros of util.cuh.
    assert spec.run.original_geometry.block == (128, 1, 1)
    assert spec.run.original_geometry.grid == (1, rows, 1)
    assert "`scale_rows_cuda()` in `scale_rows()` (ext_scale.cpp, line 18)" in spec.origin
    assert any(
        "`count` is an integer parameter of `scale_rows()`; using the representative value 1" in n for n in spec.notes
    )
    assert any("tensor `x` of shape" in n for n in spec.notes)


def test_a_launcher_nobody_calls_keeps_its_spec_missing_with_the_pieces_and_an_annotation() -> None:
    spec = _spec("orphan_kernel")
    assert isinstance(spec, SpecMissing)
    assert "size of `x` (passed `x`: no cudaMalloc before the launch)" in spec.missing
    assert "value of `n` (passed `n`)" in spec.missing
    assert spec.annotation.lstrip().startswith("// warpwise:") and "x:inout[?]" in spec.annotation


_ORDERED = """
__global__ void k(float* y, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.0f; }}
int main(int argc, char** argv) {{
  int n = 1024;
  int block = 64;
  {branch}
  n *= 4;
  float* y;
  cudaMalloc(&y, n * sizeof(float));
  dim3 grid;
  grid.x = (n + block - 1) / block;
  k<<<grid, block>>>(y, n);
  return 0;
}}
"""


def test_straight_line_assignments_are_applied_in_order() -> None:
    spec = resolve_spec("o.cu", _ORDERED.format(branch=""), "k")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.run.buffers[0].count == 4096
    assert spec.run.original_geometry.grid == (64, 1, 1) and spec.run.original_geometry.block == (64, 1, 1)


def test_an_assignment_in_a_branch_makes_the_name_unknown() -> None:
    spec = resolve_spec("o.cu", _ORDERED.format(branch="if (argc > 1) { block = 128; }"), "k")
    assert isinstance(spec, SpecMissing)
    assert "block (`block`)" in spec.missing and "grid (`grid`)" in spec.missing


def test_a_launch_beyond_cudas_grid_limits_is_spec_missing_not_a_failed_run() -> None:
    text = _ORDERED.format(branch="").replace("grid.x = (n + block - 1) / block;", "grid.y = 70000;")
    spec = resolve_spec("o.cu", text, "k")
    assert isinstance(spec, SpecMissing)
    assert "grid (1, 70000) exceeds CUDA's limits" in spec.message


def test_a_representative_that_leaves_the_launch_empty_is_replaced_by_distinct_values() -> None:
    # `for (r = first; r < last; r++)` with `first == last == 1` launches `last - r == 0` rows: an empty grid.
    # The caller's integers then take 1, 2, ...: `first` 1 and `last` 2, one row.
    path = FIXTURES / "realworld" / "loop_caller" / "csrc" / "rowsub.cu"
    spec = resolve_spec(str(path), path.read_text(), "rowsub_kernel")
    assert isinstance(spec, ProblemSpec), spec
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    assert args == {"rows": 1, "cols": DEFAULT_SHAPES[2][1]}
    assert spec.run.original_geometry.grid == (DEFAULT_SHAPES[2][1] // 32, 1, 1)
    assert "left the launch empty or past CUDA's limits" in spec.notes[0]
    assert "take 1, 2, 3" in spec.notes[0]


def test_a_template_launchers_types_are_deduced_from_the_calls_arguments_through_comments_with_commas() -> None:
    path = CALLERS / "csrc" / "norm_grad.cu"
    spec = resolve_spec(str(path), path.read_text(), "sum_parts")
    assert isinstance(spec, ProblemSpec), spec
    n = DEFAULT_SHAPES[2][1]
    # `V` from `grad.data_ptr<double>()` (and the conditional `out`), `U` from `partial.data_ptr<float>()`.
    assert spec.template_args == ("float", "double")
    assert [(b.name, b.dtype, b.count) for b in spec.run.buffers] == [("parts", "f32", 16 * n), ("out", "f64", n)]
    assert "through the call of `host_sum_parts()`" in spec.origin


def test_arguments_that_deduce_two_types_for_one_parameter_give_no_deduction() -> None:
    from warpwise.verify.callers import _deduced

    decls = [("const V* grad", "grad"), ("V* out", "out"), ("int n", "n")]
    assert _deduced("V", decls, ["g.data_ptr<double>()", "p ? o->data_ptr<double>() : nullptr", "4"], {}) == "double"
    assert _deduced("V", decls, ["g.data_ptr<double>()", "o.data_ptr<float>()", "4"], {}) is None
    assert _deduced("V", decls, ["g", "o", "4"], {}) is None


def test_a_launcher_called_as_a_declarations_initialiser_is_inlined_there() -> None:
    path = CALLERS / "csrc" / "norm_grad.cu"
    text = path.read_text().replace("void host_sum_parts(", "int host_sum_parts(")
    text = text.replace("(partial, n_parts, n, out);\n}", "(partial, n_parts, n, out);\n  return 0;\n}")
    text = text.replace(
        "  host_sum_parts(grad.data_ptr", "  [[maybe_unused]] auto status = host_sum_parts(grad.data_ptr"
    )
    assert "auto status = host_sum_parts(" in text
    spec = resolve_spec(str(path), text, "sum_parts")
    assert isinstance(spec, ProblemSpec), spec
    assert "through the call of `host_sum_parts()` in `sum_parts_binding()`" in spec.origin
