// Naive 256-bin histogram of n bytes, added into bins (which start at 0): one byte per thread, one global atomic
// per byte.

__global__ void histogram_naive(const unsigned char* data, int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[data[i]], 1);
}
