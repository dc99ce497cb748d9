// Batched matrix-vector product with bias: every batch element has its own rows x cols matrix.
__global__ void bmv_bias(const float *A, const float *v, const float *bias, float *out,
                         int batch, int rows, int cols)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * rows)
        return;
    int b = idx / rows;
    int r = idx % rows;
    const float *a = A + (long)b * rows * cols + (long)r * cols;
    const float *x = v + (long)b * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
        s += a[c] * x[c];
    out[idx] = s + bias[b * rows + r];
}
