// h = gate * sigmoid(gate) * up, elementwise over two matrices.
__global__ void swiglu_2d(const float *gate, const float *up, float *h, int rows, int cols)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < cols && y < rows) {
        int k = y * cols + x;
        float g = gate[k];
        float sig = 1.0f / (1.0f + expf(-g));
        h[k] = g * sig * up[k];
    }
}
