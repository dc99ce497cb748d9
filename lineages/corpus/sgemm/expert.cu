// C = A * B in float32 for row-major A (M x K), B (K x N) and C (M x N): the expert kernel of the sgemm lineage.
//
// Block tiling: each block computes a BM x BN tile of C, marching over K in BK-deep slices.
// Software pipeline: the slices travel from device to shared memory with cp.async, STAGES deep, so up to
// STAGES - 1 slices are in flight while the block computes on the current one; one barrier per slice.
// A is transposed on the way in (4-byte cp.async scattered into As[k][m], padded so the scatter is free of bank
// conflicts), so that the compute loop reads both operands with 16-byte shared loads.
// Register tiling: each thread accumulates an 8 x 8 block of C in registers (two 4-row by two 4-column groups, 64
// apart), so every 16 bytes read from shared memory feed 16 fused multiply-adds.
// Warp tiling: a warp spans 4 thread rows by 8 thread columns, so its A reads are 64 contiguous bytes and its B
// reads 128 contiguous bytes: one shared-memory wavefront each, with broadcast.
// Edges: out-of-range elements are zero-filled by cp.async (source size 0) and masked at the store; N % 4 != 0
// switches B loads and C stores to 4-byte accesses.
// Shared memory: STAGES * BK * (AS_LD + BN) floats = 49,920 bytes, dynamic (the launch asks for it; more than
// 48 KiB needs cudaFuncAttributeMaxDynamicSharedMemorySize, which the gate sets from the launch's smem).

// The register tile: each thread accumulates TM rows by TN columns of C; a block is TY x TX threads.
#define TM 8
#define TN 8
#define TY 16
#define TX 16
#define BM (TM * TY)
#define BN (TN * TX)
#define BK 16
#define STAGES 3
#define GEMM_THREADS (TX * TY)
#define AS_LD (BM + 4)
#define AS_STAGE (BK * AS_LD)
#define BS_STAGE (BK * BN)
// Rows and columns of one register group: 4 (one 16-byte fragment) when the tile allows.
#define GM (TM < 4 ? TM : 4)
#define GN (TN < 4 ? TN : 4)

__device__ __forceinline__ unsigned int smem_u32(const void* p) {
  return (unsigned int)__cvta_generic_to_shared(p);
}

// Copy 4 bytes global -> shared asynchronously; when `valid` is false nothing is read and zero is stored.
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 4 : 0));
}

// Copy 16 bytes global -> shared asynchronously, bypassing L1; zero-filled when `valid` is false.
__device__ __forceinline__ void cp_async16(float* dst, const float* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

__device__ __forceinline__ void cp_async_wait_pending() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
}

// Thread roles in a slice copy. A: BM x BK values, 4 bytes each, in passes of A_ROWS rows by 8 columns: copy j of
// thread t is row A_M + A_ROWS * (j / A_HALVES), column A_K + 8 * (j % A_HALVES); in a warp, 8 lanes read 32
// contiguous bytes of each of 4 rows, and the transposed 4-byte stores hit 32 distinct banks. B: BK x BN values
// in 16-byte vectors, B_ROWS rows per pass: copy j is row B_K + B_ROWS * j, columns B_N .. +3, so a warp reads up
// to 512 contiguous bytes of one row. When a tile has fewer rows than a pass, the threads past its end copy nothing.
#define A_K (threadIdx.x % 8)
#define A_M (threadIdx.x / 8)
#define A_ROWS (GEMM_THREADS / 8)
#define A_HALVES (BK / 8)
#define A_COPIES (((BM + A_ROWS - 1) / A_ROWS) * A_HALVES)
#define A_FULL (BM % A_ROWS == 0)
#define B_K (threadIdx.x / (BN / 4))
#define B_N ((threadIdx.x % (BN / 4)) * 4)
#define B_ROWS (GEMM_THREADS / (BN / 4))
#define B_COPIES ((BK + B_ROWS - 1) / B_ROWS)
#define B_FULL (BK % B_ROWS == 0)

// Issue the copies of one slice that lies wholly inside the matrices: a points at A[m0 + A_M][k0 + A_K], b at
// B[k0 + B_K][n0 + B_N].
__device__ __forceinline__ void load_slice_inside(const float* a, const float* b, float* as, float* bs, int N,
                                                  int K) {
#pragma unroll
  for (int j = 0; j < A_COPIES; ++j) {
    const int dm = A_ROWS * (j / A_HALVES);
    const int dk = 8 * (j % A_HALVES);
    if (A_FULL || A_M + dm < BM) cp_async4(as + (A_K + dk) * AS_LD + A_M + dm, a + (size_t)dm * K + dk, true);
  }
#pragma unroll
  for (int j = 0; j < B_COPIES; ++j) {
    if (B_FULL || B_K + B_ROWS * j < BK) {
      cp_async16(bs + (B_K + B_ROWS * j) * BN + B_N, b + (size_t)(B_ROWS * j) * N, true);
    }
  }
}

