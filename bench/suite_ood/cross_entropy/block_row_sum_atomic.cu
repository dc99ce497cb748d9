// Summed cross-entropy: each block computes one row's loss and adds it to the total.
#define TPB 256

__global__ void cross_entropy_sum(const float *logits, const int *target, float *total, int vocab)
{
    __shared__ float buf[TPB];
    unsigned tid = threadIdx.x;
    const float *z = logits + (size_t)blockIdx.x * vocab;

    float m = -1e30f;
    for (int j = tid; j < vocab; j += TPB)
        m = fmaxf(m, z[j]);
    buf[tid] = m;
    __syncthreads();
    for (unsigned s = TPB / 2; s > 0; s >>= 1) {
        if (tid < s)
            buf[tid] = fmaxf(buf[tid], buf[tid + s]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads();

    float e = 0.0f;
    for (int j = tid; j < vocab; j += TPB)
        e += expf(z[j] - m);
    buf[tid] = e;
    __syncthreads();
    for (unsigned s = TPB / 2; s > 0; s >>= 1) {
        if (tid < s)
            buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        atomicAdd(total, logf(buf[0]) + m - z[target[blockIdx.x]]);
}
