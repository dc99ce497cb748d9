// index_add_: every source row is added to the destination row named by index.
__global__ void scatter_add_rows(const float *src, const int *index, float *out, int n, int dim)
{
    int f = blockIdx.y * blockDim.x + threadIdx.x;
    int i = blockIdx.x * blockDim.y + threadIdx.y;
    if (i < n && f < dim)
        atomicAdd(&out[index[i] * dim + f], src[i * dim + f]);
}
