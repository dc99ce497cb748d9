"""Features of a (card, kernel) pair, re-derived from source by the analyzers and the card engine."""

from __future__ import annotations

import math

from warpwise.analyzers.build import analyze_text
from warpwise.ranking.features import (
    GPU_FEATURES,
    KERNEL_FEATURES,
    NUMERIC_FEATURES,
    REGION_FEATURES,
    WORDS,
    GpuProfile,
    PairFeatures,
    kernel_features,
    pair_features,
)
from warpwise.skills.engine import match_file

H200 = GpuProfile("NVIDIA H200", "sm_90", 4215.4, 51.2, 132, 62914560)

SAXPY = b"""
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}

__global__ void rows(const float* in, float* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (int c = 0; c < cols; ++c) out[r * cols + c] = 2.0f * in[r * cols + c];
}

int main() {
  const int n = 1 << 20;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  return 0;
}
"""


def test_every_feature_has_words() -> None:
    assert set(NUMERIC_FEATURES) == {*REGION_FEATURES, *KERNEL_FEATURES, *GPU_FEATURES}
    assert set(NUMERIC_FEATURES) <= set(WORDS)


def test_kernel_features_of_an_elementwise_kernel() -> None:
    model = analyze_text(SAXPY, "saxpy.cu")
    f = kernel_features(model, model.function("saxpy"), H200)
    assert f["k_global_accesses"] == 3
    assert f["k_frac_contiguous"] == 1.0 and f["k_frac_strided"] == 0.0
    assert f["k_min_width"] == 4 and f["k_dtype_f32"] == 1.0 and f["k_dtype_f16"] == 0.0
    assert f["k_loops"] == 0 and f["k_thread_loop"] == 0
    assert f["k_block_log2"] == 8 and f["k_threads_log2"] == 20
    assert math.isnan(f["k_registers"])  # No compiler report was given.
    assert f["k_flops_per_byte_log2"] < 0  # Far less than one operation per byte.
    assert f["k_balance_log2"] < f["k_flops_per_byte_log2"]  # The H200 needs ~12 FLOP/byte to be compute-bound.


def test_kernel_features_of_a_per_thread_row_walk() -> None:
    model = analyze_text(SAXPY, "saxpy.cu")
    f = kernel_features(model, model.function("rows"), H200, {"k_registers": 20, "k_block_log2": 7})
    assert f["k_loops"] == 1
    assert f["k_frac_strided"] == 1.0
    assert f["k_registers"] == 20
    assert math.isnan(f["k_block_log2"]) is False and f["k_block_log2"] == 7  # No launch in the file: the report's.


def test_pair_features_round_trip_through_json() -> None:
    model = analyze_text(SAXPY, "saxpy.cu")
    ms = [m for m in match_file(model) if m.function == "saxpy" and m.card_id == "scalar-global-access"]
    assert ms
    pf = pair_features(model, model.function("saxpy"), ms, H200)
    assert pf.card == "scalar-global-access" and pf.anchor == "access"
    assert pf.numeric["r_regions"] == len(ms)
    assert 0 <= pf.numeric["r_frac_holds"] <= 1
    assert pf.numeric["g_arch"] == 90 and abs(pf.numeric["g_copy_tbps"] - 4.2154) < 1e-9
    back = PairFeatures.from_dict(pf.to_dict())
    assert back.card == pf.card
    for k, v in pf.numeric.items():
        assert (math.isnan(v) and math.isnan(back.numeric[k])) or abs(back.numeric[k] - v) < 1e-5


def test_broken_source_still_gives_features() -> None:
    text = b"__global__ void k(float* x, int n) {\n  int i = threadIdx.x;\n  if (i < n) x[i] = x[i] +;\n}\n"
    model = analyze_text(text, "b.cu")
    fn = model.function("k")
    assert fn is not None and model.syntax_problems
    f = kernel_features(model, fn, None)
    assert set(f) == set(KERNEL_FEATURES)


UNTILED = b"""
typedef float real;
#define TILE 256
__global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}

__global__ void naive_restyled(const real *__restrict__ a, const real *__restrict__ b, real *c, int m, int n, int kk) {
  const int r = threadIdx.x + blockDim.x * blockIdx.x;
  const int q = threadIdx.y + blockDim.y * blockIdx.y;
  if (r >= m || q >= n) return;
  real sum = 0;
  int k = 0;
  while (k < kk) {
    sum += b[q + k * n] * a[k + kk * r];
    k++;
  }
  c[q + r * n] = sum;
}

__global__ void stride_loop(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = 2.f * x[i];
}

__global__ void tiled(const float* A, float* C, int K) {
  __shared__ float t[TILE];
  float acc = 0.f;
  for (int k = 0; k < K; k += TILE) {
    t[threadIdx.x] = A[k + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < TILE; ++j) acc += t[j];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
"""


def test_untiled_reads_and_traffic_factor_separate_naive_kernels() -> None:
    model = analyze_text(UNTILED, "u.cu")
    feats = {}
    for name in ("naive", "naive_restyled", "stride_loop", "tiled"):
        fn = model.function(name)
        assert fn is not None
        feats[name] = kernel_features(model, fn, H200)
    # Both spellings of the naive product: each thread walks a row of `A` (lanes a row apart) with no shared tile.
    for name in ("naive", "naive_restyled"):
        assert feats[name]["k_untiled_loop_reads"] == 1.0, name
        assert feats[name]["k_traffic_factor_log2"] >= 3.0, name
    # A grid-stride loop reads each element once, and a shared tile stages the reuse: neither is untiled.
    for name in ("stride_loop", "tiled"):
        assert feats[name]["k_untiled_loop_reads"] == 0.0, name
        assert feats[name]["k_traffic_factor_log2"] == 0.0, name
