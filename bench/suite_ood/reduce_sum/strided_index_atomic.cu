// Sum of an array: strided-index shared tree per block, then one atomicAdd per block.
#define BLOCK 512

__global__ void sum_strided_index(const float *in, float *total, int n)
{
    __shared__ float cache[BLOCK];
    int tid = threadIdx.x;
    int gid = blockIdx.x * BLOCK + tid;
    float v = 0.0f;
    if (gid < n)
        v = in[gid];
    cache[tid] = v;
    __syncthreads();
    for (int s = 1; s < BLOCK; s <<= 1) {
        int index = 2 * s * tid;
        if (index < BLOCK)
            cache[index] += cache[index + s];
        __syncthreads();
    }
    if (tid == 0)
        atomicAdd(total, cache[0]);
}
