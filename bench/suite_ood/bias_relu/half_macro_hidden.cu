#include <cuda_fp16.h>

// Bias + ReLU in float16; every row has HIDDEN features.
#define HIDDEN 4096

__global__ void bias_relu_f16(const __half *x, const __half *bias, __half *y, unsigned rows)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * HIDDEN)
        return;
    float v = __half2float(x[i]) + __half2float(bias[i % HIDDEN]);
    y[i] = __float2half(v > 0.0f ? v : 0.0f);
}
