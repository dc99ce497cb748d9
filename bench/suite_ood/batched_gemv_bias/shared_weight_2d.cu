// Linear layer for a small batch: y[b][o] = bias[o] + sum_i W[o][i] * x[b][i].
__global__ void linear_small_batch(const float *x, const float *W, const float *bias, float *y,
                                   int in_features, int out_features)
{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    int b = blockIdx.y;
    if (o < out_features) {
        float acc = bias[o];
        for (int i = 0; i < in_features; i++)
            acc += W[o * in_features + i] * x[b * in_features + i];
        y[b * out_features + o] = acc;
    }
}
