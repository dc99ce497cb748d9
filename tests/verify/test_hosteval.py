"""Host helpers evaluated for run specs: launch shapes computed by the file's own host functions (issue 17).

Our own minimal fixtures, written for these tests, of shapes real launchers use: a power-of-two helper with bit
tricks, a spatial-size helper that queries a tensor, a configuration helper that sets `dim3`s through references,
`dim3 block(bx, by)` (which tree-sitter reads as a function declaration), a braced block, a pointer chosen by a
flag (`use_bias ? bias.data_ptr<float>() : nullptr`) and an index buffer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.verify import hosteval
from warpwise.verify.spec import ProblemSpec, resolve_spec
from warpwise.verify.torchspec import DEFAULT_SHAPES, present_pointers

BINDING = """#include <torch/extension.h>
#define MAX_THREADS 512

__host__ int floor_pow2(unsigned int v) {
  v |= (v >> 1);
  v |= (v >> 2);
  v |= (v >> 4);
  v |= (v >> 8);
  v |= (v >> 16);
  return v - (v >> 1);
}

__host__ int inner_size(const at::Tensor& t) {
  auto s = t.size(2);
  for (int d = 3; d < t.ndimension(); d++) {
    s *= t.size(d);
  }
  return s;
}

template <typename T>
__global__ void channel_mean(const T* x, float* mean, int batch, int channels, int inner) {
  int c = blockIdx.x;
  float acc = 0.f;
  for (int b = threadIdx.y; b < batch; b += blockDim.y)
    for (int i = threadIdx.x; i < inner; i += blockDim.x) acc += (float)x[(b * channels + c) * inner + i];
  atomicAdd(&mean[c], acc);
}

at::Tensor channel_mean_cuda(const at::Tensor input) {
  const auto batch = input.size(0);
  const auto channels = input.size(1);
  auto inner = inner_size(input);
  at::Tensor mean = at::zeros({channels}, input.options().dtype(at::kFloat));
  int by = std::min(floor_pow2(batch), int(MAX_THREADS / 32));
  int bx = std::max(1, std::min(MAX_THREADS / by, floor_pow2(inner)));
  const dim3 block(bx, by);
  const dim3 grid(channels);
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "channel_mean", ([&] {
    channel_mean<scalar_t><<<grid, block>>>(input.data_ptr<scalar_t>(), mean.data_ptr<float>(), batch, channels,
                                            inner);
  }));
  return mean;
}
"""


def _spec(text: str, kernel: str) -> object:
    return resolve_spec("/nonexistent/hosteval_fixture.cu", text, kernel)


def test_a_launch_shaped_by_host_helpers_gets_a_complete_spec_with_each_evaluation_noted() -> None:
    spec = _spec(BINDING, "channel_mean")
    assert isinstance(spec, ProblemSpec), spec
    batch, channels, inner = DEFAULT_SHAPES[3]
    # `inner_size(input)` reads `input.size(2)`: the tensor is rank 3, its third dimension the helper's value.
    by = min(1 << (batch.bit_length() - 1), 512 // 32)
    bx = max(1, min(512 // by, 1 << (inner.bit_length() - 1)))
    assert spec.run.original_geometry.block == (bx, by, 1)
    assert spec.run.original_geometry.grid == (channels, 1, 1)
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    assert args == {"batch": batch, "channels": channels, "inner": inner}
    assert any("`inner` =" in n and "inner_size(input)" in n and "host code" in n for n in spec.notes)
    assert any("`bx` =" in n and "floor_pow2(inner)" in n for n in spec.notes)


def test_a_restyled_binding_gives_the_same_geometry() -> None:
    # The same launcher written another way: a named block size, the helper's loop as a while, `dim3` by call.
    restyled = (
        BINDING.replace(
            "  for (int d = 3; d < t.ndimension(); d++) {\n    s *= t.size(d);\n  }\n",
            "  int d = 3;\n  while (d < t.ndimension()) { s = s * t.size(d); ++d; }\n",
        )
        .replace("const dim3 block(bx, by);", "dim3 block = dim3(bx, by, 1);")
        .replace("int(MAX_THREADS / 32)", "(int)(MAX_THREADS >> 5)")
    )
    a, b = _spec(BINDING, "channel_mean"), _spec(restyled, "channel_mean")
    assert isinstance(a, ProblemSpec) and isinstance(b, ProblemSpec), b
    assert a.run.original_geometry == b.run.original_geometry


CONFIGURE = """#include <torch/extension.h>
void configure(const int rows, const int cols, dim3& block, dim3& grid) {
  int bx = cols < 32 ? 32 : 128;
  block.x = bx;
  block.y = 1;
  grid.x = (cols + bx - 1) / bx;
  grid.y = rows > 65535 ? 65535 : rows;
}

