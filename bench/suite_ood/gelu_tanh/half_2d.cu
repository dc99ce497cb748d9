#include <cuda_fp16.h>

// GELU (tanh form) on a float16 activation matrix, one element per thread.
__global__ void gelu_half_2d(const __half *x, __half *y, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        float v = __half2float(x[r * cols + c]);
        float t = tanhf(0.7978845608f * (v + 0.044715f * v * v * v));
        y[r * cols + c] = __float2half(0.5f * v * (1.0f + t));
    }
}
