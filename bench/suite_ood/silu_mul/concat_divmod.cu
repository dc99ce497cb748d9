// SwiGLU activation: the first half of each row is the gate, the second half the value.
__global__ void silu_and_mul(const float *in, float *out, int tokens, int H)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < tokens * H) {
        int t = i / H;
        int f = i % H;
        float g = in[t * 2 * H + f];
        float u = in[t * 2 * H + H + f];
        out[i] = g / (1.0f + expf(-g)) * u;
    }
}
