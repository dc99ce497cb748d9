// Naive layer normalization: one block per row, three passes over the row in device memory (mean, variance,
// write), scalar loads, and a shared-memory tree with a barrier per level for each reduction.

#define BLOCK 256

__global__ void layernorm_naive(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols,
                                float eps) {
  __shared__ float buf[BLOCK];
  int row = blockIdx.x;
  int tid = threadIdx.x;
  if (row >= rows) return;

  float sum = 0.0f;
  for (int c = tid; c < cols; c += blockDim.x) sum += x[row * cols + c];
  buf[tid] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    __syncthreads();
  }
  float mean = buf[0] / cols;
  __syncthreads();

  float sq = 0.0f;
  for (int c = tid; c < cols; c += blockDim.x) {
    float d = x[row * cols + c] - mean;
    sq += d * d;
  }
  buf[tid] = sq;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    __syncthreads();
  }
  float var = buf[0] / cols;

  for (int c = tid; c < cols; c += blockDim.x) {
    y[row * cols + c] = (x[row * cols + c] - mean) / sqrtf(var + eps) * gamma[c] + beta[c];
  }
}
