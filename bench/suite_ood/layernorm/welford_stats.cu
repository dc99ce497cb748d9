// LayerNorm forward for training: Welford statistics per row, normalised output, mean and rstd saved.
typedef float T;

__global__ void layernorm_welford(const T *input, T *output, T *mean_out, T *rstd_out, int N, int H, float eps)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < N) {
        long off = (long)n * H;
        T mean = 0, m2 = 0;
        for (int k = 0; k < H; k++) {
            T v = input[off + k];
            T delta = v - mean;
            mean += delta / (k + 1);
            m2 += delta * (v - mean);
        }
        T rstd = 1.0f / sqrtf(m2 / H + eps);
        for (int k = 0; k < H; k++)
            output[off + k] = (input[off + k] - mean) * rstd;
        mean_out[n] = mean;
        rstd_out[n] = rstd;
    }
}
