"""Run specs from torch bindings: tensors given representative shapes that keep the binding's relations."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from warpwise.verify.spec import ProblemSpec, SpecMissing, resolve_spec
from warpwise.verify.torchspec import DEFAULT_SHAPES
from warpwise.verify.types import Role

TORCH = FIXTURES / "realworld" / "torch_ext"


def _spec(name: str, kernel: str) -> ProblemSpec | SpecMissing:
    path = TORCH / name
    return resolve_spec(str(path), path.read_text(), kernel)


def test_dispatched_binding_gets_a_complete_spec_with_scalar_t_float() -> None:
    spec = _spec("add_one.cu", "add_one")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.template_args == ("float",)
    n = DEFAULT_SHAPES[1][0]
    assert [(b.name, b.dtype, b.count, b.role) for b in spec.run.buffers] == [
        ("x", "f32", n, Role.IN),
        ("y", "f32", n, Role.OUT),
    ]
    assert spec.run.original_geometry.grid == ((n + 255) // 256, 1, 1)
    assert "torch binding `add_one_cuda()`" in spec.origin
    assert any("`scalar_t` is float" in note and "AT_DISPATCH_FLOATING_TYPES_AND_HALF" in note for note in spec.notes)
    assert any("tensor `x` of shape" in note for note in spec.notes)


def test_checks_in_the_binding_fix_rank_shared_and_fixed_dimensions() -> None:
    spec = _spec("row_scale.cu", "row_scale")
    assert isinstance(spec, ProblemSpec), spec
    rows = DEFAULT_SHAPES[2][0]
    counts = {b.name: b.count for b in spec.run.buffers}
    # `x.size(1) == 1024` fixes the columns; `w.size(0) == x.size(0)` gives `w` one factor per row.
    assert counts == {"x": rows * 1024, "w": rows, "y": rows * 1024}
    assert spec.run.original_geometry.grid == (4, rows, 1)
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    assert args == {"rows": rows, "cols": 1024, "alpha": 1.0}
    assert any("`alpha` is a parameter of `row_scale_cuda()`; using 1.0" in note for note in spec.notes)
    assert any("dimension 1 fixed by a check" in note for note in spec.notes)


def test_an_integer_parameter_of_the_binding_takes_a_representative_value_said_in_the_notes() -> None:
    spec = _spec("row_scale.cu", "copy_int")
    assert isinstance(spec, ProblemSpec), spec
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    assert args["k"] == 1
    assert any(
        "`k` is an integer parameter of `copy_int_cuda()`; using the representative value 1 (nothing in the file" in n
        for n in spec.notes
    )


def test_a_tensor_made_from_sizes_that_do_not_evaluate_leaves_its_aliases_out_too() -> None:
    text = (
        "#include <torch/extension.h>\n"
        "__global__ void k(const float* x, float* g, float* h, int n) { g[0] = x[0]; h[0] = x[0]; }\n"
        "void b(at::Tensor x, int part) {\n"
        "  at::Tensor g = at::empty({rows_of(x, part), x.size(1)}, x.options());\n"
        "  at::Tensor h = at::empty_like(g);\n"
        "  int n = x.numel();\n"
        "  k<<<1, 32>>>(x.data_ptr<float>(), g.data_ptr<float>(), h.data_ptr<float>(), n);\n"
        "}\n"
    )
    spec = resolve_spec("b.cu", text, "k")
    assert isinstance(spec, SpecMissing)
    assert any("`g`" in m for m in spec.missing) and any("`h`" in m for m in spec.missing)


def test_a_projects_own_dispatch_macro_binds_its_types_like_at_dispatch() -> None:
    text = (
        "#include <torch/extension.h>\n"
        "#define DISPATCH_FH(TYPE, LEVEL, NAME, ...) switch (TYPE) { \\\n"
        "  case at::ScalarType::Float: { using scalar_t_##LEVEL = float; __VA_ARGS__; break; } \\\n"
        "  case at::ScalarType::Half: { using scalar_t_##LEVEL = at::Half; __VA_ARGS__; break; } }\n"
        "template <typename T, typename A> __global__ void k(const T* x, A* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }\n"
        "void b(at::Tensor x, at::Tensor y) {\n"
        "  int n = x.numel();\n"
        '  DISPATCH_FH(x.scalar_type(), 0, "k", using acc_t = at::acc_type<scalar_t_0, true>;\n'
        "    k<scalar_t_0, acc_t><<<(n + 255) / 256, 256>>>(x.data_ptr<scalar_t_0>(), y.data_ptr<acc_t>(), n););\n"
        "}\n"
    )
    spec = resolve_spec("b.cu", text, "k")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.template_args == ("float", "float")
    assert any("`scalar_t_0` is float" in n for n in spec.notes)


def test_an_optional_tensor_is_taken_as_present_and_sized_by_its_checks() -> None:
    spec = _spec("optional_bias.cu", "add_bias")
    assert isinstance(spec, ProblemSpec), spec
    rows, cols = DEFAULT_SHAPES[2]
    counts = {b.name: (b.count, b.role) for b in spec.run.buffers}
    # `bias.value().size(0) == x.size(1)`: one bias per column of the rank-2 `x`.
    assert counts == {"x": (rows * cols, Role.IN), "bias": (cols, Role.IN), "y": (rows * cols, Role.OUT)}
    assert any("`bias` is an optional tensor of `add_bias_cuda()`: taken as present" in n for n in spec.notes)


def test_a_tensor_made_from_a_local_size_gets_that_size() -> None:
    text = (
        "#include <torch/extension.h>\n"
        "__global__ void colsum(const float* x, float* s, int rows, int cols) {\n"
        "  int c = blockIdx.x * blockDim.x + threadIdx.x; if (c < cols) s[c] = x[c]; }\n"
        "at::Tensor colsum_cuda(const at::Tensor& x) {\n"
        "  const auto rows = x.size(0);\n"
        "  const auto cols = x.size(1);\n"
        "  at::Tensor s = at::empty({cols}, x.options());\n"
        "  colsum<<<(cols + 255) / 256, 256>>>(x.data_ptr<float>(), s.data_ptr<float>(), rows, cols);\n"
        "  return s;\n"
        "}\n"
    )
    spec = resolve_spec("colsum.cu", text, "colsum")
    assert isinstance(spec, ProblemSpec), spec
    rows, cols = DEFAULT_SHAPES[2]
    assert {b.name: b.count for b in spec.run.buffers} == {"x": rows * cols, "s": cols}


JOINT = """#include <torch/extension.h>
template <typename scalar_t>
__global__ void pair_sum(const scalar_t* a, const scalar_t* b, scalar_t* out, int64_t na, int64_t nb, int64_t h) {
  const int64_t i = blockIdx.y, j = blockIdx.x, bt = blockIdx.z;
  for (int64_t k = threadIdx.x; k < h; k += blockDim.x) {
    out[((bt * na + i) * nb + j) * h + k] = a[(bt * na + i) * h + k] + b[(bt * nb + j) * h + k];
  }
}
torch::Tensor pair_sum_cuda(torch::Tensor a, torch::Tensor b) {
  const auto batch = a.size(0);
  const auto na = a.size(1);
  const auto nb = b.size(1);
  const auto h = a.size(2);
  auto out = torch::empty({batch, na, nb, h}, a.options());
  const dim3 blocks(nb, na, batch);
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "pair_sum", ([&] {
    pair_sum<scalar_t><<<blocks, 128>>>(a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), na, nb, h);
  }));
  return out;
}
"""


def test_a_tensor_made_from_several_free_dimensions_too_big_for_the_defaults_takes_the_smaller_shapes(
    tmp_path: Path,
) -> None:
    from warpwise.verify.torchspec import SMALL_SHAPES

    path = tmp_path / "pair_sum.cu"
    path.write_text(JOINT)
    spec = resolve_spec(str(path), JOINT, "pair_sum")
    assert isinstance(spec, ProblemSpec), spec
    batch, na, h = SMALL_SHAPES[3]
    counts = {b.name: b.count for b in spec.run.buffers}
    assert counts["a"] == batch * na * h
    # `b` is read through `size(1)` only: rank 2. With the defaults `out` alone would be 16 x 512 x 2048 x 512.
    assert counts["b"] == SMALL_SHAPES[2][0] * SMALL_SHAPES[2][1]
    assert counts["out"] == batch * na * SMALL_SHAPES[2][1] * h
    assert "the default representative shapes were too big" in spec.notes[0]
    assert any("free dimensions from the smaller shapes" in n for n in spec.notes)
    assert not any("H200-sized defaults" in n for n in spec.notes)


def test_a_degenerate_representative_float_is_retried_and_an_enum_is_passed_as_its_integer() -> None:
    spec = _spec("momentum_step.cu", "momentum_step")
    assert isinstance(spec, ProblemSpec), spec
    args = {a.param: (a.ctype, a.value) for a in spec.run.args if a.buffer is None}
    # At 1.0, `1 - pow(beta, step)` is 0 and `lr / correction` has no value: the floats take 0.5.
    assert args["beta"] == ("float", 0.5)
    assert args["step_size"] == ("float", 1.0)
    assert args["mode"] == ("int", 1)
    # 7 is no enumerator of `Clip`: its first one is passed, as the enum's base type.
    assert args["clip"] == ("unsigned char", 0)
    assert any("the representative float 1.0 left value of `step_size`" in n and "take 0.5" in n for n in spec.notes)
    assert any("`mode` is the enum `updateMode_t`, passed as int 1 (`UPDATE_NESTEROV`)" in n for n in spec.notes)
    assert any("no enumerator of it, so the first one, `None` (0)" in n for n in spec.notes)


def test_an_enum_the_file_does_not_declare_is_still_missing() -> None:
    path = TORCH / "momentum_step.cu"
    text = path.read_text().replace("typedef enum {", "typedef struct {").replace("UPDATE_PLAIN = 0,", "int a;")
    text = text.replace("UPDATE_NESTEROV = 1", "int b;")
    spec = resolve_spec(str(path), text, "momentum_step")
    assert isinstance(spec, SpecMissing)
    assert any("a value of type `updateMode_t` for `mode`" in m for m in spec.missing)


def test_a_list_of_tensor_lists_and_an_optional_flag_are_read_and_a_size_from_a_changed_local_waits_for_the_launch() -> (
    None
):
    from warpwise.verify.torchspec import TENSOR_LIST_LEN

    spec = _spec("list_norms.cu", "reduce_partials")
    assert isinstance(spec, ProblemSpec), spec
    n = DEFAULT_SHAPES[1][0]
    counts = {b.name: b.count for b in spec.run.buffers}
    # `max_chunks` is -1 where it is declared; the loop over the list makes it the element count (chunk size 1).
    assert counts == {"partials": TENSOR_LIST_LEN * n, "out": TENSOR_LIST_LEN}
    assert spec.run.original_geometry.grid == (TENSOR_LIST_LEN, 1, 1)
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    assert args == {"per_tensor": 1, "max_chunks": n}
    assert any("`tensor_lists` is a list of tensor lists" in note for note in spec.notes)
    assert any("`per_tensor_python` is an optional bool: taken as present" in note for note in spec.notes)
    assert any("made with sizes ['ntensors * max_chunks']" in note and "at the launch" in note for note in spec.notes)


def test_a_size_from_a_local_changed_after_the_tensor_is_made_is_not_taken() -> None:
    path = TORCH / "list_norms.cu"
    text = path.read_text().replace("  at::Tensor out = at::zeros", "  max_chunks += 1;\n  at::Tensor out = at::zeros")
    spec = resolve_spec(str(path), text, "reduce_partials")
    assert isinstance(spec, SpecMissing), spec
    assert any("size of `partials`" in m for m in spec.missing)


def test_a_tensors_element_size_is_the_type_it_is_read_as_and_sizeof_follows_a_file_typedef() -> None:
    spec = _spec("vector_scale.cu", "vector_scale")
    assert isinstance(spec, ProblemSpec), spec
    n = DEFAULT_SHAPES[1][0]
    # `x` is read as `scalar_t` (float): 4 bytes, so 16 / 4 = 4 elements per thread.
    assert spec.run.original_geometry.grid == ((n + 256 * 4 - 1) // (256 * 4), 1, 1)
    assert any("`x.element_size()` is 4 bytes" in note for note in spec.notes)


def test_a_binding_that_only_makes_its_tensor_is_read_as_a_binding() -> None:
    spec = _spec("made_counter.cu", "spin")
    assert isinstance(spec, ProblemSpec), spec
    assert [(b.name, b.dtype, b.count) for b in spec.run.buffers] == [("counter", "i32", 1)]
    assert {a.param: a.value for a in spec.run.args if a.buffer is None} == {"rounds": 1}
    assert "torch binding `spin_cuda()`" in spec.origin


def test_an_integer_parameter_checked_against_a_dimension_takes_it_and_a_divided_numel_gives_the_rank() -> None:
    spec = _spec("rows_by_table.cu", "add_table_row")
    assert isinstance(spec, ProblemSpec), spec
    b, rows, head_dim = DEFAULT_SHAPES[3]
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    # `head_dim == table.size(-1)`; `x.numel() / head_dim / batch` makes `x` rank 3 with `head_dim` last.
    assert args == {"rows": rows, "head_dim": head_dim, "pos": 1}
    counts = {buf.name: buf.count for buf in spec.run.buffers}
    # The table is read only through `size(-1)`: a table of rows, its leading dimension free.
    assert counts == {"x": b * rows * head_dim, "table": DEFAULT_SHAPES[2][0] * head_dim}
    assert spec.run.original_geometry.grid == ((head_dim + 127) // 128, rows, b)
    assert any(
        f"`head_dim` is checked equal to dimension 1 of `table`: using that dimension, {head_dim}" in n
        for n in spec.notes
    )
    assert any("`table` is read only through `size(-1)`" in n for n in spec.notes)


def test_a_parameter_in_arithmetic_on_one_side_of_a_check_is_not_tied_to_the_dimension() -> None:
    path = TORCH / "rows_by_table.cu"
    text = path.read_text().replace("head_dim == table.size(-1)", "head_dim + 1 == table.size(-1)")
    spec = resolve_spec(str(path), text, "add_table_row")
    notes = spec.notes if isinstance(spec, ProblemSpec) else (spec.message,)
    assert not any("`head_dim` is checked equal to dimension" in n for n in notes)
    text = path.read_text().replace("head_dim == table.size(-1)", "table.size(-1) == head_dim + 1")
    spec = resolve_spec(str(path), text, "add_table_row")
    notes = spec.notes if isinstance(spec, ProblemSpec) else (spec.message,)
    assert not any("`head_dim` is checked equal to dimension" in n for n in notes)


def test_a_kernels_type_is_deduced_from_the_declared_type_of_a_local_pointer_passed_for_it() -> None:
    spec = _spec("local_pointer.cu", "add_bias")
    # FIXME(#17): `bias = biases[layer]` (an array of pointers) is not sized yet; `T` no longer is missing.
    assert isinstance(spec, SpecMissing), spec
    assert not any("template argument `T`" in m for m in spec.missing), spec.missing
    assert any("size of `b` (passed `bias`" in m for m in spec.missing), spec.missing


def test_a_launcher_over_layers_reads_a_pushed_vector_a_chosen_pointer_and_the_occupancy_grid() -> None:
    """`stacked_layers.cu` (issue 17): sizes pushed into a `std::vector<int>`, a tensor made with `feats.back()`,
    the output chosen by `layer == layers - 1 ? y : scratch`, an offset from a vector of data pointers, a
    `const unsigned&` width, and a grid from `cudaOccupancyMaxActiveBlocksPerMultiprocessor`."""
    from warpwise.verify import hosteval

    spec = _spec("stacked_layers.cu", "add_offset")
    assert isinstance(spec, ProblemSpec), spec
    rows, feats = DEFAULT_SHAPES[2]
    counts = {b.name: b.count for b in spec.run.buffers}
    # `y` is the tensor made as {rows, feats.back()}: the last layer's output, exactly rows * feats elements.
    assert counts == {"y": rows * feats, "offset": rows * feats}
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    assert args == {"rows": rows, "feats": feats}
    blocks = hosteval.H200["maxThreadsPerMultiProcessor"] // 128
    assert spec.run.original_geometry.grid == (hosteval.H200["multiProcessorCount"] * blocks, 1, 1)
    assert spec.run.original_geometry.block == (128, 1, 1)
    notes = " | ".join(spec.notes)
    assert f"`blocks_per_sm` = {blocks} from `cudaOccupancyMaxActiveBlocksPerMultiprocessor`" in notes
    assert "the real occupancy may be lower" in notes
    assert "the buffer `out` is set to `(layer == layers - 1) ? y : scratch_y`" in notes
    assert "the buffer `offset` is set to `offsets[layer]`" in notes
    assert "the launch runs in a loop over `layer`" in notes
    assert f"the tensor `y` is made with sizes [{rows}, {feats}], read through the host code before it" in notes


def test_a_layer_kernel_whose_output_is_the_scratch_buffer_of_an_unknown_size_gets_no_spec() -> None:
    # With the last layer's output swapped for the scratch buffer, the kernel writes rows * feats elements into a
    # tensor whose size (`rows * n_scratch`) nothing gives: the spec names the pointer as missing, never a guess.
    path = TORCH / "stacked_layers.cu"
    text = path.read_text().replace("? y : scratch_y", "? scratch_y : y").replace("{rows * 4}", "{rows * n_scratch}")
    spec = resolve_spec(str(path), text, "clamp_zero")
    assert isinstance(spec, SpecMissing), spec
    assert any("size of `y` (passed `out`" in m for m in spec.missing)


def test_a_reference_reads_its_variable_at_the_launch() -> None:
    # `width` refers to `feats[layer]` through a local that changes before the launch: the launch sees the new value.
    path = TORCH / "stacked_layers.cu"
    text = path.read_text().replace(
        "    const unsigned& width = feats[layer];",
        "    unsigned w = feats[layer];\n    const unsigned& width = w;\n    w = w / 2;",
    )
    spec = resolve_spec(str(path), text, "add_offset")
    assert isinstance(spec, ProblemSpec), spec
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    assert args["feats"] == DEFAULT_SHAPES[2][1] // 2


def test_a_workspace_split_by_a_helper_through_out_parameters_gives_each_pointer_its_part() -> None:
    """`split_workspace.cu` (issue 17): a template helper writes `T**` out-parameters with typed pointer arithmetic
    and `reinterpret_cast`s, a `malloc`ed array of row offsets is filled by a helper with a pointer parameter, the
    grid comes from `int*` out-parameters, and the workspace is made with a size a template helper computes with
    `sizeof(T)`. Every pointer gets the bytes from where it points to the workspace's end, never more."""
    spec = _spec("split_workspace.cu", "scale_grad")
    assert isinstance(spec, ProblemSpec), spec
    rows, feats = DEFAULT_SHAPES[2]
    layers = 3  # The representative list `inputs` holds 4 tensors: the input and three weights.
    sms = 132
    gx = (feats + 31) // 32
    gy = min((rows + 63) // 64, (sms * 2 + gx - 1) // gx)
    acts = layers * rows * feats
    partial = feats * gy
    ws_bytes = acts * 4 + partial * 4 + feats * 4
    counts = {b.name: b.count for b in spec.run.buffers}
    # The last layer reads the caller's gradient; its output starts `starts[layer - 1]` elements into the workspace.
    assert counts["dx"] == (ws_bytes - rows * feats * 4) // 4
    assert counts["partial"] == (ws_bytes - acts * 4) // 4
    assert counts["done"] == feats
    assert spec.run.original_geometry.grid == (gx, gy, 1)
    notes = " | ".join(spec.notes)
    assert "the buffer `grads_base` set through `&grads_base` by the host helper `split_workspace<float>()`" in notes
    assert f"`bytes` = {ws_bytes}, evaluated from `workspace_bytes<float>(rows, layers, feats.data())`" in notes
    assert f"`gy` = {gy}, set through `&gy` by the host helper `grid_for()`" in notes
    assert f"(its bytes from {acts * 4} on)" in notes
    # The commented-out older definition of `ws` (`at::empty({bytes}, at::kByte)`) is not read as one.
    assert "['bytes']" not in notes


def test_a_pointer_moved_past_its_workspace_or_an_offset_never_written_gets_no_spec() -> None:
    path = TORCH / "split_workspace.cu"
    text = path.read_text()
    past = text.replace(
        "*done = reinterpret_cast<int*>(*partial + partial_floats(rows, layers, feats));",
        "*done = reinterpret_cast<int*>(*partial + 2 * activations(rows, layers, feats));",
    )
    spec = resolve_spec(str(path), past, "scale_grad")
    assert isinstance(spec, SpecMissing), spec
    assert any(m.startswith("size of `done`") for m in spec.missing), spec.missing
    unset = text.replace("  starts[0] = 0;\n", "")
    spec = resolve_spec(str(path), unset, "scale_grad")
    assert isinstance(spec, SpecMissing), spec
    assert any(m.startswith("size of `dx`") for m in spec.missing), spec.missing
