"""Contraction tiles as search parameters: every tile shape of the card, with its grid, on ours and the OOD suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.search.test_actions import context
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.facts import tree_of
from warpwise.search.actions import Action
from warpwise.search.context import SearchContext
from warpwise.search.evaluate import Evaluator
from warpwise.search.params import ParamActions
from warpwise.search.version import Version
from warpwise.skills.library import builtin_library
from warpwise.verify.types import Options, Side

ROOT = Path(__file__).resolve().parents[2]
RULES = builtin_library().get("untiled-contraction").rules  # type: ignore[union-attr]


def _tile_actions(path: Path, kernel: str) -> tuple[list[Action], SearchContext, Version]:
    ctx, v = context(path, kernel)
    actions = [a for a in ParamActions().actions(v, ctx) if a.name.startswith("param:tiles=")]
    return actions, ctx, v


@pytest.mark.parametrize(
    ("rel", "kernel", "m", "n"),
    [
        ("bench/suite/matmul/naive.cu", "matmul_naive", 64, 64),
        ("bench/suite_ood/sgemm/nn_swapped_alpha_beta.cu", "sgemm_naive_nn", 33, 47),
        ("bench/suite_ood/sgemm/nt_tile_macro.cu", "matmul_nt", 33, 40),
        ("bench/suite_ood/hgemm/nn_float_acc.cu", "hgemm_nn", 33, 40),
        ("bench/suite_ood/hgemm/tn_alpha_beta.cu", "hgemm_tn_ab", 33, 47),
    ],
)
def test_every_tile_shape_is_offered_with_its_grid(
    rel: str, kernel: str, m: int, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from warpwise.verify.worker.gpu_job import Problem

    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "tiny")
    actions, ctx, v = _tile_actions(ROOT / rel, kernel)
    c, _ = RULES.recognise(*ctx.function(v))
    shapes = [t for t in RULES.choices_for(c) if isinstance(t, RULES.MmaTiles) or not t.problems()]
    if c.convert:  # half and bfloat16 operands: the tensor-core shapes first, then the exact SIMT ones
        assert [type(t).__name__ for t in shapes[: len(RULES.MMA_CHOICES)]] == ["MmaTiles"] * len(RULES.MMA_CHOICES)
    else:  # float operands: no TF32 without a problem tolerance that admits it
        assert not any(isinstance(t, RULES.MmaTiles) for t in shapes)
    assert [a.name for a in actions] == [f"param:tiles={t.key}" for t in shapes]
    priors = [a.prior for a in actions]
    assert priors == sorted(priors, reverse=True) and priors[0] > priors[-1]  # the measured best first
    for action, tiles in zip(actions, shapes, strict=True):
        child = action.produce()
        assert child is not None and f"{tiles.bm}x{tiles.bn} output tiles" in child.text
        model = analyze_text(child.text.encode(), rel)
        assert not tree_of(model).root_node.has_error  # the rewritten file parses without errors
        # The problem file launches the candidate on the grid of output tiles; the original keeps its own.
        spec = Evaluator(None, ctx.path, kernel, v, ctx.spec, Options()).spec_for(child)  # type: ignore[arg-type]
        case = Problem(spec.run, torch.device("cpu")).case(0)
        geom = case.geometry[Side.CANDIDATE]
        assert geom.block == (tiles.threads, 1, 1)
        assert geom.grid == (-(-n // tiles.bn), -(-m // tiles.bm), 1)
        assert case.geometry[Side.ORIGINAL].block != geom.block
        # Once tiled, the kernel is no longer a naive contraction: no tile shape is offered again.
        assert not [a for a in ParamActions().actions(child, ctx) if a.name.startswith("param:tiles=")]


def test_half_inputs_are_converted_once_and_accumulated_in_float() -> None:
    path = ROOT / "bench/suite_ood/hgemm/nn_float_acc.cu"
    model = analyze_text(path.read_bytes(), str(path))
    c, why = RULES.recognise(model, model.kernels[0])
    assert c is not None, why
    assert c.convert == "__half2float" and c.tile_type == "float" and c.elem_type == "__half"
    out = RULES.rewrite_source(model, "hgemm_nn", RULES.Tiles()).decode()
    assert "__shared__ alignas(16) float ww_As" in out
    assert "__half2float(A[ww_base" in out and "const uint2 ww_v" in out  # 8-byte loads of four halves
    assert "C[row * N + col] = __float2half(acc);" in out  # the epilogue as written


@pytest.mark.parametrize(
    ("body", "recognised"),
    [
        ("acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);", True),
        ("acc += (float)A[row * K + k] * (float)B[k * N + col];", True),
        # The product rounded to half before it is added is another computation: not this rewrite.
        ("acc += __half2float(__hmul(A[row * K + k], B[k * N + col]));", False),
        # One operand converted, the other not: half * float is promoted differently.
        ("acc += __half2float(A[row * K + k]) * B[k * N + col];", False),
        ("acc += __bfloat162float(A[row * K + k]) * __bfloat162float(B[k * N + col]);", False),
    ],
)
def test_half_recognition_reads_the_conversions(body: str, recognised: bool) -> None:
    text = f"""#include <cuda_fp16.h>
typedef __half elem;
__global__ void h(const elem *A, const elem *B, elem *C, int M, int N, int K) {{
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {{
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {body}
    C[row * N + col] = __float2half(acc);
  }}
}}
"""
    model = analyze_text(text.encode(), "h.cu")
    c, why = RULES.recognise(model, model.kernels[0])
    assert (c is not None) is recognised, why


def test_bfloat16_inputs_take_their_own_conversion() -> None:
    text = """#include <cuda_bf16.h>
__global__ void b(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; k++) s += __bfloat162float(A[i * K + k]) * __bfloat162float(B[j * K + k]);
  C[i * N + j] = s;
}
"""
    model = analyze_text(text.encode(), "b.cu")
    c, why = RULES.recognise(model, model.kernels[0])
    assert c is not None and c.convert == "__bfloat162float" and c.layout == "NT", why
    out = RULES.rewrite_source(model, "b", RULES.Tiles()).decode()
    assert "__bfloat162float(B[ww_base" in out and "reinterpret_cast<const __nv_bfloat16 *>(&ww_v)" in out
