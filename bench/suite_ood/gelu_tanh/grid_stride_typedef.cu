// GELU (tanh form) over a grid-stride loop.
typedef float real_t;
#define SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_COEF 0.044715f

__global__ void gelu_grid_stride(const real_t *in, real_t *out, size_t count)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    while (i < count) {
        real_t v = in[i];
        real_t cube = v * v * v;
        real_t inner = SQRT_2_OVER_PI * (v + GELU_COEF * cube);
        out[i] = 0.5f * v * (1.0f + tanhf(inner));
        i += stride;
    }
}
