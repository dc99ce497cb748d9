// y = A x for a row-major rows x cols float32 matrix A: the expert kernel of the gemv lineage.
//
// One warp per row (a grid-stride loop over rows): the warp streams its row with coalesced 16-byte loads, four
// independent loads in flight per lane, marked streaming (`__ldcs`: A is read once, so it should not push x out
// of the caches), while x goes through the read-only path (`__ldg`: every warp reads all of it, and it stays in
// L1/L2). Each lane keeps four partial sums; the warp adds them with shuffles, and lane 0 writes y[row].
// Rows whose length is not a multiple of 4 take a scalar path.

#define GV_THREADS 256
#define GV_WARPS (GV_THREADS / 32)
#define GV_UNROLL 4

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

__global__ void __launch_bounds__(GV_THREADS)
    gemv_f32(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int warps = gridDim.x * GV_WARPS;
  for (int row = blockIdx.x * GV_WARPS + (threadIdx.x >> 5); row < rows; row += warps) {
    const float* __restrict__ a = A + (size_t)row * cols;
    float acc[GV_UNROLL];
#pragma unroll
    for (int u = 0; u < GV_UNROLL; ++u) acc[u] = 0.0f;
    if ((cols & 3) == 0) {
      const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
      const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
      const int n4 = cols >> 2;
      int c = lane;
      for (; c + (GV_UNROLL - 1) * 32 < n4; c += GV_UNROLL * 32) {
        float4 av[GV_UNROLL];
        float4 xv[GV_UNROLL];
#pragma unroll
        for (int u = 0; u < GV_UNROLL; ++u) av[u] = __ldcs(a4 + c + u * 32);
#pragma unroll
        for (int u = 0; u < GV_UNROLL; ++u) xv[u] = __ldg(x4 + c + u * 32);
#pragma unroll
        for (int u = 0; u < GV_UNROLL; ++u) acc[u] += dot4(av[u], xv[u]);
      }
      for (; c < n4; c += 32) acc[0] += dot4(__ldcs(a4 + c), __ldg(x4 + c));
    } else {
      for (int c = lane; c < cols; c += 32) acc[0] += a[c] * __ldg(x + c);
    }
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < GV_UNROLL; ++u) s += acc[u];
    s = warp_sum(s);
    if (lane == 0) y[row] = s;
  }
}
