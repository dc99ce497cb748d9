// Causal softmax of attention scores: position j of query row i is kept only when j <= i.
#define NT 256

__global__ void causal_softmax(const float *S, float *P, int L, float temperature)
{
    __shared__ float sh[NT];
    int i = blockIdx.x;
    int bh = blockIdx.y;
    int tid = threadIdx.x;
    const float *s = S + ((long)bh * L + i) * L;
    float *p = P + ((long)bh * L + i) * L;

    float m = -1e30f;
    for (int j = tid; j <= i; j += blockDim.x)
        m = fmaxf(m, s[j] / temperature);
    sh[tid] = m;
    __syncthreads();
    for (int st = 1; st < blockDim.x; st *= 2) {
        if (tid % (2 * st) == 0)
            sh[tid] = fmaxf(sh[tid], sh[tid + st]);
        __syncthreads();
    }
    m = sh[0];
    __syncthreads();

    float z = 0.0f;
    for (int j = tid; j <= i; j += blockDim.x)
        z += expf(s[j] / temperature - m);
    sh[tid] = z;
    __syncthreads();
    for (int st = 1; st < blockDim.x; st *= 2) {
        if (tid % (2 * st) == 0)
            sh[tid] += sh[tid + st];
        __syncthreads();
    }
    z = sh[0];

    for (int j = tid; j < L; j += blockDim.x)
        p[j] = (j <= i) ? expf(s[j] / temperature - m) / z : 0.0f;
}
