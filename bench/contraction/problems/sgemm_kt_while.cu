// float GEMM with A stored K x M (transposed) and B stored N x K (transposed): unsigned indices, an index macro,
// a while loop over k and an early return. A naive kernel written for the TF32 rows of issue 20: the operand stored
// along its outputs is A here (in matmul_naive it is B).
#define IDX(r, c, ld) ((r) * (ld) + (c))

__global__ void sgemm_kt_while(const float *A, const float *B, float *C, int M, int N, int K) {
  const unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= (unsigned)M || col >= (unsigned)N) return;
  float acc = 0.f;
  unsigned k = 0;
  while (k < (unsigned)K) {
    acc += A[IDX(k, row, M)] * B[IDX(col, k, K)];
    ++k;
  }
  C[row * N + col] = acc;
}
