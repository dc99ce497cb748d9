// Inclusive prefix sum of n float32 values, in one pass: the expert kernel of the scan lineage.
//
// Single-pass scan with decoupled look-back (Merrill and Garland): the input is cut into tiles of SC_TILE
// values, and each block
//   1. takes the next tile number from a global ticket counter (tiles start in ticket order, so a block only ever
//      waits for tiles that are already running: no deadlock, whatever order the hardware starts blocks in);
//   2. loads its tile with coalesced 16-byte loads (a warp reads 512 contiguous bytes per load, all loads issued
//      first) and scans it in registers: 4 values per thread, a warp-wide shuffle scan per 128-value chunk, then
//      across the 8 warps through shared memory;
//   3. publishes its tile total ("aggregate"), then looks back over its predecessors, 32 at a time with one
//      warp, adding aggregates until it meets a predecessor that has published its inclusive prefix; then it
//      publishes its own inclusive prefix, so later tiles rarely look back more than one step;
//   4. adds its exclusive prefix and stores the tile with 16-byte stores.
// Every status is one 64-bit word (launch epoch, flag, value) written and read in a single access, so a value
// is never seen without its flag. The state lives in __device__ variables of this module: the epoch tags
// statuses with the launch that wrote them (stale ones read as "not yet"), and the last block to finish resets
// the ticket counter and advances the epoch, so nothing needs to be cleared between launches.

#define SC_THREADS 256
#define SC_WARPS (SC_THREADS / 32)
#define SC_CHUNKS 4
#define SC_TILE (SC_THREADS * 4 * SC_CHUNKS)
#define SC_WARP_SPAN (SC_TILE / SC_WARPS)
#define SC_MAX_TILES (1 << 17)
#define FLAG_AGGREGATE 1u
#define FLAG_PREFIX 2u
#define EPOCH_MASK ((1u << 30) - 1u)

__device__ unsigned long long g_status[SC_MAX_TILES];
__device__ unsigned int g_ticket;
__device__ unsigned int g_done;
__device__ unsigned int g_epoch = 1u;

__device__ __forceinline__ void publish(unsigned int tile, unsigned int epoch, unsigned int flag, float value) {
  const unsigned long long word = ((unsigned long long)epoch << 34) | ((unsigned long long)flag << 32) |
                                  (unsigned long long)__float_as_uint(value);
  *reinterpret_cast<volatile unsigned long long*>(&g_status[tile]) = word;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_inclusive_scan(float v, int lane) {
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const float u = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += u;
  }
  return v;
}

// Return the sum of every tile before `tile` (run by one whole warp; every lane returns the same value).
__device__ float look_back(unsigned int tile, unsigned int epoch, int lane) {
  float exclusive = 0.0f;
  int newest = (int)tile - 1;  // the predecessor lane 0 examines; lane i examines newest - i
  while (true) {
    const int p = newest - lane;
    unsigned long long word = 0ull;
    unsigned int flag = FLAG_PREFIX;  // lanes before tile 0 count as a prefix of 0
    do {
      if (p >= 0) {
        word = *reinterpret_cast<volatile unsigned long long*>(&g_status[p]);
        flag = (unsigned int)(word >> 34) == epoch ? (unsigned int)(word >> 32) & 3u : 0u;
      }
    } while (__any_sync(0xffffffffu, flag == 0u));
    const float value = p >= 0 ? __uint_as_float((unsigned int)word) : 0.0f;
    const unsigned int prefixes = __ballot_sync(0xffffffffu, flag == FLAG_PREFIX);
    if (prefixes != 0u) {
      // Add the aggregates newer than the closest inclusive prefix, and that prefix.
      const int closest = __ffs(prefixes) - 1;
      exclusive += warp_sum(lane <= closest ? value : 0.0f);
      return exclusive;
    }
    exclusive += warp_sum(value);
    newest -= 32;
  }
}

