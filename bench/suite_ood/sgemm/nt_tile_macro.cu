// C = A * B^T; both A and B are row-major with K columns.
#define TILE 16

__global__ void matmul_nt(const float *A, const float *B, float *C, unsigned M, unsigned N, unsigned K)
{
    unsigned row = blockIdx.y * TILE + threadIdx.y;
    unsigned col = blockIdx.x * TILE + threadIdx.x;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; k++)
        acc += A[row * K + k] * B[col * K + k];
    C[row * N + col] = acc;
}
