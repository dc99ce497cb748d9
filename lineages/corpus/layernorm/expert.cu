// Layer normalization forward over each row of a rows x cols float32 matrix, with per-column gamma and beta:
// the expert kernel of the layernorm lineage.
//
// One block per row. Each thread keeps up to LN_CACHE 16-byte vectors of its row in registers, so a row of up to
// LN_THREADS * 4 * LN_CACHE values is read from device memory once. Each thread computes the count, mean and
// sum of squared deviations (M2) of its values exactly, from registers; the triples are merged with Chan's
// parallel formula, first with warp shuffles, then across warps through shared memory: one block-wide step and
// no second pass over memory. Values past the register cache are folded in four at a time on the way and read
// again for the output. gamma and beta are read through the read-only path with 16-byte loads. Rows whose length
// is not a multiple of 4 take a scalar path.

#define LN_THREADS 256
#define LN_WARPS (LN_THREADS / 32)
#define LN_CACHE 8

struct Stats {
  float n;
  float mean;
  float m2;
};

// Chan et al.: merge the statistics of two disjoint sets of values.
__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float delta = b.mean - a.mean;
  const float wb = b.n / n;
  Stats r;
  r.n = n;
  r.mean = a.mean + delta * wb;
  r.m2 = a.m2 + b.m2 + delta * delta * a.n * wb;
  return r;
}

__device__ __forceinline__ Stats stats4(float4 v) {
  Stats r;
  r.n = 4.0f;
  r.mean = ((v.x + v.y) + (v.z + v.w)) * 0.25f;
  const float dx = v.x - r.mean, dy = v.y - r.mean, dz = v.z - r.mean, dw = v.w - r.mean;
  r.m2 = (dx * dx + dy * dy) + (dz * dz + dw * dw);
  return r;
}

// Merge every thread's statistics; every thread returns the row's.
__device__ __forceinline__ Stats block_merge(Stats t) {
  __shared__ Stats red[LN_WARPS];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    Stats o;
    o.n = __shfl_xor_sync(0xffffffffu, t.n, offset);
    o.mean = __shfl_xor_sync(0xffffffffu, t.mean, offset);
    o.m2 = __shfl_xor_sync(0xffffffffu, t.m2, offset);
    t = merge(t, o);
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = t;
  __syncthreads();
  Stats r = red[0];
#pragma unroll
  for (int w = 1; w < LN_WARPS; ++w) r = merge(r, red[w]);
  return r;
}

__device__ __forceinline__ float4 normalize4(float4 v, float mean, float rstd, float4 g, float4 b) {
  return make_float4((v.x - mean) * rstd * g.x + b.x, (v.y - mean) * rstd * g.y + b.y,
                     (v.z - mean) * rstd * g.z + b.z, (v.w - mean) * rstd * g.w + b.w);
}

__global__ void __launch_bounds__(LN_THREADS)
    layernorm_fwd(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                  float* __restrict__ y, int rows, int cols, float eps) {
  const int row = blockIdx.x;
  if (row >= rows) return;
  const float* __restrict__ xr = x + (size_t)row * cols;
  float* __restrict__ yr = y + (size_t)row * cols;

  if ((cols & 3) == 0) {
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(xr);
    const float4* __restrict__ g4 = reinterpret_cast<const float4*>(gamma);
    const float4* __restrict__ b4 = reinterpret_cast<const float4*>(beta);
    float4* __restrict__ y4 = reinterpret_cast<float4*>(yr);
    const int n4 = cols >> 2;
    float4 v[LN_CACHE];
    float count = 0.0f;
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < LN_CACHE; ++k) {
      const int c = threadIdx.x + k * LN_THREADS;
      v[k] = c < n4 ? x4[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int k = 0; k < LN_CACHE; ++k) {
      if (threadIdx.x + k * LN_THREADS < n4) {
        count += 4.0f;
        sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
      }
    }
    Stats t;
    t.n = count;
    t.mean = count > 0.0f ? sum / count : 0.0f;
    t.m2 = 0.0f;
#pragma unroll
    for (int k = 0; k < LN_CACHE; ++k) {
      if (threadIdx.x + k * LN_THREADS < n4) {
        const float dx = v[k].x - t.mean, dy = v[k].y - t.mean, dz = v[k].z - t.mean, dw = v[k].w - t.mean;
        t.m2 += (dx * dx + dy * dy) + (dz * dz + dw * dw);
      }
    }
    for (int c = threadIdx.x + LN_CACHE * LN_THREADS; c < n4; c += LN_THREADS) t = merge(t, stats4(x4[c]));

    const Stats r = block_merge(t);
    const float mean = r.mean;
    const float rstd = rsqrtf(r.m2 / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < LN_CACHE; ++k) {
      const int c = threadIdx.x + k * LN_THREADS;
      if (c < n4) y4[c] = normalize4(v[k], mean, rstd, __ldg(g4 + c), __ldg(b4 + c));
    }
    for (int c = threadIdx.x + LN_CACHE * LN_THREADS; c < n4; c += LN_THREADS) {
      y4[c] = normalize4(x4[c], mean, rstd, __ldg(g4 + c), __ldg(b4 + c));
    }
    return;
  }

  // Scalar path: rows whose length is not a multiple of 4.
  Stats t;
  t.n = 0.0f;
  t.mean = 0.0f;
  t.m2 = 0.0f;
  for (int c = threadIdx.x; c < cols; c += LN_THREADS) {
    Stats one;
    one.n = 1.0f;
    one.mean = xr[c];
    one.m2 = 0.0f;
    t = merge(t, one);
  }
  const Stats r = block_merge(t);
  const float rstd = rsqrtf(r.m2 / (float)cols + eps);
  for (int c = threadIdx.x; c < cols; c += LN_THREADS) {
    yr[c] = (xr[c] - r.mean) * rstd * __ldg(gamma + c) + __ldg(beta + c);
  }
}
