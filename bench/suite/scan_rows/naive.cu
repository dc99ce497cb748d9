// Naive inclusive prefix sum along each row of a rows x cols matrix: one thread per row, walking it in order (the
// threads of a warp read addresses a whole row apart).

__global__ void scan_rows_naive(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) {
    sum += x[row * cols + c];
    y[row * cols + c] = sum;
  }
}
