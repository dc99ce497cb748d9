// LayerNorm with a block per row; the sum and the sum of squares are reduced together in shared memory.
#define BLOCK_SIZE 256

__global__ void layernorm_block(float *out, const float *in, const float *w, const float *b, int D, float eps)
{
    __shared__ float s_sum[BLOCK_SIZE];
    __shared__ float s_sq[BLOCK_SIZE];
    int tid = threadIdx.x;
    const float *xr = in + blockIdx.x * D;
    float *yr = out + blockIdx.x * D;

    float a = 0.0f, q = 0.0f;
    for (int i = tid; i < D; i += BLOCK_SIZE) {
        float v = xr[i];
        a += v;
        q += v * v;
    }
    s_sum[tid] = a;
    s_sq[tid] = q;
    __syncthreads();
    for (int s = 1; s < BLOCK_SIZE; s *= 2) {
        int index = 2 * s * tid;
        if (index < BLOCK_SIZE) {
            s_sum[index] += s_sum[index + s];
            s_sq[index] += s_sq[index + s];
        }
        __syncthreads();
    }
    float mean = s_sum[0] / D;
    float var = s_sq[0] / D - mean * mean;
    float r = rsqrtf(var + eps);
    for (int i = tid; i < D; i += BLOCK_SIZE)
        yr[i] = (xr[i] - mean) * r * w[i] + b[i];
}
