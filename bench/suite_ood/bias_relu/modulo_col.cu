// Bias add and ReLU, one element per thread; the bias is indexed by the column.
__global__ void bias_relu(const float *x, const float *bias, float *y, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols)
        y[i] = fmaxf(x[i] + bias[i % cols], 0.0f);
}