__global__ void add_bias(float* y, const float* bias, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  for (int r = blockIdx.y; r < rows; r += gridDim.y)
    if (c < cols) y[r * cols + c] += bias ? bias[c] : 0.f;
}

void add_bias_cuda(at::Tensor y, at::Tensor bias, bool use_bias) {
  const int rows = y.size(0);
  const int cols = y.size(1);
  dim3 block;
  dim3 grid;
  configure(rows, cols, block, grid);
  add_bias<<<grid, block>>>(y.data_ptr<float>(), use_bias ? bias.data_ptr<float>() : nullptr, rows, cols);
}
"""


def test_a_helper_that_sets_dim3s_through_references_and_a_pointer_chosen_by_a_flag() -> None:
    spec = _spec(CONFIGURE, "add_bias")
    assert isinstance(spec, ProblemSpec), spec
    rows, cols = DEFAULT_SHAPES[2]
    assert spec.run.original_geometry.block == (128, 1, 1)
    assert spec.run.original_geometry.grid == ((cols + 127) // 128, rows, 1)
    assert {b.name for b in spec.run.buffers} == {"y", "bias"}
    assert any(
        "`use_bias ? ...` chooses `bias.data_ptr<float>()` or a null pointer: taken as present" in n for n in spec.notes
    )
    assert any("set by the host helper `configure()`" in n for n in spec.notes)


def test_a_braced_block_and_an_index_buffer() -> None:
    text = """#include <torch/extension.h>
__global__ void gather_rows(float* out, const float* in, const int64_t* idx, const int64_t n) {
  int r = blockIdx.x * blockDim.y + threadIdx.y;
  if (r < n) out[r * 16 + threadIdx.x] = in[idx[r] * 16 + threadIdx.x];
}
void gather_rows_cuda(at::Tensor out, const at::Tensor& in, const at::Tensor& idx) {
  const int64_t n = idx.size(0);
  const int BX = 16;
  const int BY = 8;
  gather_rows<<<(n + BY - 1) / BY, {BX, BY, 1}>>>(out.data_ptr<float>(), in.data_ptr<float>(),
                                                  idx.data_ptr<int64_t>(), n);
}
"""
    spec = _spec(text, "gather_rows")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.run.original_geometry.block == (16, 8, 1)
    idx = next(b for b in spec.run.buffers if b.name == "idx")
    assert (idx.low, idx.high) == (0.0, 0.0)
    assert any("`idx` indexes other arrays" in n for n in spec.notes)


def test_what_the_evaluator_cannot_know_stays_unknown() -> None:
    text = b"""
