#include <cuda_fp16.h>

// Pre-norm block of a transformer in float16: h = x + residual is kept for the next layer, y = RMSNorm(h).
#define EPS 1e-6f

__global__ void rmsnorm_residual_f16(const __half *x, const __half *residual, const __half *weight,
                                     __half *h_out, __half *y, int n)
{
    extern __shared__ float partial[];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    float acc = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) {
        __half h = __float2half(__half2float(x[row * n + i]) + __half2float(residual[row * n + i]));
        h_out[row * n + i] = h;
        float f = __half2float(h);
        acc += f * f;
    }
    partial[tid] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            partial[tid] += partial[tid + s];
        __syncthreads();
    }
    float inv = rsqrtf(partial[0] / n + EPS);
    for (int i = tid; i < n; i += blockDim.x)
        y[row * n + i] = __float2half(__half2float(h_out[row * n + i]) * inv * __half2float(weight[i]));
}
