// Softmax of every row: one block per row (gridDim.y rows), shared-memory trees for the max and the sum.
typedef float real;
#define THREADS 128

__global__ void softmax_block_row(const real *X, real *Y, unsigned int cols)
{
    __shared__ real red[THREADS];
    unsigned int row = blockIdx.y;
    unsigned int t = threadIdx.x;
    const real *x = X + (size_t)row * cols;
    real *y = Y + (size_t)row * cols;

    real m = -3.0e38f;
    unsigned int j = t;
    while (j < cols) {
        m = fmaxf(m, x[j]);
        j += THREADS;
    }
    red[t] = m;
    __syncthreads();
    for (unsigned int s = THREADS / 2; s > 0; s /= 2) {
        if (t < s && red[t + s] > red[t])
            red[t] = red[t + s];
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    real sum = 0;
    j = t;
    while (j < cols) {
        sum += expf(x[j] - m);
        j += THREADS;
    }
    red[t] = sum;
    __syncthreads();
    for (unsigned int s = THREADS / 2; s > 0; s /= 2) {
        if (t < s)
            red[t] += red[t + s];
        __syncthreads();
    }
    sum = red[0];

    j = t;
    while (j < cols) {
        y[j] = expf(x[j] - m) / sum;
        j += THREADS;
    }
}
