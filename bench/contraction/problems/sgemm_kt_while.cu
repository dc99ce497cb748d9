// float GEMM with A stored K x M (transposed) and B stored N x K (transposed), a while loop over k, the guard
// around the store only. A naive kernel written for the TF32 rows of issue 20: the operand stored along its
// outputs is A here (in matmul_naive it is B).
__global__ void sgemm_kt_while(const float *A, const float *B, float *C, int M, int N, int K) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  int k = 0;
  while (k < K) {
    acc += A[k * M + i] * B[j * K + k];
    k++;
  }
  if (i < M && j < N) C[i * N + j] = acc;
}
