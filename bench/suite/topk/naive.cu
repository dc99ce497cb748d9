// Naive top-k (k = TOPK) of each row of a rows x cols matrix, without sorting: one thread per row keeps the k
// largest values seen so far in a descending array and inserts each new candidate by shifting (the array has
// run-time indices, so it lives in local memory). Outputs the values and their column indices, largest first.

#define TOPK 8

__global__ void topk_naive(const float* x, float* values, int* indices, int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float best[TOPK];
  int where[TOPK];
  for (int j = 0; j < TOPK; ++j) {
    best[j] = -3.402823466e+38f;  // -FLT_MAX
    where[j] = -1;
  }
  for (int c = 0; c < cols; ++c) {
    float v = x[row * cols + c];
    if (v > best[TOPK - 1]) {
      int j = TOPK - 1;
      while (j > 0 && best[j - 1] < v) {
        best[j] = best[j - 1];
        where[j] = where[j - 1];
        --j;
      }
      best[j] = v;
      where[j] = c;
    }
  }
  for (int j = 0; j < TOPK; ++j) {
    values[row * TOPK + j] = best[j];
    indices[row * TOPK + j] = where[j];
  }
}
