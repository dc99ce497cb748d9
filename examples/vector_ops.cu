// Elementwise kernels as a first attempt would write them.
#include <cuda_runtime.h>
#include <cstdio>

// y = a * x + y over n floats, one element per thread.
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}

// Scales each row of a row-major matrix by a per-row factor; one thread per row.
__global__ void scale_rows(const float* in, float* out, const float* factor, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (int c = 0; c < cols; ++c) {
    out[r * cols + c] = in[r * cols + c] * factor[r];
  }
}

// Normalises x by the mean stored at mean[0], in double precision by accident.
__global__ void center(float* x, const float* mean, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = (x[i] - mean[0]) * 0.5;
  }
}

int main() {
  const int n = 1 << 24;
  const int rows = 4096, cols = 4096;
  float *x, *y, *m, *f;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMalloc(&m, rows * cols * sizeof(float));
  cudaMalloc(&f, rows * sizeof(float));
  const int threads = 256;
  saxpy<<<(n + threads - 1) / threads, threads>>>(n, 2.0f, x, y);
  scale_rows<<<rows / threads, threads>>>(m, m, f, rows, cols);
  center<<<(n + threads - 1) / threads, threads>>>(x, f, n);
  cudaDeviceSynchronize();
  printf("done\n");
  cudaFree(x);
  cudaFree(y);
  cudaFree(m);
  cudaFree(f);
  return 0;
}
