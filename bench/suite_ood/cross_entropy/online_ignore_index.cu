// Cross-entropy with an ignore index: rows whose label is IGNORE contribute 0.
typedef float acc_t;
#define IGNORE (-100)

__global__ void xent_online(const float *x, const long long *y, float *out, int batch, int classes)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch)
        return;
    long long label = y[b];
    if (label == IGNORE) {
        out[b] = 0.0f;
        return;
    }
    const float *row = x + (size_t)b * classes;
    acc_t m = -1e30f, s = 0.0f;
    for (int k = 0; k < classes; ++k) {
        acc_t v = row[k];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    out[b] = m + logf(s) - row[label];
}