int opaque(int n);
int looping(int n) { int s = 0; while (1) { s += n; } return s; }
int uses_global(int n) { return n * SCALE; }
void f(int n) { int a = opaque(n); int b = looping(n); int c = uses_global(n); int d = n > 2 ? n : 2; }
"""
    model = analyze_text(text, "x.cu")
    functions = hosteval.host_functions(text, model.tree.root_node)
    values = []
    stack = [model.tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "init_declarator":
            values.append(hosteval.value_of(text, functions, node.child_by_field_name("value"), {"n": 5}))
        stack.extend(reversed(node.children))
    # An undefined function, a loop past the step budget, an undefined name: unknown; plain arithmetic: known.
    assert values == [0, None, None, None, 5]


def test_present_pointers_keeps_integers_chosen_by_a_condition() -> None:
    text, notes = present_pointers("k(flag ? p.data_ptr<float>() : nullptr, n > 0 ? 3 : 0);")
    assert text == "k(p.data_ptr<float>(), n > 0 ? 3 : 0);"
    assert len(notes) == 1


BRANCHES = """#include <torch/extension.h>
__global__ void fill_rows(float* out, float* scale, int rows, int cols, int offset) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < cols) out[blockIdx.y * cols + c] = scale[blockIdx.y] * (c + offset);
}
void fill_rows_cuda(at::Tensor out, at::Tensor scale, int mode, int offset) {
  int cols = out.size(1);
  int rows = out.size(0);
  cudaDeviceProp props;
  cudaGetDeviceProperties(&props, 0);
  int threads = props.major >= 9 ? 256 : 128;
  if (cols % 1024) {
    while (cols % 1024) cols++;
  }
  if (mode) {
    rows = rows / 2;
    fill_rows<<<dim3((cols + threads - 1) / threads, rows), threads>>>(out.data_ptr<float>(),
        scale.data_ptr<float>(), rows, cols, offset);
  }
}
"""


def test_a_launch_in_a_branch_takes_that_path_and_a_decided_branch_is_skipped() -> None:
    spec = _spec(BRANCHES, "fill_rows")
    assert isinstance(spec, ProblemSpec), spec
    rows, cols = DEFAULT_SHAPES[2]
    # `cols % 1024` is 0 for the representative shape: the loop's branch does not run; `if (mode)` holds the launch.
    assert spec.run.original_geometry.grid == ((cols + 255) // 256, rows // 2, 1)
    assert spec.run.original_geometry.block == (256, 1, 1)
    assert any("the launch is in the then branch of `if (mode)`" in n for n in spec.notes)
    assert any("`major` is 9" in n and "representative device" in n for n in spec.notes)


LOOPS = """#include <torch/extension.h>
#define ROWS_MAX 300
__global__ void scale_row(float* x, int row, int cols, int rows_per_block) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < cols) x[row * cols + c] *= 2.f;
}
void scale_rows_cuda(at::Tensor x, int first, int last) {
  int cols = x.size(1);
  int rows = x.size(0);
  int per_block = 1;
  while (rows / per_block > ROWS_MAX) per_block *= 2;
  for (int r = first; r < last; r++) {
    scale_row<<<(cols + 255) / 256, 256>>>(x.data_ptr<float>(), r, cols, per_block);
  }
}
"""


def test_a_launch_in_a_loop_takes_the_first_iteration_and_a_loop_before_it_runs() -> None:
    spec = _spec(LOOPS, "scale_row")
    assert isinstance(spec, ProblemSpec), spec
    rows, cols = DEFAULT_SHAPES[2]
    args = {a.param: a.value for a in spec.run.args if a.buffer is None}
    per_block = 1
    while rows // per_block > 300:
        per_block *= 2
    # `first` is a binding integer (representative 1): the launch's loop starts there; `r++` has not run yet.
    assert per_block > 1
    assert args == {"row": 1, "cols": cols, "rows_per_block": per_block}
    assert any("`first` is an integer parameter" in n for n in spec.notes)


DEDUCED = """#include <torch/extension.h>
template <typename scalar_t, typename acc_t>
__global__ void row_sums(const scalar_t* x, acc_t* sums, const int64_t* offsets, int cols) {
  int r = blockIdx.x;
  acc_t s = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[offsets[r] + c];
  atomicAdd(&sums[r], s);
}
at::Tensor row_sums_cuda(at::Tensor x, at::Tensor offsets, bool packed) {
  const int rows = x.size(0);
  const int cols = x.size(1);
  at::Tensor sums;
  const auto offsets_ptr = packed ? offsets.data_ptr<int64_t>() : nullptr;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "row_sums", ([&] {
    using acc_t = at::acc_type<scalar_t, true>;
    sums = at::zeros({rows}, x.options());
    const int threads = std::max<int>(32, std::min<int>(1024, cols));
    row_sums<<<rows, threads>>>(x.data_ptr<scalar_t>(), sums.data_ptr<acc_t>(), offsets_ptr, cols);
  }));
  return sums;
}
"""


def test_template_arguments_deduced_from_tensors_a_tensor_assigned_later_and_an_auto_pointer() -> None:
    spec = _spec(DEDUCED, "row_sums")
    assert isinstance(spec, ProblemSpec), spec
    rows, cols = DEFAULT_SHAPES[2]
    assert spec.template_args == ("float", "float")
    assert spec.run.original_geometry.block == (min(1024, cols), 1, 1)
    counts = {b.name: b.count for b in spec.run.buffers}
    # `sums` is declared bare and made inside the dispatch; `offsets_ptr` is `offsets` taken as present.
    assert counts["sums"] == rows
    assert "offsets" in counts
    assert any("deduced from the type of the tensor" in n for n in spec.notes)


def test_a_call_leaving_trailing_parameters_to_header_defaults_and_negative_size_queries(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "norm.cuh").write_text(
        "void row_norm_cuda(const float* x, const float* w, float* y, int rows, int dim, void* graph = 0, "
        "int label = 0);\n"
    )
    launcher = (
        '#include "norm.cuh"\n'
        "__global__ void row_norm_kernel(const float* x, const float* w, float* y, int dim) {\n"
        "  int r = blockIdx.x; for (int i = threadIdx.x; i < dim; i += blockDim.x)\n"
        "    y[r * dim + i] = x[r * dim + i] * (w ? w[i] : 1.f); }\n"
        "void row_norm_cuda(const float* x, const float* w, float* y, int rows, int dim, void* graph, int label) {\n"
        "  row_norm_kernel<<<rows, 256>>>(x, w, y, dim);\n"
        "}\n"
    )
    (tmp_path / "norm.cu").write_text(launcher)
    (tmp_path / "ext_norm.cpp").write_text(
        "#include <torch/extension.h>\n"
        '#include "norm.cuh"\n'
        "void row_norm(torch::Tensor x, torch::Tensor w, torch::Tensor y) {\n"
        "  int dim = x.size(-1);\n"
        "  int rows = x.size(-2);\n"
        "  row_norm_cuda((const float*) x.data_ptr(), w.device().is_meta() ? NULL : (const float*) w.data_ptr(),\n"
        "                (float*) y.data_ptr(), rows, dim);\n"
        "}\n"
    )
    spec = resolve_spec(str(tmp_path / "norm.cu"), launcher, "row_norm_kernel")
    assert isinstance(spec, ProblemSpec), spec
    rows, dim = DEFAULT_SHAPES[2]
    # `x.size(-2)` makes `x` rank 2; `w` is taken as present (the `NULL` branch is the absent one).
    assert spec.run.original_geometry.grid == (rows, 1, 1)
    assert {a.param: a.value for a in spec.run.args if a.buffer is None} == {"dim": dim}
    assert {b.name for b in spec.run.buffers} == {"x", "w", "y"}
    assert any("taken as present" in n for n in spec.notes)


def test_a_pointer_into_a_tensor_gets_the_tensor_from_its_start_said_in_the_notes() -> None:
    text = """#include <torch/extension.h>
