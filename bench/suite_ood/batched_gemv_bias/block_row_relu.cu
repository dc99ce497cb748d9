// Batched GEMV with a fused epilogue: y[b][r] = max(alpha * dot(A[b][r], x[b]) + bias[r], 0).
__global__ void batched_gemv_bias_relu(const float *A, const float *x, const float *bias, float *y,
                                       int R, int C, float alpha)
{
    extern __shared__ float sdata[];
    int r = blockIdx.x;
    int b = blockIdx.y;
    int tid = threadIdx.x;
    const float *row = A + ((size_t)b * R + r) * C;
    float acc = 0.0f;
    for (int c = tid; c < C; c += blockDim.x)
        acc += row[c] * x[b * C + c];
    sdata[tid] = acc;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        int index = 2 * s * tid;
        if (index < blockDim.x)
            sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0) {
        float v = alpha * sdata[0] + bias[r];
        y[b * R + r] = v > 0.0f ? v : 0.0f;
    }
}
