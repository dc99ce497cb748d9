// 7-point Laplacian on a 3-D grid; each thread owns one (x, y) column and walks it in z.
#define AT(z, y, x) (((z) * ny + (y)) * nx + (x))

__global__ void laplacian3d(const float *f, float *lap, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    int z = 0;
    while (z < nz) {
        if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
            lap[AT(z, y, x)] = 0.0f;
        } else {
            lap[AT(z, y, x)] = f[AT(z, y, x - 1)] + f[AT(z, y, x + 1)] + f[AT(z, y - 1, x)] +
                               f[AT(z, y + 1, x)] + f[AT(z - 1, y, x)] + f[AT(z + 1, y, x)] -
                               6.0f * f[AT(z, y, x)];
        }
        z++;
    }
}
