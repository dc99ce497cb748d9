// SGEMV, no transpose: y = alpha * A * x + beta * y, A row-major with leading dimension lda.
__global__ void sgemv_alpha_beta(int M, int N, float alpha, const float *A, int lda, const float *x,
                                 float beta, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M) {
        float dot = 0.0f;
        for (int j = 0; j < N; ++j)
            dot += A[i * lda + j] * x[j];
        y[i] = alpha * dot + beta * y[i];
    }
}
