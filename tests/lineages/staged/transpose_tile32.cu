#include <cuda_runtime.h>

// out = in^T for a rows x cols row-major matrix, one element per thread.
__global__ void transpose(float* out, const float* in, int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols && y < rows) {
    tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  }
  __syncthreads();
  x = blockIdx.x * blockDim.x + threadIdx.y;
  y = blockIdx.y * blockDim.y + threadIdx.x;
  if (x < cols && y < rows) {
    out[x * rows + y] = tile[threadIdx.x][threadIdx.y];
  }
}

void run(float* out, const float* in, int rows, int cols) {
  dim3 block(32, 32);
  dim3 grid((cols + 31) / 32, (rows + 31) / 32);
  transpose<<<grid, block>>>(out, in, rows, cols);
}
