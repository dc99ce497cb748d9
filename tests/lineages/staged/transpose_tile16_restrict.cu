// Naive transpose of a rows x cols matrix: one element per thread, read along rows (coalesced) and written along
// columns (every thread of a warp writes a different row of the output).

__global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[16][17];
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = in[r * cols + c];
  __syncthreads();
  c = blockIdx.x * blockDim.x + threadIdx.y;
  r = blockIdx.y * blockDim.y + threadIdx.x;
  if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][threadIdx.y];
}

void run(const float* in, float* out, int rows, int cols) {
  transpose_naive<<<dim3((cols + 15) / 16, (rows + 15) / 16), dim3(16, 16)>>>(in, out, rows, cols);
}
