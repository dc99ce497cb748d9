// Naive exact (erf) GELU of n float16 values: one value per thread, 2-byte loads and stores, computed in float32.

#include <cuda_fp16.h>

__global__ void gelu_f16_naive(const __half* x, __half* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __half2float(x[i]);
    y[i] = __float2half(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
  }
}
