// Reduction with sequential addressing and the first add during the load: block b sums inputs
// [b * 512, b * 512 + 512) into partial[b].
__global__ void reduce_seq(const float *x, float *partial, int n)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * (blockDim.x * 2) + t;
    float a = i < n ? x[i] : 0.0f;
    if (i + blockDim.x < n)
        a += x[i + blockDim.x];
    s[t] = a;
    __syncthreads();
    unsigned int half = blockDim.x / 2;
    while (half > 0) {
        if (t < half)
            s[t] += s[t + half];
        __syncthreads();
        half >>= 1;
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}
