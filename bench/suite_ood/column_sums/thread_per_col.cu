// Column sums: thread c adds up column c.
__global__ void col_sum(const float *a, float *sums, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; r++)
            s += a[r * cols + c];
        sums[c] = s;
    }
}
