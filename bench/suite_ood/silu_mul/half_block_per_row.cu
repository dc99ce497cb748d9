#include <cuda_fp16.h>

// SiLU-and-multiply in float16, one block per token; D is the intermediate size.
#define D 11008

__global__ void act_and_mul_f16(__half *out, const __half *input, int num_tokens)
{
    int token = blockIdx.x;
    if (token >= num_tokens)
        return;
    const __half *gate = input + (long)token * 2 * D;
    const __half *up = gate + D;
    __half *o = out + (long)token * D;
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
        float g = __half2float(gate[c]);
        o[c] = __float2half(g / (1.0f + expf(-g)) * __half2float(up[c]));
    }
}
