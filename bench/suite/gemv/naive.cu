// Naive y = A x for a row-major rows x cols matrix: one thread per row (the threads of a warp read addresses a
// whole row apart, so every load touches 32 different cache lines).

__global__ void gemv_naive(const float* A, const float* x, float* y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    float sum = 0.0f;
    for (int j = 0; j < cols; ++j) sum += A[i * cols + j] * x[j];
    y[i] = sum;
  }
}
