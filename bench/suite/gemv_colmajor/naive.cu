// Naive y = A x for a rows x cols matrix A stored column-major (element (i, j) at A[j * rows + i]): one thread
// per output row, walking the columns. The accesses happen to be coalesced, but there are only `rows` threads,
// each with a long chain of dependent adds and one load in flight at a time.

__global__ void gemv_colmajor_naive(const float* A, const float* x, float* y, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) {
    float sum = 0.0f;
    for (int j = 0; j < cols; ++j) sum += A[j * rows + i] * x[j];
    y[i] = sum;
  }
}
