// Key-padding softmax: row r of batch b attends to its first len[b] columns, the rest get probability 0.
typedef float scalar_t;

__global__ void padded_softmax(const scalar_t *x, const int *len, scalar_t *y, int R, int C, float temperature)
{
    int b = blockIdx.y;
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R)
        return;
    int n = len[b];
    int base = (b * R + r) * C;
    scalar_t mx = -1e30f;
    for (int c = 0; c < n; ++c)
        mx = fmaxf(mx, x[base + c] / temperature);
    scalar_t sum = 0;
    for (int c = 0; c < n; ++c)
        sum += expf(x[base + c] / temperature - mx);
    for (int c = 0; c < n; ++c)
        y[base + c] = expf(x[base + c] / temperature - mx) / sum;
    for (int c = n; c < C; ++c)
        y[base + c] = 0;
}
