// Fused residual add + RMSNorm: the residual stream is updated in place, then normalised into y.
__global__ void add_rmsnorm(const float *x, float *residual, const float *weight, float *y,
                            int tokens, int hidden, float eps)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens) return;
    float ss = 0.0f;
    for (int i = 0; i < hidden; i++) {
        float h = residual[t * hidden + i] + x[t * hidden + i];
        residual[t * hidden + i] = h;
        ss += h * h;
    }
    float scale = rsqrtf(ss / hidden + eps);
    for (int i = 0; i < hidden; i++)
        y[t * hidden + i] = residual[t * hidden + i] * scale * weight[i];
}
