// Softmax over each row of a rows x cols float32 matrix: the expert kernel of the softmax_rows lineage.
//
// One block per row. Each thread keeps up to SM_CACHE 16-byte vectors of its row in registers, so a row of up
// to SM_THREADS * 4 * SM_CACHE values is read from device memory once and written once. Each thread folds its
// values into an online (max, sum of exponentials) pair; the pairs are merged with warp shuffles and then
// across warps through shared memory (one block-wide step instead of a max pass and a sum pass). Values past
// the register cache are folded in online on the way and read again for the output. Rows whose length is not a
// multiple of 4 take a scalar path with the same online algorithm.

#define SM_THREADS 256
#define SM_WARPS (SM_THREADS / 32)
#define SM_CACHE 8
#define LOG2E 1.4426950408889634f
#define NEG_INF __int_as_float(0xff800000)  // -infinity (NVRTC has no <math.h> INFINITY)

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

// Rescale factor exp(from - to) for a running sum, exactly 1 when nothing changes (also for two empty maxima).
__device__ __forceinline__ float rescale(float from, float to) { return from == to ? 1.0f : exp2f((from - to) * LOG2E); }

// Merge the online pair (om, os) into (m, s).
__device__ __forceinline__ void merge(float& m, float& s, float om, float os) {
  const float nm = fmaxf(m, om);
  s = s * rescale(m, nm) + os * rescale(om, nm);
  m = nm;
}

// Fold four values into the online pair (m, s).
__device__ __forceinline__ void fold4(float& m, float& s, float4 v) {
  const float vm = max4(v);
  if (vm > m) {
    s *= rescale(m, vm);
    m = vm;
  }
  s += exp2f((v.x - m) * LOG2E) + exp2f((v.y - m) * LOG2E) + exp2f((v.z - m) * LOG2E) + exp2f((v.w - m) * LOG2E);
}

// Merge every thread's pair; every thread returns the row's (max, sum).
__device__ __forceinline__ void block_merge(float& m, float& s) {
  __shared__ float red_m[SM_WARPS];
  __shared__ float red_s[SM_WARPS];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, offset);
    const float os = __shfl_xor_sync(0xffffffffu, s, offset);
    merge(m, s, om, os);
  }
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) {
    red_m[warp] = m;
    red_s[warp] = s;
  }
  __syncthreads();
  m = red_m[0];
  s = red_s[0];
#pragma unroll
  for (int w = 1; w < SM_WARPS; ++w) merge(m, s, red_m[w], red_s[w]);
}

__global__ void __launch_bounds__(SM_THREADS)
    softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int row = blockIdx.x;
  if (row >= rows) return;
  const float* __restrict__ xr = x + (size_t)row * cols;
  float* __restrict__ yr = y + (size_t)row * cols;
  float m = NEG_INF;
  float s = 0.0f;

  if ((cols & 3) == 0) {
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(xr);
    float4* __restrict__ y4 = reinterpret_cast<float4*>(yr);
    const int n4 = cols >> 2;
    float4 v[SM_CACHE];
    // All cached loads are issued first; columns past the row read as -inf and contribute nothing.
#pragma unroll
    for (int k = 0; k < SM_CACHE; ++k) {
      const int c = threadIdx.x + k * SM_THREADS;
      v[k] = c < n4 ? x4[c] : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
    }
#pragma unroll
    for (int k = 0; k < SM_CACHE; ++k) m = fmaxf(m, max4(v[k]));
    if (m != NEG_INF) {
#pragma unroll
      for (int k = 0; k < SM_CACHE; ++k) {
        s += exp2f((v[k].x - m) * LOG2E) + exp2f((v[k].y - m) * LOG2E) + exp2f((v[k].z - m) * LOG2E) +
             exp2f((v[k].w - m) * LOG2E);
      }
    }
    for (int c = threadIdx.x + SM_CACHE * SM_THREADS; c < n4; c += SM_THREADS) fold4(m, s, x4[c]);

    block_merge(m, s);
    const float inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < SM_CACHE; ++k) {
      const int c = threadIdx.x + k * SM_THREADS;
      if (c < n4) {
        y4[c] = make_float4(exp2f((v[k].x - m) * LOG2E) * inv, exp2f((v[k].y - m) * LOG2E) * inv,
                            exp2f((v[k].z - m) * LOG2E) * inv, exp2f((v[k].w - m) * LOG2E) * inv);
      }
    }
    for (int c = threadIdx.x + SM_CACHE * SM_THREADS; c < n4; c += SM_THREADS) {
      const float4 w = x4[c];
      y4[c] = make_float4(exp2f((w.x - m) * LOG2E) * inv, exp2f((w.y - m) * LOG2E) * inv,
                          exp2f((w.z - m) * LOG2E) * inv, exp2f((w.w - m) * LOG2E) * inv);
    }
    return;
  }

  // Scalar path: rows whose length is not a multiple of 4 (their rows are not 16-byte aligned).
  for (int c = threadIdx.x; c < cols; c += SM_THREADS) {
    const float v = xr[c];
    if (v > m) {
      s *= rescale(m, v);
      m = v;
    }
    s += exp2f((v - m) * LOG2E);
  }
  block_merge(m, s);
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += SM_THREADS) yr[c] = exp2f((xr[c] - m) * LOG2E) * inv;
}
