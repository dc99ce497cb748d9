// Softmax of every row, first attempt: each thread owns one row and walks it three times.
__global__ void softmax_row_per_thread(const float *in, float *out, int n_rows, int n_cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n_rows) {
        const float *row = in + r * n_cols;
        float *dst = out + r * n_cols;
        float mx = row[0];
        for (int j = 1; j < n_cols; j++)
            if (row[j] > mx)
                mx = row[j];
        float s = 0.f;
        for (int j = 0; j < n_cols; j++)
            s += expf(row[j] - mx);
        for (int j = 0; j < n_cols; j++)
            dst[j] = expf(row[j] - mx) / s;
    }
}
