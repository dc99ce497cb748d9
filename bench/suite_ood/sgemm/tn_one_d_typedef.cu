// C = A^T * B with A stored K x M: both operands are read along their rows of K.
typedef float value_type;

__global__ void gemm_tn(const value_type *A, const value_type *B, value_type *C, int M, int N, int K)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < M * N) {
        int i = idx / N;
        int j = idx % N;
        value_type sum = 0;
        int k = 0;
        while (k < K) {
            sum += A[k * M + i] * B[k * N + j];
            k++;
        }
        C[idx] = sum;
    }
}
