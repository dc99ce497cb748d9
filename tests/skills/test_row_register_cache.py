"""The row-register-cache card (skills/row-register-cache/): recogniser, rewrite, exactness of the fallback, GPU.

The card's fixtures run through tests/skills/test_cards.py and tests/metamorphic like every card's; here: what the
recogniser reads from the naive suites' block-row kernels and from the row-cooperative rewrite's output, why each
near miss is refused, that every cache size compiles, that a row too long for the cache runs the original passes,
and (on a GPU) that the gate finds the rewrite of the suites' kernels correct.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library

FOLDER = BUILTIN_CARDS / "row-register-cache"
FIXTURES = FOLDER / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
_lib = builtin_library()
_card = _lib.get("row-register-cache")
assert _card is not None and _card.rules is not None, "the row-register-cache card did not load"
rr = _card.rules
rc = _lib.get("row-cooperative-reduction").rules

# Block-row kernels of the suites and what each keeps in registers.
SUITE_KERNELS = {
    "bench/suite/layernorm/naive.cu": "`x[row * cols + c]`",
    "bench/suite/rmsnorm/naive.cu": "`x[row * cols + c]`",
    "bench/suite/softmax/naive.cu": "`x[row * cols + c]`",
    "bench/suite_ood/softmax/block_row_while.cu": "`x[j]`",
    "bench/suite_ood/rmsnorm_residual/half_block_row.cu": "`h_out[row * n + i]`",
    "bench/suite_ood/layernorm/block_strided_index.cu": "`xr[i]`",
    "bench/suite_ood/batched_gemv_bias/block_row_relu.cu": "nothing (one pass, unrolled)",
}
# Thread-per-row kernels: the row-cooperative rewrite first, then this card on its output.
COMPOSED = {
    "bench/suite_ood/softmax/online_macro_cols.cu": "`x[i * COLS + c]`",
    "bench/suite_ood/layernorm/row_per_thread.cu": "`x[row * cols + c]`",
    "bench/suite_ood/masked_softmax/row_per_thread_mask.cu": "`mask[row * cols + c]`, `scores[row * cols + c]`",
    # Welford's statistics pass and the normalising pass read `input` alike: the second reads the registers.
    "bench/suite_ood/layernorm/welford_stats.cu": "`input[off + k]`",
}


def _kernel(path: Path | None = None, text: bytes | None = None):
    model = analyze_text(text if text is not None else path.read_bytes(), str(path or "k.cu"))
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
    return model, fn


def test_card_loads_from_its_folder() -> None:
    assert _card.has_rewrite and _card.path.endswith("row-register-cache/card.md")


@pytest.mark.parametrize("rel", sorted(SUITE_KERNELS))
def test_recognises_the_suites_block_row_kernels(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    found, why = rr.recognise(model, fn)
    assert found is not None, why
    assert found.summary == SUITE_KERNELS[rel]


@pytest.mark.parametrize("rel", sorted(COMPOSED))
def test_recognises_the_row_cooperative_output(rel: str) -> None:
    model, fn = _kernel(ROOT / rel)
    out = rc.rewrite_source(model, fn.name, rc.Mapping("block", threads=512))
    assert out is not None
    m2, f2 = _kernel(text=out)
    found, why = rr.recognise(m2, f2)
    assert found is not None, why
    assert found.summary == COMPOSED[rel]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("neg_*.cu")), ids=lambda p: p.name)
def test_near_misses_say_why(path: Path) -> None:
    model, fn = _kernel(path)
    found, why = rr.recognise(model, fn)
    assert found is None and why
    lines = path.read_text().splitlines()
    assert lines[0].startswith("// near miss:"), "each near miss says what it tests"
    expected = next(ln for ln in lines if ln.startswith("// expect:")).split("expect:", 1)[1].strip()
    assert expected in why, why


def test_cached_array_written_by_the_kernel_is_not_cached() -> None:
    src = b"""
