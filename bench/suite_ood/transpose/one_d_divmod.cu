// Transpose as a flat copy: element idx = r * cols + c of the input goes to c * rows + r.
__global__ void transpose_1d(const float *src, float *dst, int rows, int cols)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t total = (size_t)rows * cols;
    if (idx < total) {
        size_t r = idx / cols;
        size_t c = idx % cols;
        dst[c * rows + r] = src[idx];
    }
}
