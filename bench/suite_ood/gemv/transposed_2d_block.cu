// Transposed GEMV: y[m] = sum_k A[k][m] * x[k]; A is K x M, row-major.
__global__ void gemv_t(const float *A, const float *x, float *y, int K, int M)
{
    int col = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    if (col >= M) return;
    float sum = 0;
    for (int k = 0; k < K; k++)
        sum += A[k * M + col] * x[k];
    y[col] = sum;
}
