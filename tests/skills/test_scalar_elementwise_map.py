"""The scalar-elementwise-map card (skills/scalar-elementwise-map/): recogniser, rewrite, search actions, GPU.

The card's fixtures run through tests/skills/test_cards.py and tests/metamorphic like every card's; here: what the
recogniser reads from the elementwise kernels of both naive suites (forms and vector streams), why near misses are
refused, that every variant of every suite rewrite compiles, that the search offers one action per variant with the
launch change of the guarded forms, and (on a GPU) that the gate finds the rewrites correct on inputs whose sizes
are not a multiple of the vector width (the tail and the misaligned rows take the scalar path).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import builtin_library

_lib = builtin_library()
_card = _lib.get("scalar-elementwise-map")
assert _card is not None and _card.rules is not None, "the scalar-elementwise-map card did not load"
em = _card.rules
BUILTIN = Path(_card.path).parent

# The elementwise kernels of the suites: (form, lane variable, vector streams, elements per 16-byte vector).
SUITE_MAPS = {
    "bench/suite/bias_gelu/naive.cu": ("if", "i", ("x", "bias", "y"), 4),
    "bench/suite/gelu_f16/naive.cu": ("if", "i", ("x", "y"), 8),
    "bench/suite_ood/bias_relu/half_macro_hidden.cu": ("return", "i", ("x", "bias", "y"), 8),
    "bench/suite_ood/bias_relu/inplace_2d.cu": ("return", "col", ("x", "b"), 4),
    "bench/suite_ood/bias_relu/modulo_col.cu": ("if", "i", ("y", "x", "bias"), 4),
    "bench/suite_ood/gelu_tanh/grid_stride_typedef.cu": ("loop", "i", ("in", "out"), 4),
    "bench/suite_ood/gelu_tanh/half_2d.cu": ("if", "c", ("x", "y"), 8),
    "bench/suite_ood/gelu_tanh/one_d.cu": ("if", "i", ("x", "y"), 4),
    "bench/suite_ood/silu_mul/concat_divmod.cu": ("if", "i", ("in0", "in1", "out"), 4),
    "bench/suite_ood/silu_mul/half_block_per_row.cu": ("loop", "c", ("input0", "out", "input1"), 8),
    "bench/suite_ood/silu_mul/separate_2d.cu": ("if", "x", ("gate", "h", "up"), 4),
}
# Kernels that are not maps, and the reason the recogniser gives.
NOT_MAPS = {
    "bench/suite/softmax/naive.cu": "statements follow the loop",
    "bench/suite/histogram/naive.cu": "atomicAdd",
    "bench/suite/gemv/naive.cu": "holds a loop",
    "bench/suite_ood/stencil/heat1d.cu": "neighbouring elements",
    "bench/suite/sum/naive.cu": "comes between the index",
}


def _kernel(path: Path | None = None, text: bytes | None = None):
    model = analyze_text(text if text is not None else path.read_bytes(), str(path or "k.cu"))
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
    return model, fn


@pytest.mark.parametrize("rel", sorted(SUITE_MAPS))
def test_recognises_the_suites_elementwise_maps(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    shape, why = em.recognise(model, fn)
    assert shape is not None, why
    form, var, streams, lanes = SUITE_MAPS[rel]
    assert (shape.form, shape.var, shape.vectorized, shape.lanes) == (form, var, streams, lanes)


@pytest.mark.parametrize("rel", sorted(NOT_MAPS))
def test_refuses_kernels_that_are_not_maps(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    shape, why = em.recognise(model, fn)
    assert shape is None and NOT_MAPS[rel] in why, why


def test_an_operand_free_of_the_lane_variable_stays_a_scalar_load() -> None:
    model, fn = _kernel(BUILTIN / "fixtures" / "pos_block_row_pointers.cu")
    text = em.rewrite_source(model, fn.name, 1).decode()
    # `scale[row]` is the same for every element of the row: each lane reads it as the original thread did.
    assert "__float2half(__half2float(ww_in[ww_l]) * scale[row])" in text


def test_a_bias_at_the_column_is_a_stream_checked_per_thread() -> None:
    model, fn = _kernel(ROOT / "bench/suite/bias_gelu/naive.cu")
    text = em.rewrite_source(model, fn.name, 1).decode()
    # bias[i % cols] is bias[i - cols * (i / cols)]: contiguous while the thread's lanes stay in one row.
    assert "float v = ww_x[ww_l] + ww_bias[ww_l];" in text
    assert "ww_v0 / (cols) == (ww_v0 + (int)(3)) / (cols)" in text
    assert "reinterpret_cast<const float4*>(x + ww_v0)" in text


def test_the_scalar_path_turns_the_early_return_into_the_next_element() -> None:
    model, fn = _kernel(ROOT / "bench/suite_ood/bias_relu/inplace_2d.cu")
    text = em.rewrite_source(model, fn.name, 1).decode()
    assert "if (row >= rows || col >= cols) continue;" in text
    assert "return;" not in text.split("ww_v0", 1)[1]


def test_a_row_pointer_at_two_offsets_of_one_array_makes_two_streams() -> None:
    model, fn = _kernel(ROOT / "bench/suite_ood/silu_mul/half_block_per_row.cu")
    shape, _ = em.recognise(model, fn)
    assert shape is not None
    offsets = {sid: off for sid, arr, off in shape.streams if arr == "input"}
    assert set(offsets) == {"input0", "input1"}
    assert (offsets["input1"] - offsets["input0"]).constant() == 11008


def test_a_row_read_through_a_quotient_is_a_stream_checked_per_thread() -> None:
    model, fn = _kernel(ROOT / "bench/suite_ood/silu_mul/concat_divmod.cu")
    text = em.rewrite_source(model, fn.name, 1).decode()
    # in[t * 2 * H + f] with t = i / H and f = i % H is in[i + H * (i / H)]: contiguous over the thread's lanes
    # whenever they share one quotient, which the rewritten kernel checks before it divides.
    assert "ww_vec = ww_vec && (H) != 0 && ww_v0 / (H) == (ww_v0 + (int)(3)) / (H);" in text
    assert "const long long ww_o0 = ww_vec ? (long long)(H) * (long long)(ww_v0 / (H)) : 0LL;" in text


def test_a_store_before_a_load_of_another_array_is_an_overlap_hazard() -> None:
    src = b"""
