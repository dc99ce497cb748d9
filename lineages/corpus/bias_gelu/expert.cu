// y = gelu(x + bias) for a rows x cols float32 matrix and a per-column bias, with the exact (erf) GELU:
// the expert kernel of the bias_gelu lineage.
//
// Fusion: the bias add and the GELU happen in one pass, so x is read once and y written once (torch's eager
// x + bias followed by gelu moves the matrix four times). Each thread owns 4 adjacent columns: it loads their
// bias once, with a 16-byte load through the read-only path, and keeps it in registers while it walks down the
// rows (gridDim.y row slices interleave), with BG_UNROLL independent 16-byte loads of x in flight. The grid is
// sized from the multiprocessor count by the launch. Widths that are not a multiple of 4 take a scalar path
// with the same shape.

#define BG_THREADS 256
#define BG_UNROLL 4
#define SQRT1_2 0.70710678118654752f

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * SQRT1_2)); }

__device__ __forceinline__ float4 bias_gelu4(float4 v, float4 b) {
  return make_float4(gelu(v.x + b.x), gelu(v.y + b.y), gelu(v.z + b.z), gelu(v.w + b.w));
}

__global__ void __launch_bounds__(BG_THREADS)
    bias_gelu_f32(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y, int rows,
                  int cols) {
  const int rstep = gridDim.y;
  if ((cols & 3) == 0) {
    const int cols4 = cols >> 2;
    const int c4 = blockIdx.x * BG_THREADS + threadIdx.x;
    if (c4 >= cols4) return;
    const float4 b = __ldg(reinterpret_cast<const float4*>(bias) + c4);
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x) + c4;
    float4* __restrict__ y4 = reinterpret_cast<float4*>(y) + c4;
    int r = blockIdx.y;
    for (; r + (BG_UNROLL - 1) * rstep < rows; r += BG_UNROLL * rstep) {
      float4 v[BG_UNROLL];
#pragma unroll
      for (int u = 0; u < BG_UNROLL; ++u) v[u] = x4[(size_t)(r + u * rstep) * cols4];
#pragma unroll
      for (int u = 0; u < BG_UNROLL; ++u) y4[(size_t)(r + u * rstep) * cols4] = bias_gelu4(v[u], b);
    }
    for (; r < rows; r += rstep) y4[(size_t)r * cols4] = bias_gelu4(x4[(size_t)r * cols4], b);
    return;
  }

  // Scalar path: the block covers the same 4 * BG_THREADS columns, one value per thread at a time.
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int c = blockIdx.x * BG_THREADS * 4 + k * BG_THREADS + threadIdx.x;
    if (c >= cols) continue;
    const float b = __ldg(bias + c);
    for (int r = blockIdx.y; r < rows; r += rstep) y[(size_t)r * cols + c] = gelu(x[(size_t)r * cols + c] + b);
  }
}
