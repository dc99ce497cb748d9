// Naive direct 3x3 convolution, stride 1, zero padding 1, NCHW: x is N x C x H x W, w is K x C x 3 x 3, y is
// N x K x H x W. One thread per output value; every term reads its input value and its weight from device
// memory.

__global__ void conv3x3_naive(const float* x, const float* w, float* y, int N, int C, int K, int H, int W) {
  int ow = blockIdx.x * blockDim.x + threadIdx.x;
  int oh = blockIdx.y * blockDim.y + threadIdx.y;
  int n = blockIdx.z / K;
  int k = blockIdx.z % K;
  if (ow >= W || oh >= H || n >= N) return;
  float acc = 0.0f;
  for (int c = 0; c < C; ++c) {
    for (int r = 0; r < 3; ++r) {
      for (int s = 0; s < 3; ++s) {
        int ih = oh + r - 1;
        int iw = ow + s - 1;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
          acc += x[((n * C + c) * H + ih) * W + iw] * w[((k * C + c) * 3 + r) * 3 + s];
        }
      }
    }
  }
  y[((n * K + k) * H + oh) * W + ow] = acc;
}
