// Transpose with the output side coalesced: consecutive threads read down a column of A.
__global__ void transpose_rect(const float *A, float *B, unsigned M, unsigned N)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N)
        B[j * M + i] = A[i * N + j];
}
