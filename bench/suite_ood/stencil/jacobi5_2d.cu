// Jacobi iteration for Laplace's equation on an ny x nx grid.
__global__ void jacobi_step(const float *u, float *u_new, int nx, int ny)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny)
        return;
    if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
        u_new[j * nx + i] = u[j * nx + i];
    } else {
        u_new[j * nx + i] = 0.25f * (u[j * nx + i - 1] + u[j * nx + i + 1] + u[(j - 1) * nx + i] + u[(j + 1) * nx + i]);
    }
}
