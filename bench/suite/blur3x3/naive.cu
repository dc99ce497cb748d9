// Naive 3x3 Gaussian blur ([1 2 1] x [1 2 1] / 16) with clamped edges: one output pixel per thread, nine scalar
// loads from device memory, the weights computed in the loop.

__global__ void blur3x3_naive(const float* in, float* out, int height, int width) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  float sum = 0.0f;
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      int yy = min(max(y + dy, 0), height - 1);
      int xx = min(max(x + dx, 0), width - 1);
      float weight = (dx == 0 ? 2.0f : 1.0f) * (dy == 0 ? 2.0f : 1.0f);
      sum += weight * in[yy * width + xx];
    }
  }
  out[y * width + x] = sum / 16.0f;
}