__global__ void k(float *x, float *y, int cols) {
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[blockIdx.x * cols + c];
  x[blockIdx.x] = s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = x[blockIdx.x * cols + c] / s;
}
"""
    model, fn = _kernel(text=src)
    found, why = rr.recognise(model, fn)
    assert found is None and "written" in why


def test_every_cache_size_compiles() -> None:
    sources = []
    files = sorted(p for p in FIXTURES.glob("pos_*.cu") if not p.name.endswith(".expected.cu"))
    files += [ROOT / rel for rel in SUITE_KERNELS]
    for path in files:
        model, fn = _kernel(path)
        found, _ = rr.recognise(model, fn)
        assert found is not None, path.name
        for k in (*rr.PER_LANE_CHOICES, rr.AUTO):
            out = rr.rewrite_source(model, fn.name, k)
            if not rr.tiers(found, k):
                assert out is None, (path.name, k)  # over the register budget: no rewrite
                continue
            assert out is not None, (path.name, k)
            sources.append(out)
    results = compile_many(sources)
    bad = [log for ok, log in results if not ok]
    assert not bad, bad[0]


def test_rewrite_keeps_the_original_passes_for_rows_that_do_not_fit() -> None:
    model, fn = _kernel(ROOT / "bench/suite/softmax/naive.cu")
    out = rr.rewrite_source(model, fn.name, 16)
    assert out is not None
    text = out.decode()
    assert (
        "const bool ww_fit = (long long)(tid) + (long long)16 * (long long)(blockDim.x) >= (long long)(cols);" in text
    )
    # Each of the three passes: the unrolled form under ww_fit, the original loop otherwise.
    assert text.count("if (ww_fit) {") == 3
    assert text.count("} else for (int c = tid; c < cols; c += blockDim.x)") == 3
    assert text.count("(ww_row0[ww_k] = x[row * cols + c])") == 1 and text.count("ww_row0[ww_k]") == 3
    m2, f2 = _kernel(text=out)
    again, why = rr.recognise(m2, f2)
    assert again is None and "already" in why


def test_the_automatic_size_takes_the_fewest_registers_that_hold_the_row() -> None:
    model, fn = _kernel(ROOT / "bench/suite/softmax/naive.cu")
    out = rr.rewrite_source(model, fn.name)  # the default: the quick fix's `per_lane: auto`
    assert out is not None
    text = out.decode()
    fit = "(long long)(tid) + (long long){} * (long long)(blockDim.x) >= (long long)(cols) ? {}"
    choice = " : ".join(fit.format(k, k) for k in (8, 16, 32)) + " : 0;"
    assert f"const int ww_fit = {choice}" in text and "float ww_row0[32];" in text
    # Each of the three passes: one unrolled form per size, the original loop for a row longer than 32 per lane.
    for k in (8, 16, 32):
        assert text.count(f"if (ww_fit == {k}) {{") == 3 and text.count(f"ww_k < {k}; ++ww_k") == 3
    assert text.count("} else for (int c = tid; c < cols; c += blockDim.x)") == 3
    assert "if (ww_fit) {" not in text
    m2, f2 = _kernel(text=out)
    again, why = rr.recognise(m2, f2)
    assert again is None and "already" in why


def test_the_automatic_size_leaves_out_sizes_over_its_budget() -> None:
    src = b"""
