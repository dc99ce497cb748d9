// bfloat16 GEMM, B stored N x K (the NT layout), operands converted to float with casts, float output.
// A naive kernel written for the tensor-core rows of bench/contraction/mma_h200.py (issue 20).
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16_t;

__global__ void bgemm_nt(const bf16_t *A, const bf16_t *B, float *C, unsigned M, unsigned N, unsigned K) {
  unsigned i = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  float s = 0.0f;
  for (unsigned k = 0; k < K; k++) s += (float)A[i * K + k] * (float)B[j * K + k];
  C[i * N + j] = s;
}