__global__ void tail_scale(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= 2.f; }
void tail_scale_cuda(torch::Tensor y, int start) {
  const int n = y.numel();
  float* tail = ((float*) y.data_ptr()) + (uint64_t) start;
  tail_scale<<<(n + 255) / 256, 256>>>(tail, n - start);
}
"""
    spec = _spec(text, "tail_scale")
    assert isinstance(spec, ProblemSpec), spec
    assert [b.count for b in spec.run.buffers] == [DEFAULT_SHAPES[1][0]]
    assert any("points `(uint64_t) start` elements into `y`" in n and "offset 0" in n for n in spec.notes)


TEMPLATE_LAUNCHER = """#include <torch/extension.h>
#define MY_DISPATCH(TYPE, NAME, ...) switch (TYPE) { \\\\
  case at::ScalarType::Float: { using scalar_t_0 = float; __VA_ARGS__; break; } \\\\
  case at::ScalarType::Double: { using scalar_t_0 = double; __VA_ARGS__; break; } }

template <typename T, typename A>
__global__ void scale_by(T* y, const T* x, A alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (T)(alpha * (A)x[i]);
}

template <typename T, typename A = float>
void launch_scale(T* y, const T* x, int n, double alpha) {
  const dim3 block(256);
  const dim3 grid((n + 255) / 256);
  scale_by<<<grid, block, block.x * sizeof(A) * 0>>>(y, x, A(alpha), n);
}

