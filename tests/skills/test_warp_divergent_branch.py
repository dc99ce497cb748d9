"""The `warp-divergent-branch` card's quick fix: only interleaved tree reductions get one, and it is the same tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.skills.cardtest import matches, rewrite_all
from warpwise.analyzers.build import analyze_text
from warpwise.skills.library import builtin_library
from warpwise.skills.model import Applicability

CARD = "warp-divergent-branch"
FIXTURES = Path(__file__).resolve().parents[2] / "skills" / CARD / "fixtures"

ODD_EVEN = b"""
__global__ void odd_even(float* a, float* b) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x & 1) {
    a[t] = sinf(a[t]);
  } else {
    b[t] = cosf(b[t]);
  }
}
"""

# The interleaved guard over a global array: not a shared-memory tree, so the finding has no quick fix.
GLOBAL_TREE = b"""
__global__ void global_tree(float* in, float* out) {
  unsigned i = 2 * threadIdx.x;
  for (unsigned s = 1; s <= blockDim.x; s *= 2) {
    if (threadIdx.x % s == 0) in[i] += in[i + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = in[0];
}
"""

# Interleaved, but the step starts at 2: element 1 is never combined, so the loop is not a full tree.
DROPS_AN_ELEMENT = b"""
__global__ void drops(const float* in, float* out) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  sdata[tid] = in[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned s = 2; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}
"""


@pytest.mark.parametrize("source", [ODD_EVEN, GLOBAL_TREE, DROPS_AN_ELEMENT], ids=["odd-even", "global", "drops"])
def test_other_divergent_branches_are_shown_without_a_fix(source: bytes) -> None:
    found = matches(CARD, source)
    assert found, "the branch still splits every warp"
    assert all(m.applicability is Applicability.DISPLAY_ONLY and not m.has_rewrite for m in found)
    assert rewrite_all(CARD, source) == source


@pytest.mark.parametrize("name", ["pos_interleaved.cu", "pos_interleaved_max_fixed.cu"])
def test_the_fix_is_the_same_tree_with_sequential_addressing(name: str) -> None:
    source = (FIXTURES / name).read_bytes()
    tree_rules = builtin_library().cards["barrier-per-step-tree-reduction"].rules
    model = analyze_text(source)
    before = [t for fn in model.functions for t in tree_rules.recognise_all(model, fn)[0]]
    after_model = analyze_text(rewrite_all(CARD, source))
    after = [t for fn in after_model.functions for t in tree_rules.recognise_all(after_model, fn)[0]]
    # The tree recogniser runs the rewritten loop for every block size: the same array, operator and sizes.
    assert [(t.array, t.op, t.blocks, t.form) for t in before] == [
        (t.array, t.op, t.blocks, "interleaved") for t in before
    ]
    assert [(t.array, t.op, t.blocks, t.form) for t in after] == [
        (t.array, t.op, t.blocks, "sequential") for t in before
    ]


SUITE_TREES = [
    "bench/suite/sum/naive.cu",
    "bench/suite_ood/masked_softmax/causal_block_interleaved.cu",
    "bench/suite_ood/reduce_sum/interleaved_partials.cu",
]
ROOT = FIXTURES.parents[2]


def test_rewrites_of_the_suites_compile_and_leave_no_interleaved_guard() -> None:
    from tests.nvcc import compile_many

    sources = [rewrite_all(CARD, (ROOT / rel).read_bytes()) for rel in SUITE_TREES]
    assert all(b"ww_s >>= 1" in s and not matches(CARD, s) for s in sources)
    bad = [log for ok, log in compile_many(sources) if not ok]
    assert not bad, bad[0]


@pytest.mark.gpu
@pytest.mark.parametrize("rel", SUITE_TREES)
def test_gate_finds_the_rewrite_correct(rel: str) -> None:
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    (kernel,) = {m.function for m in matches(CARD, original)}
    cand = rewrite_all(CARD, original.encode()).decode()
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, kernel, cand, str(path)), Options(seeds=(0, 1, 2), time_limit_s=60.0)
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)
