// Residual add + RMSNorm with the (1 + weight) convention; HIDDEN is fixed at compile time.
#define HIDDEN 4096

__global__ void fused_add_rms_norm(const float *x, const float *r, const float *weight, float *h, float *y,
                                   int num_tokens, float eps)
{
    int tok = blockIdx.x * blockDim.x + threadIdx.x;
    while (tok < num_tokens) {
        const float *xp = x + tok * HIDDEN;
        const float *rp = r + tok * HIDDEN;
        float *hp = h + tok * HIDDEN;
        float *yp = y + tok * HIDDEN;
        for (int i = 0; i < HIDDEN; ++i)
            hp[i] = xp[i] + rp[i];
        float ss = 0.0f;
        for (int i = 0; i < HIDDEN; ++i)
            ss += hp[i] * hp[i];
        float inv = 1.0f / sqrtf(ss / HIDDEN + eps);
        for (int i = 0; i < HIDDEN; ++i)
            yp[i] = hp[i] * inv * (1.0f + weight[i]);
        tok += blockDim.x * gridDim.x;
    }
}