__global__ void __launch_bounds__(SC_THREADS) scan_f32(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ unsigned int s_tile;
  __shared__ unsigned int s_epoch;
  __shared__ float s_warp[SC_WARPS];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const unsigned int tiles = (unsigned int)((n + SC_TILE - 1) / SC_TILE);

  if (threadIdx.x == 0) {
    // The status array bounds the problem size: past it, fail loudly rather than write out of bounds.
    if (tiles > SC_MAX_TILES) __trap();
    s_epoch = *reinterpret_cast<volatile unsigned int*>(&g_epoch);
    s_tile = atomicAdd(&g_ticket, 1u);
  }
  __syncthreads();
  const unsigned int tile = s_tile;
  const unsigned int epoch = s_epoch;

  if (tile < tiles) {
    const int base = (int)tile * SC_TILE + warp * SC_WARP_SPAN + lane * 4;
    float4 v[SC_CHUNKS];
#pragma unroll
    for (int j = 0; j < SC_CHUNKS; ++j) {
      const int idx = base + j * 128;
      if (idx + 3 < n) {
        v[j] = *reinterpret_cast<const float4*>(x + idx);
      } else {
        v[j].x = idx < n ? x[idx] : 0.0f;
        v[j].y = idx + 1 < n ? x[idx + 1] : 0.0f;
        v[j].z = idx + 2 < n ? x[idx + 2] : 0.0f;
        v[j].w = idx + 3 < n ? x[idx + 3] : 0.0f;
      }
    }
    // Scan the warp's chunks in order, carrying the running total of the earlier chunks.
    float carry = 0.0f;
#pragma unroll
    for (int j = 0; j < SC_CHUNKS; ++j) {
      v[j].y += v[j].x;
      v[j].z += v[j].y;
      v[j].w += v[j].z;
      const float inclusive = warp_inclusive_scan(v[j].w, lane);
      float before = __shfl_up_sync(0xffffffffu, inclusive, 1);
      if (lane == 0) before = 0.0f;
      before += carry;
      v[j].x += before;
      v[j].y += before;
      v[j].z += before;
      v[j].w += before;
      carry += __shfl_sync(0xffffffffu, inclusive, 31);
    }
    if (lane == 0) s_warp[warp] = carry;
    __syncthreads();

    if (warp == 0) {
      const float total = lane < SC_WARPS ? s_warp[lane] : 0.0f;
      const float inclusive = warp_inclusive_scan(total, lane);
      const float aggregate = __shfl_sync(0xffffffffu, inclusive, SC_WARPS - 1);
      float before = __shfl_up_sync(0xffffffffu, inclusive, 1);
      if (lane == 0) before = 0.0f;
      float exclusive = 0.0f;
      if (tile == 0) {
        if (lane == 0) publish(tile, epoch, FLAG_PREFIX, aggregate);
      } else {
        if (lane == 0) publish(tile, epoch, FLAG_AGGREGATE, aggregate);
        exclusive = look_back(tile, epoch, lane);
        if (lane == 0) publish(tile, epoch, FLAG_PREFIX, exclusive + aggregate);
      }
      if (lane < SC_WARPS) s_warp[lane] = exclusive + before;
    }
    __syncthreads();

    const float offset = s_warp[warp];
#pragma unroll
    for (int j = 0; j < SC_CHUNKS; ++j) {
      const int idx = base + j * 128;
      const float4 o = make_float4(v[j].x + offset, v[j].y + offset, v[j].z + offset, v[j].w + offset);
      if (idx + 3 < n) {
        *reinterpret_cast<float4*>(y + idx) = o;
      } else {
        if (idx < n) y[idx] = o.x;
        if (idx + 1 < n) y[idx + 1] = o.y;
        if (idx + 2 < n) y[idx + 2] = o.z;
        if (idx + 3 < n) y[idx + 3] = o.w;
      }
    }
  }

  // The last block of the launch resets the ticket counter and advances the epoch for the next launch. Every
  // block has taken its ticket and read the epoch before it counts itself done.
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&g_done, 1u) == gridDim.x - 1u) {
      g_ticket = 0u;
      g_done = 0u;
      const unsigned int next = (epoch + 1u) & EPOCH_MASK;
      *reinterpret_cast<volatile unsigned int*>(&g_epoch) = next == 0u ? 1u : next;
      __threadfence();
    }
  }
}
