// Matrix transpose: the naive kernel and a shared-memory tile without padding.
#include <cuda_runtime.h>

#define TILE_DIM 32
#define BLOCK_ROWS 8

// out = in^T for a rows x cols row-major matrix.
__global__ void transpose_naive(float* out, const float* in, int rows, int cols) {
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < cols && y + j < rows) {
      out[x * rows + (y + j)] = in[(y + j) * cols + x];
    }
  }
}

// Coalesced through a shared tile, but every column read of the tile hits one bank.
__global__ void transpose_tiled(float* out, const float* in, int rows, int cols) {
  __shared__ float tile[TILE_DIM][TILE_DIM];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  }
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
  }
}

void transpose(float* out, const float* in, int rows, int cols, cudaStream_t s) {
  dim3 block(TILE_DIM, BLOCK_ROWS);
  dim3 grid(cols / TILE_DIM, rows / TILE_DIM);
  transpose_naive<<<grid, block, 0, s>>>(out, in, rows, cols);
  transpose_tiled<<<grid, block, 0, s>>>(out, in, rows, cols);
}
