// Column sums with one atomic per element.
__global__ void colsum_atomic(const float *m, float *out, int nrows, int ncols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= nrows || col >= ncols)
        return;
    atomicAdd(&out[col], m[row * ncols + col]);
}
