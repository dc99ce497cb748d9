// Naive row softmax: one block per row, three passes over the row in device memory (max, sum of exponentials,
// write), scalar loads, and a shared-memory tree with a barrier per level for each reduction.

#define BLOCK 256

__global__ void softmax_naive(const float* x, float* y, int rows, int cols) {
  __shared__ float buf[BLOCK];
  int row = blockIdx.x;
  int tid = threadIdx.x;
  if (row >= rows) return;

  float m = -3.402823466e+38f;  // -FLT_MAX
  for (int c = tid; c < cols; c += blockDim.x) m = fmaxf(m, x[row * cols + c]);
  buf[tid] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] = fmaxf(buf[tid], buf[tid + s]);
    __syncthreads();
  }
  float row_max = buf[0];
  __syncthreads();

  float sum = 0.0f;
  for (int c = tid; c < cols; c += blockDim.x) sum += expf(x[row * cols + c] - row_max);
  buf[tid] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    __syncthreads();
  }
  float total = buf[0];

  for (int c = tid; c < cols; c += blockDim.x) y[row * cols + c] = expf(x[row * cols + c] - row_max) / total;
}
