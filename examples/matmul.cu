// Matrix multiplication: a naive kernel and a shared-memory tiled one.
#include <cuda_runtime.h>

#define TILE 32

// C = A * B for row-major M x K and K x N matrices; one output per thread.
__global__ void matmul_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = acc;
  }
}

// Tiled version: each block stages TILE x TILE tiles of A and B in shared memory.
__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                             int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < K / TILE; ++t) {
    As[threadIdx.y][threadIdx.x] = A[row * K + t * TILE + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * N + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) {
      acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    }
    __syncthreads();
  }
  C[row * N + col] = acc;
}

void launch(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  dim3 block(TILE, TILE);
  dim3 grid(N / TILE, M / TILE);
  matmul_tiled<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
  dim3 nblock(16, 16);
  dim3 ngrid((M + 15) / 16, (N + 15) / 16);
  matmul_naive<<<ngrid, nblock, 0, stream>>>(A, B, C, M, N, K);
}
