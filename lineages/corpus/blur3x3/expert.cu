// 3x3 Gaussian blur (weights [1 2 1] x [1 2 1] / 16) of a height x width float32 image, edges clamped:
// the expert kernel of the blur3x3 lineage.
//
// Each warp owns a strip 128 columns wide (4 per lane, one 16-byte load per row) and BL_ROWS output rows tall,
// and walks down it. The filter is separable: each input row is reduced to its horizontal [1 2 1] sums once,
// with the neighbours across lanes taken from registers by warp shuffles (only lanes 0 and 31 load one extra
// value), and the last three rows of sums stay in registers, so every input value is loaded once per strip
// (plus two halo rows per BL_ROWS rows) and no shared memory is needed. Loads run ahead of use (the row loop is
// unrolled). Images whose width is not a multiple of 4 load and store the 4 columns one by one.

#define BL_ROWS 32
#define BL_WARPS 4

__device__ __forceinline__ float4 hsums(const float* __restrict__ in, int r, int c, int height, int width,
                                        bool vec, int lane) {
  r = min(max(r, 0), height - 1);
  const float* __restrict__ row = in + (size_t)r * width;
  float4 v;
  if (vec && c + 3 < width) {
    v = *reinterpret_cast<const float4*>(row + c);
  } else {
    // Columns past the edge read the edge value, which is also what the next lane's left neighbour needs.
    v.x = row[min(c, width - 1)];
    v.y = row[min(c + 1, width - 1)];
    v.z = row[min(c + 2, width - 1)];
    v.w = row[min(c + 3, width - 1)];
  }
  float left = __shfl_up_sync(0xffffffffu, v.w, 1);
  float right = __shfl_down_sync(0xffffffffu, v.x, 1);
  if (lane == 0) left = row[max(c - 1, 0)];
  if (lane == 31) right = row[min(c + 4, width - 1)];
  return make_float4(left + 2.0f * v.x + v.y, v.x + 2.0f * v.y + v.z, v.y + 2.0f * v.z + v.w,
                     v.z + 2.0f * v.w + right);
}

__global__ void __launch_bounds__(32 * BL_WARPS)
    blur3x3_f32(const float* __restrict__ in, float* __restrict__ out, int height, int width) {
  const int lane = threadIdx.x;
  const int c = (blockIdx.x * 32 + lane) * 4;
  const int r_begin = (blockIdx.y * BL_WARPS + threadIdx.y) * BL_ROWS;
  // The whole warp leaves together (the shuffles need every lane), also the lanes right of the image.
  if (r_begin >= height) return;
  const int r_end = min(r_begin + BL_ROWS, height);
  const bool vec = (width & 3) == 0;

  float4 up = hsums(in, r_begin - 1, c, height, width, vec, lane);
  float4 mid = hsums(in, r_begin, c, height, width, vec, lane);
#pragma unroll 4
  for (int r = r_begin; r < r_end; ++r) {
    const float4 down = hsums(in, r + 1, c, height, width, vec, lane);
    const float4 o = make_float4((up.x + 2.0f * mid.x + down.x) * 0.0625f, (up.y + 2.0f * mid.y + down.y) * 0.0625f,
                                 (up.z + 2.0f * mid.z + down.z) * 0.0625f, (up.w + 2.0f * mid.w + down.w) * 0.0625f);
    float* dst = out + (size_t)r * width + c;
    if (vec) {
      if (c < width) *reinterpret_cast<float4*>(dst) = o;
    } else {
      if (c < width) dst[0] = o.x;
      if (c + 1 < width) dst[1] = o.y;
      if (c + 2 < width) dst[2] = o.z;
      if (c + 3 < width) dst[3] = o.w;
    }
    up = mid;
    mid = down;
  }
}
