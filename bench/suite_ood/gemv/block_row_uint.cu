// Matrix-vector product with one block per row: threads stride the row, a shared tree adds the partials.
typedef unsigned int uint;
#define BS 256

__global__ void matvec_block_row(const float *mat, const float *vec, float *res, unsigned int cols)
{
    __shared__ float part[BS];
    uint row = blockIdx.x;
    uint lane = threadIdx.x;
    float acc = 0.0f;
    for (uint c = lane; c < cols; c += BS)
        acc += mat[row * cols + c] * vec[c];
    part[lane] = acc;
    __syncthreads();
    for (uint s = BS / 2; s > 0; s >>= 1) {
        if (lane < s)
            part[lane] += part[lane + s];
        __syncthreads();
    }
    if (lane == 0)
        res[row] = part[0];
}
