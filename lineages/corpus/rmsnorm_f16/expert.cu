// RMS normalization of each row of a rows x cols float16 matrix, scaled by a per-column float16 weight:
// y = x / sqrt(mean(x^2) + eps) * w, accumulated in float32. The expert kernel of the rmsnorm_f16 lineage.
//
// One block per row. Each thread keeps up to RN_CACHE 16-byte vectors (8 halves each) of its row in registers,
// so a row of up to RN_THREADS * 8 * RN_CACHE values is read from device memory once; the values are widened
// to float32 pairwise (half2), squared and summed per thread, the sums reduced with warp shuffles and then across
// warps through shared memory. The output is computed from the registers, narrowed pairwise with
// round-to-nearest and stored with 16-byte stores; the weight is read with 16-byte loads through the read-only
// path. Values past the register cache are read again. Rows whose length is not a multiple of 8 take a scalar
// path.

#include <cuda_fp16.h>

#define RN_THREADS 256
#define RN_WARPS (RN_THREADS / 32)
#define RN_CACHE 4

__device__ __forceinline__ float sumsq8(uint4 u) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    s += f.x * f.x + f.y * f.y;
  }
  return s;
}

__device__ __forceinline__ uint4 scale8(uint4 u, uint4 w, float rstd) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
  const __half2* g = reinterpret_cast<const __half2*>(&w);
  uint4 out;
  __half2* o = reinterpret_cast<__half2*>(&out);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    const float2 gf = __half22float2(g[i]);
    o[i] = __floats2half2_rn(f.x * rstd * gf.x, f.y * rstd * gf.y);
  }
  return out;
}

// Sum a value over the block; every thread returns the total.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float red[RN_WARPS];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < RN_WARPS; ++w) total += red[w];
  return total;
}

__global__ void __launch_bounds__(RN_THREADS)
    rmsnorm_f16(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y, int rows,
                int cols, float eps) {
  const int row = blockIdx.x;
  if (row >= rows) return;
  const __half* __restrict__ xr = x + (size_t)row * cols;
  __half* __restrict__ yr = y + (size_t)row * cols;

  if ((cols & 7) == 0) {
    const uint4* __restrict__ x8 = reinterpret_cast<const uint4*>(xr);
    const uint4* __restrict__ w8 = reinterpret_cast<const uint4*>(w);
    uint4* __restrict__ y8 = reinterpret_cast<uint4*>(yr);
    const int n8 = cols >> 3;
    uint4 v[RN_CACHE];
#pragma unroll
    for (int k = 0; k < RN_CACHE; ++k) {
      const int c = threadIdx.x + k * RN_THREADS;
      v[k] = c < n8 ? x8[c] : make_uint4(0u, 0u, 0u, 0u);
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < RN_CACHE; ++k) s += sumsq8(v[k]);
    for (int c = threadIdx.x + RN_CACHE * RN_THREADS; c < n8; c += RN_THREADS) s += sumsq8(x8[c]);
    const float rstd = rsqrtf(block_sum(s) / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < RN_CACHE; ++k) {
      const int c = threadIdx.x + k * RN_THREADS;
      if (c < n8) y8[c] = scale8(v[k], __ldg(w8 + c), rstd);
    }
    for (int c = threadIdx.x + RN_CACHE * RN_THREADS; c < n8; c += RN_THREADS) {
      y8[c] = scale8(x8[c], __ldg(w8 + c), rstd);
    }
    return;
  }

  // Scalar path: rows whose length is not a multiple of 8.
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += RN_THREADS) {
    const float f = __half2float(xr[c]);
    s += f * f;
  }
  const float rstd = rsqrtf(block_sum(s) / (float)cols + eps);
  for (int c = threadIdx.x; c < cols; c += RN_THREADS) {
    yr[c] = __float2half_rn(__half2float(xr[c]) * rstd * __half2float(w[c]));
  }
}
