#include <cuda_fp16.h>

// C = alpha * A^T * B + beta * C in half precision; A is K x M and B is K x N.
typedef __half half_t;

__global__ void hgemm_tn_ab(int M, int N, int K, float alpha, const half_t *A, const half_t *B, float beta,
                            half_t *C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M) {
        if (j < N) {
            float s = 0.0f;
            for (int k = 0; k < K; k++)
                s += __half2float(A[k * M + i]) * __half2float(B[k * N + j]);
            C[i * N + j] = __float2half(alpha * s + beta * __half2float(C[i * N + j]));
        }
    }
}
