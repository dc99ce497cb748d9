// In-place bias + ReLU on a 2-D grid.
__global__ void add_bias_relu_inplace(float *x, const float *b, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= rows || col >= cols) return;
    float v = x[row * cols + col] + b[col];
    x[row * cols + col] = v > 0.0f ? v : 0.0f;
}