// Issue the copies of a slice at an edge of the matrices, element by element: out-of-range values are
// zero-filled, and B is copied in 4-byte pieces when N % 4 != 0.
__device__ __forceinline__ void load_slice_edge(const float* __restrict__ A, const float* __restrict__ B, float* as,
                                                float* bs, int M, int N, int K, int m0, int n0, int k0,
                                                bool n_vec) {
#pragma unroll
  for (int j = 0; j < A_COPIES; ++j) {
    const int m = A_M + A_ROWS * (j / A_HALVES);
    const int k = A_K + 8 * (j % A_HALVES);
    if (!A_FULL && m >= BM) continue;
    const bool ok = m0 + m < M && k0 + k < K;
    cp_async4(as + k * AS_LD + m, ok ? A + (size_t)(m0 + m) * K + (k0 + k) : A, ok);
  }
#pragma unroll
  for (int j = 0; j < B_COPIES; ++j) {
    const int k = B_K + B_ROWS * j;
    const int n = B_N;
    if (!B_FULL && k >= BK) continue;
    float* dst = bs + k * BN + n;
    if (n_vec) {
      const bool ok = k0 + k < K && n0 + n < N;
      cp_async16(dst, ok ? B + (size_t)(k0 + k) * N + (n0 + n) : B, ok);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const bool ok = k0 + k < K && n0 + n + q < N;
        cp_async4(dst + q, ok ? B + (size_t)(k0 + k) * N + (n0 + n + q) : B, ok);
      }
    }
  }
}

// Issue the copies of the K slice starting at k0 into one pipeline stage.
__device__ __forceinline__ void load_slice(const float* __restrict__ A, const float* __restrict__ B, float* as,
                                           float* bs, int M, int N, int K, int m0, int n0, int k0, bool inside) {
  if (inside && k0 + BK <= K) {
    load_slice_inside(A + (size_t)(m0 + A_M) * K + (k0 + A_K), B + (size_t)(k0 + B_K) * N + (n0 + B_N), as, bs, N,
                      K);
  } else {
    load_slice_edge(A, B, as, bs, M, N, K, m0, n0, k0, (N & 3) == 0);
  }
}

__global__ void __launch_bounds__(GEMM_THREADS, 2)
    sgemm_f32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  extern __shared__ float4 smem4[];  // float4: the 16-byte alignment the vector accesses need
  float* As = reinterpret_cast<float*>(smem4);  // STAGES x [BK][AS_LD]: A slices, transposed
  float* Bs = As + STAGES * AS_STAGE;           // STAGES x [BK][BN]: B slices

  const int m0 = blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int ty = (warp & 3) * 4 + (lane >> 3);  // thread row: rows ty*GM .. +GM-1 of each group of GM*TY rows
  const int tx = (warp >> 2) * 8 + (lane & 7);  // thread column: columns tx*GN .. +GN-1 of each group of GN*TX
  const bool n_vec = (N & 3) == 0;
  // Blocks wholly inside M and N (all of them when M and N are multiples of the tile) copy without masks.
  const bool inside = m0 + BM <= M && n0 + BN <= N && n_vec;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  const int slices = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < slices) load_slice(A, B, As + s * AS_STAGE, Bs + s * BS_STAGE, M, N, K, m0, n0, s * BK, inside);
    cp_async_commit();
  }

  int st = 0;  // stage of slice kt
  for (int kt = 0; kt < slices; ++kt) {
    // Slice kt has landed for this thread; after the barrier, for every thread. The barrier also tells that
    // every thread is done with the stage computed in the previous iteration, which is refilled next.
    cp_async_wait_pending();
    __syncthreads();
    const int next = kt + STAGES - 1;
    const int nst = st == 0 ? STAGES - 1 : st - 1;  // (kt + STAGES - 1) % STAGES
    if (next < slices) {
      load_slice(A, B, As + nst * AS_STAGE, Bs + nst * BS_STAGE, M, N, K, m0, n0, next * BK, inside);
    }
    cp_async_commit();

    const float* as = As + st * AS_STAGE;
    const float* bs = Bs + st * BS_STAGE;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM];
      float b[TN];
#pragma unroll
      for (int g = 0; g < TM / GM; ++g) {
#if TM % 4 == 0
        const float4 v = *reinterpret_cast<const float4*>(as + k * AS_LD + g * (GM * TY) + ty * 4);
        a[g * 4] = v.x;
        a[g * 4 + 1] = v.y;
        a[g * 4 + 2] = v.z;
        a[g * 4 + 3] = v.w;
#else
#pragma unroll
        for (int q = 0; q < GM; ++q) a[g * GM + q] = as[k * AS_LD + g * (GM * TY) + ty * GM + q];
#endif
      }
#pragma unroll
      for (int g = 0; g < TN / GN; ++g) {
#if TN % 4 == 0
        const float4 v = *reinterpret_cast<const float4*>(bs + k * BN + g * (GN * TX) + tx * 4);
        b[g * 4] = v.x;
        b[g * 4 + 1] = v.y;
        b[g * 4 + 2] = v.z;
        b[g * 4 + 3] = v.w;
#else
#pragma unroll
        for (int q = 0; q < GN; ++q) b[g * GN + q] = bs[k * BN + g * (GN * TX) + tx * GN + q];
#endif
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
    }
    st = st == STAGES - 1 ? 0 : st + 1;
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = m0 + (i / GM) * (GM * TY) + ty * GM + i % GM;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < TN / GN; ++h) {
      const int c = n0 + h * (GN * TX) + tx * GN;
      float* dst = C + (size_t)r * N + c;
#if TN % 4 == 0
      const float4 o = make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      if (n_vec) {
        if (c < N) *reinterpret_cast<float4*>(dst) = o;
      } else {
        if (c < N) dst[0] = o.x;
        if (c + 1 < N) dst[1] = o.y;
        if (c + 2 < N) dst[2] = o.z;
        if (c + 3 < N) dst[3] = o.w;
      }
#else
#pragma unroll
      for (int q = 0; q < GN; ++q) {
        if (c + q < N) dst[q] = acc[i][h * GN + q];
      }
#endif
    }
  }
}
