// Transpose of a rows x cols float32 matrix (out is cols x rows): the expert kernel of the transpose lineage.
//
// Each block moves one TILE x TILE tile through shared memory, so that both the reads of `in` and the writes of
// `out` are coalesced 16-byte accesses (a warp touches two full 256-byte row segments per access). The tile is
// padded by one column, which spreads the column-wise shared-memory accesses over the banks (at most 2-way
// conflicts; shared memory has ample headroom over device memory here). Every thread carries four 16-byte
// vectors, all loaded before the first is stored. Matrices whose sides are not multiples of 4 take a scalar path
// through the same padded tile.

#define TILE 64
#define TR_THREADS 256
#define TR_PASSES (TILE * TILE / 4 / TR_THREADS)

__global__ void __launch_bounds__(TR_THREADS)
    transpose_f32(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  const int r0 = blockIdx.y * TILE;
  const int c0 = blockIdx.x * TILE;
  const int t = threadIdx.x;

  if (((rows | cols) & 3) == 0) {
    // 16 threads cover one tile row with 16-byte vectors; TR_THREADS / 16 rows per pass.
    const int lc = (t & 15) * 4;
    const int lr = t >> 4;
    float4 v[TR_PASSES];
#pragma unroll
    for (int p = 0; p < TR_PASSES; ++p) {
      const int r = r0 + lr + p * (TR_THREADS / 16);
      const int c = c0 + lc;
      v[p] = (r < rows && c < cols) ? *reinterpret_cast<const float4*>(in + (size_t)r * cols + c)
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int p = 0; p < TR_PASSES; ++p) {
      float* dst = &tile[lr + p * (TR_THREADS / 16)][lc];
      dst[0] = v[p].x;
      dst[1] = v[p].y;
      dst[2] = v[p].z;
      dst[3] = v[p].w;
    }
    __syncthreads();
    // Output row j of the tile is input column c0 + j; its four values come from four consecutive tile rows.
#pragma unroll
    for (int p = 0; p < TR_PASSES; ++p) {
      const int j = lr + p * (TR_THREADS / 16);
      const int orow = c0 + j;
      const int ocol = r0 + lc;
      if (orow < cols && ocol < rows) {
        const float4 w = make_float4(tile[lc][j], tile[lc + 1][j], tile[lc + 2][j], tile[lc + 3][j]);
        *reinterpret_cast<float4*>(out + (size_t)orow * rows + ocol) = w;
      }
    }
    return;
  }

  // Scalar path: 64 consecutive threads cover one tile row.
  for (int k = t; k < TILE * TILE; k += TR_THREADS) {
    const int r = r0 + k / TILE;
    const int c = c0 + k % TILE;
    if (r < rows && c < cols) tile[k / TILE][k % TILE] = in[(size_t)r * cols + c];
  }
  __syncthreads();
  for (int k = t; k < TILE * TILE; k += TR_THREADS) {
    const int orow = c0 + k / TILE;
    const int ocol = r0 + k % TILE;
    if (orow < cols && ocol < rows) out[(size_t)orow * rows + ocol] = tile[k % TILE][k / TILE];
  }
}
