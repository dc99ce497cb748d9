// 256-bin histogram of n bytes, added into bins (which start at zero: the problem file declares them `inout`):
// the expert kernel of the histogram lineage.
//
// Privatization: every warp counts into its own 256-bin histogram in shared memory, so atomics collide only
// within a warp and never leave the multiprocessor; the block's copies are summed at the end and each block adds
// its 256 totals to the global bins with one atomic per non-empty bin. A persistent grid (a few blocks per
// multiprocessor) streams the bytes with 16-byte loads, two loads in flight per thread, and unpacks each 4-byte
// word with shifts. The last n % 16 bytes are counted one by one.

#define HB 256
#define H_THREADS 256
#define H_WARPS (H_THREADS / 32)

__device__ __forceinline__ void count_word(unsigned int* h, unsigned int w) {
  atomicAdd(h + (w & 0xffu), 1u);
  atomicAdd(h + ((w >> 8) & 0xffu), 1u);
  atomicAdd(h + ((w >> 16) & 0xffu), 1u);
  atomicAdd(h + (w >> 24), 1u);
}

__device__ __forceinline__ void count16(unsigned int* h, uint4 v) {
  count_word(h, v.x);
  count_word(h, v.y);
  count_word(h, v.z);
  count_word(h, v.w);
}

__global__ void __launch_bounds__(H_THREADS)
    histogram_u8(const unsigned char* __restrict__ data, int* __restrict__ bins, int n) {
  __shared__ unsigned int hist[H_WARPS][HB];
  for (int i = threadIdx.x; i < H_WARPS * HB; i += H_THREADS) (&hist[0][0])[i] = 0u;
  __syncthreads();

  unsigned int* mine = hist[threadIdx.x >> 5];
  const uint4* __restrict__ d16 = reinterpret_cast<const uint4*>(data);
  const int n16 = n >> 4;
  const int stride = gridDim.x * H_THREADS;
  const int first = blockIdx.x * H_THREADS + threadIdx.x;
  int i = first;
  for (; i + stride < n16; i += 2 * stride) {
    const uint4 a = d16[i];
    const uint4 b = d16[i + stride];
    count16(mine, a);
    count16(mine, b);
  }
  if (i < n16) count16(mine, d16[i]);
  if (first < (n & 15)) atomicAdd(mine + data[(n16 << 4) + first], 1u);
  __syncthreads();

  for (int b = threadIdx.x; b < HB; b += H_THREADS) {
    unsigned int total = 0u;
#pragma unroll
    for (int w = 0; w < H_WARPS; ++w) total += hist[w][b];
    if (total != 0u) atomicAdd(bins + b, (int)total);
  }
}
