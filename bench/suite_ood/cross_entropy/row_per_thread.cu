// Cross-entropy per row: loss[i] = log(sum_j exp(logits[i][j])) - logits[i][label[i]].
__global__ void xent_rows(const float *logits, const int *labels, float *loss, int N, int V)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float mx = -1e30f;
        for (int j = 0; j < V; j++)
            mx = fmaxf(mx, logits[i * V + j]);
        float s = 0.0f;
        for (int j = 0; j < V; j++)
            s += expf(logits[i * V + j] - mx);
        loss[i] = logf(s) + mx - logits[i * V + labels[i]];
    }
}
