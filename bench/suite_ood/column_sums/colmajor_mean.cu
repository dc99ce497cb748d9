// Column means of a column-major matrix: thread j walks column j, which is contiguous in memory.
#define IDX2C(i, j, ld) (((j) * (ld)) + (i))

__global__ void column_mean_colmajor(const float *M, float *mean, unsigned rows, unsigned cols, float alpha)
{
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols)
        return;
    float acc = 0.0f;
    for (unsigned i = 0; i < rows; i++)
        acc += M[IDX2C(i, j, rows)];
    mean[j] = alpha * acc;
}