void scale_cuda(at::Tensor y, const at::Tensor& x, double alpha) {
  const int n = x.numel();
  MY_DISPATCH(x.scalar_type(), "scale", launch_scale<scalar_t_0>(y.data_ptr<scalar_t_0>(), x.data_ptr<scalar_t_0>(),
                                                               n, alpha););
}
"""


def test_a_template_launcher_called_inside_a_dispatch_macro_binds_its_types() -> None:
    spec = _spec(TEMPLATE_LAUNCHER, "scale_by")
    assert isinstance(spec, ProblemSpec), spec
    n = DEFAULT_SHAPES[1][0]
    # `T` from the call's explicit argument (`scalar_t_0`: float, the macro's first case), `A` from its default.
    assert spec.template_args == ("float", "float")
    assert spec.run.original_geometry.grid == ((n + 255) // 256, 1, 1)
    assert {a.param: a.value for a in spec.run.args if a.buffer is None} == {"alpha": 1.0, "n": n}
    assert "through the call of `launch_scale()` in `scale_cuda()`" in spec.origin


JOINT = """#include <torch/extension.h>
__global__ void joint(const float* f, const int64_t* offsets, float* sum, int rows, int hidden) {
  int r = blockIdx.x, h = threadIdx.x;
  if (h < hidden) sum[(offsets ? 0 : r) * hidden + h] = f[r * hidden + h];
}
at::Tensor joint_cuda(at::Tensor f, at::Tensor offsets, bool packed) {
  const auto rows = f.size(0);
  const auto hidden = f.size(1);
  int64_t* offsets_ptr = nullptr;
  torch::Tensor sum, spare;
  if (packed) {
    sum = torch::empty({rows, hidden}, f.options());
    offsets_ptr = offsets.data_ptr<int64_t>();
  } else {
    sum = torch::empty({rows, hidden, 2}, f.options());
  }
  const int threads = std::min(1024, (static_cast<int>(hidden) + C10_WARP_SIZE - 1) / C10_WARP_SIZE * C10_WARP_SIZE);
  joint<<<rows, threads>>>(f.data_ptr<float>(), offsets_ptr, sum.data_ptr<float>(), rows, hidden);
  return sum;
}
"""


def test_bare_tensors_a_pointer_set_later_static_cast_and_torch_constants() -> None:
    spec = _spec(JOINT, "joint")
    assert isinstance(spec, ProblemSpec), spec
    rows, hidden = DEFAULT_SHAPES[2]
    assert spec.run.original_geometry.block == (min(1024, (hidden + 31) // 32 * 32), 1, 1)
    counts = {b.name: b.count for b in spec.run.buffers}
    assert counts["sum"] == rows * hidden and "offsets" in counts
    assert any("`offsets_ptr` is declared null and later set to `offsets`" in n for n in spec.notes)


def test_representative_shapes_that_ask_for_too_much_memory_are_refused_by_name() -> None:
    # 2048 x 2048 x 2048 x 64 floats with the defaults: the smaller shapes (256 x 256 x 256 x 64) are used instead.
    big = JOINT.replace(
        "sum = torch::empty({rows, hidden}, f.options());", "sum = torch::empty({rows, hidden, rows, 64}, f.options());"
    )
    spec = _spec(big, "joint")
    assert isinstance(spec, ProblemSpec), spec
    assert "the default representative shapes were too big" in spec.notes[0] and "`sum`" in spec.notes[0]
    assert {b.name: b.count for b in spec.run.buffers}["sum"] == 256 * 256 * 256 * 64
    # 256^4 floats (16 GiB) even with the smaller shapes: refused, naming the tensor.
    huge = JOINT.replace(
        "sum = torch::empty({rows, hidden}, f.options());",
        "sum = torch::empty({rows, hidden, rows, hidden}, f.options());",
    )
    refused = _spec(huge, "joint")
    assert not isinstance(refused, ProblemSpec)
    assert "GiB" in refused.message and "`sum`" in refused.message


def test_c_math_functions_evaluate_and_a_domain_error_stays_unknown() -> None:
    text = b"""
