#include <cuda_fp16.h>

// Half-precision GEMM, float accumulation, one thread per output.
__global__ void hgemm_nn(const __half *A, const __half *B, __half *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
        C[row * N + col] = __float2half(acc);
    }
}
