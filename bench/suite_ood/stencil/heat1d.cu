// Forward-Euler step of the heat equation on n points.
__global__ void heat_step(const float *u, float *v, int n, float r)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (i == 0 || i == n - 1)
            v[i] = u[i];
        else
            v[i] = u[i] + r * (u[i - 1] - 2.0f * u[i] + u[i + 1]);
    }
}
