// Sum of n float32 values into out[0]: the expert kernel of the reduce_sum lineage.
//
// A persistent grid (a few blocks per multiprocessor) streams x with 16-byte loads, SUM_UNROLL independent loads
// in flight per thread, accumulating into separate registers; each warp reduces with shuffles, the block combines
// its warp sums through shared memory, and one thread per block adds the block's sum to out[0] atomically (out
// must hold 0 on entry: the problem file declares it `inout`).

#define SUM_THREADS 256
#define SUM_WARPS (SUM_THREADS / 32)
#define SUM_UNROLL 4

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__global__ void __launch_bounds__(SUM_THREADS) sum_f32(const float* __restrict__ x, float* __restrict__ out, int n) {
  const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
  const int n4 = n >> 2;
  const int stride = gridDim.x * SUM_THREADS;
  const int first = blockIdx.x * SUM_THREADS + threadIdx.x;

  float acc[SUM_UNROLL];
#pragma unroll
  for (int u = 0; u < SUM_UNROLL; ++u) acc[u] = 0.0f;

  // Main loop: SUM_UNROLL independent 16-byte loads are issued before any of them is used.
  int i = first;
  for (; i + (SUM_UNROLL - 1) * stride < n4; i += SUM_UNROLL * stride) {
    float4 v[SUM_UNROLL];
#pragma unroll
    for (int u = 0; u < SUM_UNROLL; ++u) v[u] = x4[i + u * stride];
#pragma unroll
    for (int u = 0; u < SUM_UNROLL; ++u) acc[u] += sum4(v[u]);
  }
  for (; i < n4; i += stride) acc[0] += sum4(x4[i]);
  // The last n % 4 values, one per thread of the first block.
  if (first < (n & 3)) acc[0] += x[(n4 << 2) + first];

  float s = 0.0f;
#pragma unroll
  for (int u = 0; u < SUM_UNROLL; ++u) s += acc[u];
  s = warp_sum(s);

  __shared__ float warp_sums[SUM_WARPS];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < SUM_WARPS ? warp_sums[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) atomicAdd(out, s);
  }
}
