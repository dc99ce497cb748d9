// Reductions: a shared-memory tree reduction and a histogram with global atomics.
#include <cuda_runtime.h>

constexpr int kBlock = 256;

// Sums `in` into one partial sum per block.
__global__ void block_sum(const float* in, float* partial, int n) {
  __shared__ float sdata[kBlock];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sdata[tid] = in[i];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = sdata[0];
}

// Counts values into 256 bins, one global atomic per element.
__global__ void histogram(const unsigned char* data, unsigned int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(&bins[data[i]], 1u);
  }
}

// Normalises each row of a 32-column tile; the barrier sits inside a thread-dependent branch (a bug).
__global__ void normalize_tile(float* x, int rows) {
  __shared__ float tile[32][32];
  int r = blockIdx.x * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = x[r * 32 + threadIdx.x];
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int c = 0; c < 32; ++c) s += tile[threadIdx.y][c];
    __syncthreads();
    tile[threadIdx.y][0] = s;
  }
  __syncthreads();
  x[r * 32 + threadIdx.x] = tile[threadIdx.y][threadIdx.x] / tile[threadIdx.x][0];
}

void run(const float* in, float* partial, const unsigned char* data, unsigned int* bins, float* x, int n) {
  block_sum<<<(n + kBlock - 1) / kBlock, kBlock>>>(in, partial, n);
  histogram<<<(n + 255) / 256, 256>>>(data, bins, n);
  normalize_tile<<<n / 1024, dim3(32, 32)>>>(x, n / 32);
}
