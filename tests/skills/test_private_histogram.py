"""The block-private histogram transformation of the per-thread-global-atomics card (the search's variants).

The card's own fixtures and default fix are tested by tests/skills/test_cards.py; here: what
`recognise_histogram` reads from each style (byte bins, signed remainders, bins clamped to a run-time count, early
returns, grid-stride loops, typedef'd counters), why near misses are refused, that both forms compile for every
style, the search's variants, and (on a GPU) that the gate finds the rewrites of the OOD suite's histograms
correct.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.skills.library import builtin_library

ROOT = Path(__file__).resolve().parents[2]
_card = builtin_library().get("per-thread-global-atomics")
assert _card is not None and _card.rules is not None
rules = _card.rules

STYLES = {
    # name: (source, low, high, coarsened)
    "bytes": (
        b"""__global__ void h(const unsigned char* d, int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[d[i]], 1);
}""",
        "0",
        "255",
        True,
    ),
    "early_return_uint_typedef": (
        b"""typedef unsigned int count_t;
__global__ void h(const unsigned short* d, count_t* c, unsigned n) {
  const unsigned tid = threadIdx.x + blockDim.x * blockIdx.x;
  if (tid >= n) return;
  atomicAdd(c + (d[tid] & 63u), 1u);
}""",
        "0",
        "63",
        True,
    ),
    "signed_remainder_grid_stride": (
        b"""#define NB 1000
__global__ void h(const int* keys, unsigned int* hist, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&hist[keys[i] % NB], 1u);
}""",
        "-999",
        "999",
        False,
    ),
    "clamped_runtime_bins": (
        b"""__global__ void h(const float* x, int* bins, int n, int nbins, float lo, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int b = (int)((x[i] - lo) * scale);
    b = min(max(b, 0), nbins - 1);
    atomicAdd(&bins[b], 1);
  }
}""",
        "0",
        "(nbins - 1)",
        True,
    ),
}


def test_coarsening_is_refused_when_the_kernel_writes_more() -> None:
    model, fn = _kernel(
        b"""__global__ void h(const unsigned char* d, int* bins, int* flag, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  flag[blockIdx.x] = 1;
  if (i < n) atomicAdd(&bins[d[i]], 1);
}"""
    )
    h, why = rules.recognise_histogram(model, fn)
    assert h is not None, why
    assert h.blocks is None and "also writes `flag`" in h.why_not_coarsened
    assert rules.rewrite_source(model, fn.name, True) is None and rules.rewrite_source(model, fn.name, False)


NEAR_MISSES = {
    b"""__global__ void h(const int* k, float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&w[k[i] & 255], 1.0f);
}""": "not integer counters",
    b"""__global__ void h(const int* k, int* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[k[i]], 1);
}""": "is not known",
    b"""__global__ void h(const unsigned char* d, int* bins, int* seen, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { atomicAdd(&bins[d[i]], 1); seen[i] = bins[0]; }
}""": "outside the `atomicAdd`",
    b"""__global__ void h(const unsigned char* d, int* bins, int* cursor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) cursor[i] = atomicAdd(&bins[d[i]], 1);
}""": "not a discarded",
}


def _kernel(src: bytes) -> tuple:
    model = analyze_text(src, "h.cu")
    (fn,) = [f for f in model.functions if f.is_kernel]
    return model, fn


@pytest.mark.parametrize("name", sorted(STYLES))
def test_recogniser_reads_each_style(name: str) -> None:
    src, low, high, coarsened = STYLES[name]
    model, fn = _kernel(src)
    h, why = rules.recognise_histogram(model, fn)
    assert h is not None, why
    assert (h.low, h.high) == (low, high)
    assert (h.blocks is not None) == coarsened, h.why_not_coarsened


def test_near_misses_are_refused_with_a_reason() -> None:
    for src, reason in NEAR_MISSES.items():
        model, fn = _kernel(src)
        h, why = rules.recognise_histogram(model, fn)
        assert h is None and reason in why, why


def test_both_forms_compile_for_every_style() -> None:
    sources = []
    for src, *_ in STYLES.values():
        model, fn = _kernel(src)
        for coarsen in (False, True):
            out = rules.rewrite_source(model, fn.name, coarsen)
            h, _ = rules.recognise_histogram(model, fn)
            if coarsen and h.blocks is None:
                assert out is None
                continue
            assert out is not None and out.count(b"__syncthreads();") == 2
            sources.append(out)
    for path in sorted((ROOT / "bench").glob("suite*/histogram/*.cu")):
        model = analyze_text(path.read_bytes(), str(path))
        for fn in model.functions:
            if fn.is_kernel and rules.recognise_histogram(model, fn)[0] is not None:
                sources.append(rules.rewrite_source(model, fn.name, False))
    bad = [log for ok, log in compile_many(sources) if not ok]
    assert not bad, bad[0]


def test_search_variants() -> None:
    model, fn = _kernel(STYLES["bytes"][0])
    h, _ = rules.recognise_histogram(model, fn)
    variants = rules.search_variants([SimpleNamespace(region=SimpleNamespace(facts={"histogram": h}))])
    labels = [v[0] for v in variants]
    assert labels[0] == "private copy, launch kept"
    assert [v[2] for v in variants[1:]] == [[("grid_div", f)] for f in rules.GRID_DIVISIONS]
    model, fn = _kernel(STYLES["signed_remainder_grid_stride"][0])
    h, _ = rules.recognise_histogram(model, fn)
    variants = rules.search_variants([SimpleNamespace(region=SimpleNamespace(facts={"histogram": h}))])
    assert [v[0] for v in variants] == ["private copy, launch kept"]  # a grid-stride loop reads gridDim.x


GPU_CASES = [
    ("bench/suite_ood/histogram/float_range_bins.cu", True),
    ("bench/suite_ood/histogram/float_range_bins.cu", False),
    ("bench/suite_ood/histogram/int_keys_mod.cu", False),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("rel", "coarsen"), GPU_CASES, ids=[f"{Path(r).stem}-{c}" for r, c in GPU_CASES])
def test_gate_finds_the_private_copy_correct(rel: str, coarsen: bool) -> None:
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.launch import LaunchChange
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    model = analyze_text(original.encode(), str(path))
    (fn,) = [f for f in model.functions if f.is_kernel]
    cand = rules.rewrite_source(model, fn.name, coarsen)
    assert cand is not None
    spec = None
    if coarsen:
        changes = (LaunchChange("grid", 0, "max(1, min(value, 1024))", "grid.x = min(grid.x, 1024)"),)
        spec = changed_problem_spec(str(path), original, fn.name, changes)
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, fn.name, cand.decode(), str(path), None, spec=spec),
            Options(seeds=(0, 1), time_limit_s=60.0),
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)
