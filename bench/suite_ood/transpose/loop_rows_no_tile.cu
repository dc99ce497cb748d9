// Transpose without shared memory: each 32 x 8 block copies a 32 x 32 tile, 4 rows per thread.
#define TILE 32
#define ROWS 8

__global__ void transpose_loop_rows(float *odata, const float *idata, int width, int height)
{
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height)
            odata[x * height + (y + j)] = idata[(y + j) * width + x];
}
