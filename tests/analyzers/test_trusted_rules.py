"""Model-level rules that issue 18 found wrong on real code, each with the spelling that fooled it."""

from __future__ import annotations

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.findings import Severity, check_model
from warpwise.skills.engine import match_file
from warpwise.skills.library import builtin_library


def _rules(source: str, rule: str) -> list:
    return [f for f in check_model(analyze_text(source)) if f.rule == rule]


def test_contiguous_vector_accesses_are_coalesced() -> None:
    src = """
    #include <cuda_fp16.h>
    __global__ void vec4_add(const float* a, const float* b, float* c, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (4 * i < n) {
        float4 x = *reinterpret_cast<const float4*>(&a[4 * i]);
        float4 y = *reinterpret_cast<const float4*>(&b[i * 4]);
        *reinterpret_cast<float4*>(&c[4 * i]) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
      }
    }
    __global__ void half2_copy(const __half* a, __half* c) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      *(half2*)&c[2 * i] = *(const half2*)&a[2 * i];
    }
    """
    assert _rules(src, "uncoalesced-global-access") == []


def test_vectors_further_apart_than_their_width_are_still_uncoalesced() -> None:
    src = """
    __global__ void gather(const float* a, float* c) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      float4 x = *reinterpret_cast<const float4*>(&a[8 * i]);
      c[i] = x.x + a[2 * i];
    }
    """
    found = _rules(src, "uncoalesced-global-access")
    assert len(found) == 2


def test_bank_conflict_hides_accesses_a_macro_may_vectorize_and_only_offers_padding_that_helps() -> None:
    src = """
    #define FETCH_FLOAT4(p) (reinterpret_cast<float4*>(&(p))[0])
    __global__ void k(const float* in, float* out) {
      __shared__ float tile[8][256];
      tile[threadIdx.y][threadIdx.x] = in[threadIdx.x];
      __syncthreads();
      float4 v = FETCH_FLOAT4(tile[threadIdx.y][threadIdx.x * 4]);
      out[threadIdx.x] = v.x + tile[threadIdx.y][threadIdx.x * 8];
    }
    """
    (found,) = _rules(src, "shared-bank-conflict")
    assert "tile[threadIdx.y][threadIdx.x * 8]" in found.message
    assert "padding" not in found.message


def test_a_pointer_advanced_in_the_loop_is_not_loop_invariant() -> None:
    src = """
    __global__ void walk(const float* p, float* out, int stride) {
      float s = 0.0f;
      for (int k = 0; k < 8; ++k) { s += p[0]; out[k] = s; p += stride; }
    }
    """
    assert _rules(src, "global-reread-in-loop") == []
    model = analyze_text(src)
    assert [m for m in match_file(model, builtin_library(), enabled={"global-reread-in-loop"})] == []


def test_barriers_in_loops_bounded_by_the_block_size_are_not_divergent() -> None:
    src = """
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    __global__ void k(float* y) {
      cg::thread_block block = cg::this_thread_block();
      __shared__ float s[1024];
      unsigned tid = block.thread_rank();
      for (unsigned m = block.size() / 2; m > 0; m >>= 1) { if (tid < m) s[tid] += s[tid + m]; block.sync(); }
      for (int m = blockDim.x / 2; m > 0; m >>= 1) { if (tid < m) s[tid] += s[tid + m]; __syncthreads(); }
      for (unsigned m = cg::this_thread_block().num_threads() >> 1; m; m >>= 1) { __syncthreads(); }
      y[0] = s[0];
    }
    """
    model = analyze_text(src)
    assert [f for f in check_model(model) if f.rule == "divergent-syncthreads"] == []
    assert match_file(model, builtin_library(), enabled={"divergent-syncthreads"}) == []


def test_an_error_is_only_a_barrier_under_a_thread_dependent_condition() -> None:
    src = """
    __global__ void k(const float* x, float* y, int n) {
      __shared__ float s[256];
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i >= n) return;
      s[threadIdx.x] = x[i];
      __syncthreads();
      if (threadIdx.x < 32) { __syncthreads(); }
      y[i] = s[0];
    }
    """
    model = analyze_text(src)
    matches = match_file(model, builtin_library(), enabled={"divergent-syncthreads"})
    by_kind = {m.region.key.split(":")[0]: m.severity for m in matches}
    assert by_kind == {"return": Severity.WARNING, "sync": Severity.ERROR}
    warp_rank = """
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    __global__ void k(float* y) {
      auto tile = cg::tiled_partition<32>(cg::this_thread_block());
      if (tile.meta_group_rank() == 0) { __syncthreads(); }
      y[0] = 1.0f;
    }
    """
    (m,) = match_file(analyze_text(warp_rank), builtin_library(), enabled={"divergent-syncthreads"})
    assert m.severity is Severity.ERROR
