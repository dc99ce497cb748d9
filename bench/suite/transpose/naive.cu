// Naive transpose of a rows x cols matrix: one element per thread, read along rows (coalesced) and written along
// columns (every thread of a warp writes a different row of the output).

__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
