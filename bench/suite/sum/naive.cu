// Naive sum of n floats into out[0] (out starts at 0): one value per thread, a shared-memory tree with
// interleaved addressing (the `tid % (2 * s)` test leaves most threads of each warp idle), and one atomic per
// block. A typical first attempt.

#define BLOCK 256

__global__ void sum_naive(const float* x, float* out, int n) {
  __shared__ float sdata[BLOCK];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) {
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, sdata[0]);
}