__global__ void k(const float *x, float *y, float *z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = 2.0f * x[i]; z[i] = x[i] + y[i]; }
}
"""
    model, fn = _kernel(text=src)
    shape, _ = em.recognise(model, fn)
    assert shape is not None and shape.hazard


def test_a_conditional_read_is_not_vectorized() -> None:
    src = b"""
__global__ void k(const float *x, const int *mask, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = mask[i] ? x[i] : 0.0f;
}
"""
    model, fn = _kernel(text=src)
    shape, _ = em.recognise(model, fn)
    assert shape is not None and "x" not in shape.vectorized and {"mask", "y"} <= set(shape.vectorized)


def test_every_variant_of_every_suite_rewrite_compiles() -> None:
    sources = []
    for rel in sorted(SUITE_MAPS):
        model, fn = _kernel(ROOT / rel)
        for v in em.VECTOR_CHOICES:
            text = em.rewrite_source(model, fn.name, v)
            assert text is not None
            sources.append((f"{Path(rel).stem}_v{v}", text))
    results = compile_many([t for _, t in sources])
    bad = [(name, log) for (name, _), (ok, log) in zip(sources, results, strict=True) if not ok]
    assert not bad, bad[0]


def test_search_offers_one_action_per_variant_with_the_grid_divided() -> None:
    from tests.search.test_transformations import _geometry, context
    from warpwise.search.transformations import TransformationActions

    ctx, v = context(ROOT / "bench/suite_ood/bias_relu/modulo_col.cu", "bias_relu")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    names = sorted(a for a in acts if a.startswith("transform:scalar-elementwise-map:"))
    assert len(names) == len(em.VECTOR_CHOICES), names
    eight = acts["transform:scalar-elementwise-map:8 elements per thread, grid.x / 8"].produce()
    assert eight is not None and "ww_g < 2" in eight.text
    assert _geometry(eight.launch, (262144, 1, 1), (256, 1, 1))[:2] == ((32768, 1, 1), (256, 1, 1))


def test_a_stride_loop_keeps_its_launch() -> None:
    from tests.search.test_transformations import context
    from warpwise.search.transformations import TransformationActions

    ctx, v = context(ROOT / "bench/suite_ood/gelu_tanh/grid_stride_typedef.cu", "gelu_grid_stride")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    four = acts["transform:scalar-elementwise-map:4 elements per thread"].produce()
    assert four is not None and "ww_v0 < (count)" in four.text
    assert four.launch is None or not four.launch.transforms


GPU_CASES = [
    ("bench/suite_ood/bias_relu/modulo_col.cu", "bias_relu", 1),
    ("bench/suite_ood/silu_mul/concat_divmod.cu", "silu_and_mul", 2),
    ("bench/suite_ood/gelu_tanh/half_2d.cu", "gelu_half_2d", 2),
    ("bench/suite_ood/silu_mul/half_block_per_row.cu", "act_and_mul_f16", 1),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("rel", "kernel", "vectors"), GPU_CASES, ids=[c[1] for c in GPU_CASES])
def test_gate_finds_the_rewrite_correct_on_odd_sizes(rel: str, kernel: str, vectors: int, monkeypatch) -> None:
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    # The `odd` preset: sizes that are not multiples of the vector width, so tails and misaligned rows run.
    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "odd")
    path = ROOT / rel
    original = path.read_text()
    model = analyze_text(original.encode(), str(path))
    cand = em.rewrite_source(model, kernel, vectors)
    assert cand is not None
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, kernel, cand.decode(), str(path), None),
            Options(seeds=(0, 1, 2), time_limit_s=60.0),
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)
