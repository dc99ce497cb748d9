// Online softmax (one read pass for max and sum together), one thread per row; rows are COLS long.
#define COLS 2048

__global__ void softmax_online(float* __restrict__ y, const float* __restrict__ x, unsigned rows)
{
    unsigned i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= rows) return;
    float m = -3.0e38f, d = 0.0f;
    for (unsigned c = 0; c < COLS; ++c) {
        float v = x[i * COLS + c];
        float m2 = fmaxf(m, v);
        d = d * expf(m - m2) + expf(v - m2);
        m = m2;
    }
    for (unsigned c = 0; c < COLS; ++c)
        y[i * COLS + c] = expf(x[i * COLS + c] - m) / d;
}