void f(float lr, float b, int t) {
  float a = lr * std::sqrt(1.0f - powf(b, t)) / (1 - std::pow(b, 2));
  float c = sqrt(-lr);
  float d = std::pow(b, t, t);
  float e = fabsf(logf(expf(lr)) - 3);
}
"""
    model = analyze_text(text, "x.cu")
    functions = hosteval.host_functions(text, model.tree.root_node)
    values = []
    stack = [model.tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "init_declarator":
            values.append(
                hosteval.value_of(text, functions, node.child_by_field_name("value"), {"lr": 2.0, "b": 0.5, "t": 3})
            )
        stack.extend(reversed(node.children))
    # sqrt(1 - 0.125) * 2 / 0.75; the square root of a negative number and a call with too many arguments: unknown.
    assert values[0] == pytest.approx(2.0 * (0.875**0.5) / 0.75)
    assert values[1:3] == [None, None]
    assert values[3] == pytest.approx(1.0)


def test_a_helper_fills_a_vector_and_reads_it_back_and_an_unknown_element_stays_unknown() -> None:
    text = b"""
int last_width(int n) {
  std::vector<int> widths;
  for (int i = 0; i < n; i++) {
    widths.push_back(16 * (i + 1));
  }
  int* w = widths.data();
  const int& first = w[0];
  return widths.back() + first + widths.size();
}
int out_of_range(int n) { std::vector<int> v; v.push_back(n); return v[1]; }
int unknown_element(int n) { std::vector<int> v; v.push_back(opaque(n)); return v.back(); }
void f(int n) { int a = last_width(n); int b = out_of_range(n); int c = unknown_element(n); }
"""
    model = analyze_text(text, "x.cu")
    functions = hosteval.host_functions(text, model.tree.root_node)
    values = []
    stack = [model.tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "init_declarator" and hosteval._function_name(text, _enclosing(node)) == "f":
            values.append(hosteval.value_of(text, functions, node.child_by_field_name("value"), {"n": 3}))
        stack.extend(reversed(node.children))
    # 48 (the last of 16, 32, 48) + 16 (the first, through a pointer and a reference) + 3 (the size).
    assert values == [67, None, None]


def _enclosing(node: object) -> object:
    """Return the function definition around a syntax node."""
    p = node
    while p is not None and p.type != "function_definition":  # type: ignore[attr-defined]
        p = p.parent  # type: ignore[attr-defined]
    return p


def test_a_pointer_a_loop_before_the_launch_sets_takes_the_buffer_it_holds_after_the_loop() -> None:
    text = b"""
