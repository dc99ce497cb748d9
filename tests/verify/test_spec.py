"""Problem specs: the annotation syntax and its errors, inference from host code, problem files, C expressions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, FIXTURES
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.expr import cexpr
from warpwise.verify.spec import ProblemSpec, SpecMissing, problem_file_for, resolve_spec
from warpwise.verify.types import Geometry, Role


def spec_of(text: str, kernel: str, path: str = "k.cu") -> ProblemSpec | SpecMissing:
    return resolve_spec(path, text, kernel)


def test_annotation_resolves_sizes_roles_scalars_and_geometry() -> None:
    text = (
        "#define BLOCK 128\n"
        "// warpwise: n=1<<10 a=0.5 x:in[n]:-2..2 y:inout[n] grid=(n+BLOCK-1)/BLOCK block=BLOCK smem=64\n"
        "__global__ void k(int n, float a, const float* x, float* y) { }\n"
    )
    spec = spec_of(text, "k")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.source == "annotation"
    buffers = {b.name: b for b in spec.run.buffers}
    assert (
        buffers["x"].count == 1024
        and buffers["x"].role is Role.IN
        and (buffers["x"].low, buffers["x"].high)
        == (
            -2.0,
            2.0,
        )
    )
    assert buffers["y"].role is Role.INOUT and buffers["y"].dtype == "f32"
    assert [(a.param, a.value) for a in spec.run.args if a.buffer is None] == [("n", 1024), ("a", 0.5)]
    assert spec.run.original_geometry == Geometry((8, 1, 1), (128, 1, 1), 64)


def test_annotation_vector_types_and_templates() -> None:
    text = (
        "// warpwise: T=float B=256 n=4096 x:in[n/4] y:out[n/4] grid=n/4/B block=B\n"
        "template <typename T, int B>\n"
        "__global__ void k(const float4* x, float4* y, int n) { }\n"
    )
    spec = spec_of(text, "k")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.name_expression == "k<float, 256>"
    assert {b.name: b.count for b in spec.run.buffers} == {"x": 4096, "y": 4096}
    assert spec.run.original_geometry.grid == (4, 1, 1)


@pytest.mark.parametrize(
    ("annotation", "message", "column"),
    [
        ("n=1<<10 x:in[m] y:out[n] grid=4 block=256", "`m` has no known value", 26),
        ("n=1<<10 x:sideways[n] y:out[n] grid=4 block=256", "neither NAME=VALUE nor PARAM:ROLE[COUNT]", 21),
        ("n=? x:in[n] y:out[n] grid=4 block=256", "fill in the value marked `?`", 15),
        ("n=1<<10 z:in[n] x:in[n] y:out[n] grid=4 block=256", "`z` is not a pointer parameter", 21),
        ("n=1<<10 x:in[n] y:out[n] grid=0 block=256", "launch sizes must be positive", 43),
    ],
)
def test_annotation_errors_point_at_the_token(annotation: str, message: str, column: int) -> None:
    text = f"\n// warpwise: {annotation}\n__global__ void k(int n, const float* x, float* y) {{ }}\n"
    spec = spec_of(text, "k")
    assert isinstance(spec, SpecMissing)
    err = next(e for e in spec.errors if message in e.message)
    assert err.line == 1
    assert err.column == column, (err, text.splitlines()[1][err.column :])


def test_annotation_missing_parameter_is_reported() -> None:
    text = "// warpwise: n=8 x:in[n] grid=1 block=8\n__global__ void k(int n, const float* x, float* y) { }\n"
    spec = spec_of(text, "k")
    assert isinstance(spec, SpecMissing)
    assert "y" in spec.missing
    assert any("does not declare `y`" in e.message for e in spec.errors)


def test_inference_from_main_of_vector_ops() -> None:
    path = EXAMPLES / "vector_ops.cu"
    spec = resolve_spec(str(path), path.read_text(), "saxpy")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.source == "inferred" and "main()" in spec.origin
    assert {b.name: (b.count, b.role) for b in spec.run.buffers} == {
        "x": (1 << 24, Role.IN),
        "y": (1 << 24, Role.INOUT),
    }
    assert [(a.param, a.value) for a in spec.run.args if a.buffer is None] == [("n", 1 << 24), ("a", 2.0)]
    assert spec.run.original_geometry == Geometry((65536, 1, 1), (256, 1, 1), 0)


def test_inference_merges_aliased_buffers() -> None:
    path = EXAMPLES / "vector_ops.cu"
    spec = resolve_spec(str(path), path.read_text(), "scale_rows")
    assert isinstance(spec, ProblemSpec), spec
    args = {a.param: a.buffer for a in spec.run.args}
    assert args["in"] == args["out"] == "in"
    assert {b.name: b.role for b in spec.run.buffers}["in"] is Role.INOUT


def test_inference_says_what_is_missing_and_offers_an_annotation() -> None:
    path = EXAMPLES / "reduce.cu"
    spec = resolve_spec(str(path), path.read_text(), "block_sum")
    assert isinstance(spec, SpecMissing)
    assert any("size of `in`" in m for m in spec.missing)
    assert any("value of `n`" in m for m in spec.missing)
    assert spec.annotation.startswith("// warpwise: ")
    assert "grid=(n+kBlock-1)/kBlock" in spec.annotation and "block=256" in spec.annotation
    lines = path.read_text().splitlines()
    assert lines[spec.insert_line].startswith("__global__ void block_sum")


def test_inferred_annotation_round_trips_once_filled_in() -> None:
    path = EXAMPLES / "reduce.cu"
    text = path.read_text()
    missing = resolve_spec(str(path), text, "block_sum")
    assert isinstance(missing, SpecMissing)
    filled = missing.annotation.replace("in:in[?]", "in:in[n]").replace("partial:out[?]", "partial:out[n/256]")
    filled = filled.replace("n=?", "n=1<<20")
    lines = text.splitlines()
    lines.insert(missing.insert_line, filled)
    spec = resolve_spec(str(path), "\n".join(lines), "block_sum")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.run.original_geometry.grid == (4096, 1, 1)


def test_index_buffers_take_a_representative_in_bounds_range_said_in_the_notes() -> None:
    text = (
        "__global__ void gather(const int* idx, const float* src, float* dst, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) dst[i] = src[idx[i]]; }\n"
        "int main() { const int n = 1024; int* idx; float *src, *dst;\n"
        "  cudaMalloc(&idx, n * sizeof(int)); cudaMalloc(&src, n * sizeof(float)); cudaMalloc(&dst, n * 4);\n"
        "  gather<<<n / 256, 256>>>(idx, src, dst, n); }\n"
    )
    spec = spec_of(text, "gather")
    assert isinstance(spec, ProblemSpec), spec
    idx = next(b for b in spec.run.buffers if b.name == "idx")
    assert (idx.low, idx.high) == (0.0, 0.0)
    assert any("`idx` indexes other arrays" in n and "every element is 0" in n for n in spec.notes)


def test_reassigned_sizes_take_their_value_at_the_launch() -> None:
    # Straight-line code is read in order: `x` was allocated with 1024 floats, `n` is 2048 at the launch.
    text = (
        "__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 0; }\n"
        "int main() { int n = 1024; float* x; cudaMalloc(&x, n * sizeof(float)); n = n * 2;\n"
        "  k<<<n / 256, 256>>>(x, n); }\n"
    )
    spec = spec_of(text, "k")
    assert isinstance(spec, ProblemSpec), spec
    assert spec.run.buffers[0].count == 1024
    assert [a.value for a in spec.run.args if a.buffer is None] == [2048]
    assert spec.run.original_geometry.grid == (8, 1, 1)


def test_sizes_reassigned_on_one_path_are_not_trusted() -> None:
    text = (
        "__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 0; }\n"
        "int main(int argc, char** argv) { int n = 1024; float* x; cudaMalloc(&x, n * sizeof(float));\n"
        "  if (argc > 1) n = n * 2;\n"
        "  k<<<n / 256, 256>>>(x, n); }\n"
    )
    spec = spec_of(text, "k")
    assert isinstance(spec, SpecMissing)
    assert any("value of `n`" in m for m in spec.missing)


def test_kernel_without_launch() -> None:
    spec = spec_of("__global__ void k(float* x) { x[0] = 1; }\n", "k")
    assert isinstance(spec, SpecMissing)
    assert "not launched" in spec.message and spec.annotation


def test_problem_file_takes_precedence(tmp_path: Path) -> None:
    src = FIXTURES / "verify" / "problem" / "relu.cu"
    assert problem_file_for(src, "relu") == src.with_name("relu.problem.py")
    assert problem_file_for(src, "other") is None
    spec = resolve_spec(str(src), src.read_text(), "relu")
    assert isinstance(spec, ProblemSpec) and spec.source == "problem_file"
    assert spec.run.problem_source and "def reference" in spec.run.problem_source
    assert {b.name: b.role for b in spec.run.buffers} == {"x": Role.IN, "y": Role.OUT}


def test_problem_file_without_geometry_is_missing(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("__global__ void k(const float* x, float* y) { y[0] = x[0]; }\n")
    (tmp_path / "k.problem.py").write_text(
        "def make_inputs(seed):\n    return {}\n\ndef reference(i):\n    return {}\n"
    )
    spec = resolve_spec(str(tmp_path / "k.cu"), (tmp_path / "k.cu").read_text(), "k")
    assert isinstance(spec, SpecMissing) and "launch geometry" in spec.missing


def test_spec_hash_changes_with_the_spec() -> None:
    a = spec_of("// warpwise: n=8 x:out[n] grid=1 block=8\n__global__ void k(int n, float* x) { }\n", "k")
    b = spec_of("// warpwise: n=16 x:out[n] grid=1 block=16\n__global__ void k(int n, float* x) { }\n", "k")
    assert isinstance(a, ProblemSpec) and isinstance(b, ProblemSpec)
    assert a.content_hash != b.content_hash


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("1<<24", 1 << 24),
        ("(n + 255) / 256", 4),
        ("-7 / 2", -3),
        ("-7 % 2", -1),
        ("n * sizeof(float)", 4096),
        ("(size_t)n * 2u", 2048),
        ("2.5f * 2", 5.0),
        ("static_cast<int>(n) >> 2", 256),
    ],
)
def test_c_expressions(expr: str, value: float) -> None:
    assert cexpr.evaluate(expr, {"n": 1024}) == value


def test_c_expression_errors_name_the_piece() -> None:
    with pytest.raises(cexpr.ExprError, match="`m` has no known value"):
        cexpr.evaluate("n + m", {"n": 1})
    with pytest.raises(cexpr.ExprError, match="cannot be evaluated"):
        cexpr.evaluate("foo(n)", {"n": 1})


def test_model_is_reused_when_given() -> None:
    text = (EXAMPLES / "vector_ops.cu").read_text()
    model = analyze_text(text, "vector_ops.cu")
    assert isinstance(resolve_spec("vector_ops.cu", text, "center", model), ProblemSpec)


def test_a_problem_file_extends_another_and_overrides_what_differs(tmp_path: Path) -> None:
    from warpwise.verify.spec import read_problem

    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "op.problem.py").write_text(
        '"""The operator."""\nfrom __future__ import annotations\nSIZES = {"full": 8}\nkernel = "expert"\n'
        "def size():\n    return SIZES['full']\n"
    )
    (tmp_path / "naive.problem.py").write_text(
        'problem_extends = "shared/op.problem.py"\nkernel = "naive"\nSIZES = {"full": 3}\n'
    )
    ns: dict = {}
    exec(compile(read_problem(tmp_path / "naive.problem.py"), "naive.problem.py", "exec"), ns)
    assert ns["kernel"] == "naive" and ns["size"]() == 3  # The base's function reads the override.


def test_a_missing_or_circular_extends_is_a_clear_spec_missing(tmp_path: Path) -> None:
    from warpwise.verify.spec import ProblemFileError, read_problem

    (tmp_path / "a.problem.py").write_text('problem_extends = "b.problem.py"\n')
    with pytest.raises(ProblemFileError, match=r"cannot read the problem file .*b\.problem\.py.*named by"):
        read_problem(tmp_path / "a.problem.py")
    (tmp_path / "b.problem.py").write_text('problem_extends = "a.problem.py"\n')
    with pytest.raises(ProblemFileError, match="cycle"):
        read_problem(tmp_path / "a.problem.py")
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 0; }\n")
    (tmp_path / "k.problem.py").write_text('problem_extends = "gone.problem.py"\n')
    spec = resolve_spec(str(tmp_path / "k.cu"), (tmp_path / "k.cu").read_text(), "k")
    assert isinstance(spec, SpecMissing) and "gone.problem.py" in spec.message