__global__ void k(const float *a, const double *b, float *y, int n) {
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += a[blockIdx.x * n + i] + b[blockIdx.x * n + i];
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[blockIdx.x * n + i] = (float)(a[blockIdx.x * n + i] * b[blockIdx.x * n + i] - s);
}
"""
    model, fn = _kernel(text=src)
    found, _ = rr.recognise(model, fn)
    assert found is not None and found.registers_per_element == 3
    # At most 32 registers of cache: 8 elements (24 registers), not 16 (48), though a fixed 16 fits the budget of 64.
    assert rr.tiers(found, rr.AUTO) == (8,) and rr.tiers(found, 16) == (16,) and rr.tiers(found, "many") == ()
    out = rr.rewrite_source(model, fn.name)
    assert out is not None and b"double ww_row1[8];" in out and b"ww_fit == 16" not in out


def test_rows_read_as_vectors_keep_vectors_in_registers() -> None:
    """After scalar-global-access has made the passes read float4 (`reinterpret_cast<const float4*>(x + off)[c]`),
    the cache holds float4 elements, four registers each: the automatic choice (at most 32 registers) takes 8."""
    from warpwise.skills.engine import compute_fix, match_file, merge_fixes
    from warpwise.skills.rewrite import apply_edits

    model, _ = _kernel(ROOT / "bench/suite/softmax/naive.cu")
    fixes = [compute_fix(model, m) for m in match_file(model, enabled={"scalar-global-access"})]
    vec = apply_edits(model.text, merge_fixes([f for f in fixes if f is not None]))
    m2, f2 = _kernel(text=vec)
    found, why = rr.recognise(m2, f2)
    assert found is not None, why
    assert found.summary == "`reinterpret_cast<const float4*>(x + row * cols)[c]`"
    assert found.registers_per_element == 4 and rr.tiers(found, rr.AUTO) == (8,) and rr.tiers(found, 16) == (16,)
    out = rr.rewrite_source(m2, f2.name)
    assert out is not None and b"float4 ww_row0[8];" in out and b"if (ww_fit == 8) {" in out
    assert b"const float4 x_v = (ww_row0[ww_k] = reinterpret_cast<const float4*>(x + row * cols)[c]);" in out
    ok, log = compile_many([out])[0]
    assert ok, log


@pytest.mark.parametrize(
    ("ty", "regs"),
    [
        ("float", 1),
        ("__half", 1),
        ("double", 2),
        ("float4", 4),
        ("double2", 4),
        ("half2", 1),
        ("__half2", 1),
        ("int2", 2),
        ("uchar4", 1),
        ("long long", 2),
        ("__nv_bfloat162", 1),
        ("float3", 3),
    ],
)
def test_registers_of_an_element(ty: str, regs: int) -> None:
    assert rr._registers(ty) == regs


def test_register_budget_limits_the_cache() -> None:
    model, fn = _kernel(FIXTURES / "pos_warp_lanes_masked.cu")
    found, _ = rr.recognise(model, fn)
    assert found is not None and found.registers_per_element == 1
    assert rr.fits(found, 32) and not rr.fits(found, 128)


GPU_CASES = [
    ("bench/suite/layernorm/naive.cu", "layernorm_naive", 32),
    ("bench/suite_ood/softmax/block_row_while.cu", "softmax_block_row", 16),
    ("bench/suite_ood/rmsnorm_residual/half_block_row.cu", "rmsnorm_residual_f16", 16),
    ("bench/suite/softmax/naive.cu", "softmax_naive", "auto"),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("rel", "kernel", "k"), GPU_CASES, ids=[f"{c[1]}-{c[2]}" for c in GPU_CASES])
def test_gate_finds_the_rewrite_correct(rel: str, kernel: str, k: int | str) -> None:
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    model = analyze_text(original.encode(), str(path))
    cand = rr.rewrite_source(model, kernel, k)
    assert cand is not None
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, kernel, cand.decode(), str(path), None),
            Options(seeds=(0, 1, 2), time_limit_s=60.0),
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)


def test_a_block_of_1024_threads_leaves_no_room_for_a_large_cache() -> None:
    model, fn = _kernel(FIXTURES / "pos_warp_lanes_masked.cu")
    found, _ = rr.recognise(model, fn)
    assert found is not None
    assert rr.fits_block(found, 16, 1024) and not rr.fits_block(found, 64, 1024) and rr.fits_block(found, 64, 256)


def test_a_while_pass_in_its_own_block_shares_the_registers_of_the_sequence() -> None:
    src = b"""
__global__ void k(const float *x, float *y, int cols) {
  float m = -3.0e38f;
  {
    int c = threadIdx.x;
    while (c < cols) {
      m = fmaxf(m, x[blockIdx.x * cols + c]);
      c += blockDim.x;
    }
  }
  {
    int c = threadIdx.x;
    while (c < cols) {
      y[blockIdx.x * cols + c] = x[blockIdx.x * cols + c] - m;
      c += blockDim.x;
    }
  }
}
"""
    model, fn = _kernel(text=src)
    out = rr.rewrite_source(model, fn.name, 8)
    assert out is not None
    text = out.decode()
    # The cache is declared before the first block, so the second block's pass sees it.
    assert text.index("float ww_row0[8];") < text.index("  {\n    int c = threadIdx.x;")
    assert "y[blockIdx.x * cols + c] = ww_row0[ww_k] - m;" in text
    ok, log = compile_many([out])[0]
    assert ok, log


COMPOSED_GPU = [
    # Welford's statistics per lane, Chan's combine, then the normalising pass from registers (issue 19, s9).
    ("bench/suite_ood/layernorm/welford_stats.cu", "layernorm_welford", 256),
    ("bench/suite_ood/softmax/online_macro_cols.cu", "softmax_online", 128),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("rel", "kernel", "threads"), COMPOSED_GPU, ids=[c[1] for c in COMPOSED_GPU])
def test_gate_finds_the_composed_rewrite_correct(rel: str, kernel: str, threads: int) -> None:
    """The search's composed action: a row-cooperative block per row, then the row in registers (automatic size)."""
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    mapping = rc.Mapping("block", threads=threads)
    coop = rc.rewrite_source(analyze_text(original.encode(), str(path)), kernel, mapping)
    assert coop is not None
    cand = rr.rewrite_source(analyze_text(coop, str(path)), kernel)
    assert cand is not None and b"ww_fit ==" in cand
    spec = changed_problem_spec(str(path), original, kernel, rc.launch_changes(mapping))
    assert spec is not None
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, kernel, cand.decode(), str(path), None, spec=spec),
            Options(seeds=(0, 1, 2), time_limit_s=60.0),
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)