__global__ void fill(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 1.0f;
}
void run() {
  float *small, *big;
  cudaMalloc(&small, 256 * sizeof(float));
  cudaMalloc(&big, 4096 * sizeof(float));
  float* p = small;
  for (int pass = 0; pass < 2; pass++) {
    p = big;
  }
  fill<<<16, 256>>>(p, 4096);
}
"""
    spec = resolve_spec("loop_pointer.cu", text.decode(), "fill")
    assert isinstance(spec, ProblemSpec), spec
    assert {b.name: b.count for b in spec.run.buffers} == {"p": 4096}
    assert any("the buffer `p` holds after the loop" in n for n in spec.notes)


def _values(text: bytes, names: dict[str, object]) -> list[object]:
    """Return the value of every initialiser of the last function of `text`, in order."""
    model = analyze_text(text, "x.cu")
    functions = hosteval.host_functions(text, model.tree.root_node)
    consts = dict(model.constants)
    values = []
    stack = [model.tree.root_node.named_children[-1]]
    while stack:
        node = stack.pop()
        if node.type == "init_declarator":
            values.append(hosteval.value_of(text, functions, node.child_by_field_name("value"), names, None, consts))
        stack.extend(reversed(node.children))
    return values


def test_out_parameters_template_sizes_and_the_files_constants_reach_a_helper() -> None:
    text = b"""
#define PER_BLOCK 64
void split(int n, int* blocks, int* rest) { *blocks = n / PER_BLOCK; *rest = n - (*blocks) * PER_BLOCK; }
int blocks_of(int n) { int b, r; split(n, &b, &r); return b * 1000 + r; }
template <typename T> size_t bytes(int n) { return n * sizeof(T); }
int sum(int n) { int* a = (int*)malloc(n * sizeof(int)); for (int i = 0; i < n; i++) a[i] = i; int s = 0;
  for (int i = 0; i < n; i++) s += a[i]; return s; }
void f(int n) { int a = blocks_of(n); auto b = bytes<double>(n); auto c = bytes<at::Half>(n); int d = sum(4); }
"""
    assert _values(text, {"n": 200}) == [200 // 64 * 1000 + 200 % 64, 1600, 400, 6]


def test_pointer_arithmetic_stays_inside_its_allocation_and_a_vector_tail_is_read_only() -> None:
    text = b"""
int first(const int* v) { return v[0]; }
int overwrite(int* v) { v[0] = 7; return v[0]; }
int unset(int n) { int* a = (int*)malloc(n * sizeof(int)); return a[1]; }
void f(int n) { int a = first(feats.data() + 1); int b = overwrite(feats.data() + 1); int c = unset(3);
  float* p = reinterpret_cast<float*>(buf) + 4; float* q = reinterpret_cast<float*>(buf) + 100; }
"""
    feats = hosteval.Vector([1, 2, 3])
    buf = hosteval.Buffer("buf", 64)
    values = _values(text, {"feats": feats, "buf": buf})
    # A tail of a vector reads its elements and is never written; an element never written has no value; a float
    # pointer 4 elements into 64 bytes has 48 left, and 100 elements would leave the allocation.
    assert values[:3] == [2, None, None]
    assert values[3] == hosteval.Buffer("buf", 48, 4, 16)
    assert values[4] is None
    assert feats == [1, 2, 3]


LAUNCHER = """
FACTOR_LINE
void configure(int n, dim3& block, dim3& grid) {
  block.x = 256;
  grid.x = (n + 255) / 256 * FACTOR;
}

__global__ void twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.f;
}

void run() {
  int n = 1024;
  float* x;
  cudaMalloc(&x, n * sizeof(float));
  dim3 block, grid;
  configure(n, block, grid);
  twice<<<grid, block>>>(x, n);
}
"""


def test_a_helper_sees_the_files_constants_and_one_that_does_not_evaluate_leaves_its_dim3s_unknown() -> None:
    known = LAUNCHER.replace("FACTOR_LINE", "#define FACTOR 2")
    spec = resolve_spec("x.cu", known, "twice")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.run.original_geometry.grid == (8, 1, 1)
    assert spec.run.original_geometry.block == (256, 1, 1)
    # Without the constant the helper has no value: the launch is not the (1, 1, 1) the dim3s were declared with.
    unknown = LAUNCHER.replace("FACTOR_LINE", "")
    spec = resolve_spec("x.cu", unknown, "twice")
    assert not isinstance(spec, ProblemSpec), spec
    assert any(m.startswith("grid") for m in spec.missing) and any(m.startswith("block") for m in spec.missing)
