"""The untiled-contraction card's tensor-core rewrites (skills/rewrites/contraction_mma.py).

What can be checked without a GPU: which shapes are offered for which operands (tensor cores for half and
bfloat16, TF32 only under a problem tolerance that admits it), that every shape generates for every layout and
compiles, that the rewritten kernel keeps the user's signature, guard and epilogue, that the 16-byte copies sit
behind a runtime alignment test, and that the shared-memory layouts put the eight row addresses of every
`ldmatrix` phase (and the 32-bit fragment reads of TF32) in distinct banks. Correctness and speed on the H200 are
the gate's: bench/results/contraction_mma-2026-12-02.md.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.search.params import problem_tolerance
from warpwise.skills.library import BUILTIN_CARDS, builtin_library
from warpwise.skills.rewrites import contraction_mma as cm

_card = builtin_library().get("untiled-contraction")
assert _card is not None and _card.rules is not None
uc = _card.rules
FIXTURES = BUILTIN_CARDS / "untiled-contraction" / "fixtures"
_tc = builtin_library().get("contraction-without-tensor-cores")
assert _tc is not None and _tc.rules is not None
PORTABLE = _tc.rules.PORTABLE
ROOT = Path(__file__).resolve().parents[2]
HALF = {
    "pos_half_nn.cu": "NN",
    "pos_bf16_nt_cast.cu": "NT",
}
OOD = {
    "bench/suite_ood/hgemm/nn_float_acc.cu": ("hgemm_nn", "NN"),
    "bench/suite_ood/hgemm/tn_alpha_beta.cu": ("hgemm_tn_ab", "TN"),
    "bench/contraction/problems/bgemm_nt_cast.cu": ("bgemm_nt", "NT"),
}


def _kernel(path: Path, name: str | None = None):
    model = analyze_text(path.read_bytes(), str(path))
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL and (name is None or f.name == name))
    c, why = uc.recognise(model, fn)
    assert c is not None, why
    return model, fn, c


def _tt_half() -> bytes:
    """A half-precision TT kernel (A stored K x M, B stored N x K), written here: no fixture has one."""
    return b"""#include <cuda_fp16.h>
__global__ void hgemm_tt(const __half *A, const __half *B, float *C, int M, int N, int K) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M && j < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[k * M + i]) * __half2float(B[j * K + k]);
    C[i * N + j] = 2.0f * acc;
  }
}
"""


def test_half_operands_get_tensor_cores_first_and_float_needs_a_tolerance() -> None:
    _, _, half = _kernel(FIXTURES / "pos_half_nn.cu")
    shapes = uc.choices_for(half)
    assert [t for t in shapes[: len(cm.MMA_CHOICES)]] == list(cm.MMA_CHOICES)
    assert list(shapes[len(cm.MMA_CHOICES) :]) == list(uc.TILE_CHOICES)
    _, _, single = _kernel(FIXTURES / "pos_nn_basic.cu")
    assert uc.choices_for(single) == uc.TILE_CHOICES  # no tolerance known: no TF32
    assert uc.choices_for(single, (1e-4, 1e-3)) == uc.TILE_CHOICES  # the public SGEMM problems' tolerance
    loose = uc.choices_for(single, (2e-2, 1e-1))
    # Every TF32 shape that fits the kernel's layouts (a register-operand shape fits one orientation of two).
    assert loose[len(uc.TILE_CHOICES) :] == tuple(t for t in cm.TF32_CHOICES if not t.problems("k", "o"))
    assert any(getattr(t, "regs", False) for t in loose) and any(
        t.regs and t.problems("k", "o") for t in cm.TF32_CHOICES
    )
    assert all(t.tf32 for t in cm.TF32_CHOICES) and not any(t.tf32 for t in cm.MMA_CHOICES)


def test_problem_tolerance_is_read_literally() -> None:
    assert problem_tolerance("tolerance = (1e-2, 5e-2)\n") == (1e-2, 5e-2)
    assert problem_tolerance("x = 1\n") is None
    assert problem_tolerance("tolerance = compute()\n") is None  # not a literal: unknown
    assert problem_tolerance("def (:\n") is None  # a broken problem file is no tolerance, not a crash


def test_shape_problems() -> None:
    assert PORTABLE in cm.MMA_CHOICES and not PORTABLE.wgmma and not PORTABLE.dynamic("k", "o")
    assert all(t.problems("k", "o") == [] for t in cm.MMA_CHOICES + cm.TF32_CHOICES if not t.regs)
    assert all(t.problems("k", "o") == [] or t.problems("o", "k") == [] for t in cm.TF32_CHOICES)
    assert cm.MmaTiles(128, 128, 32, 2, 4, 4).problems("k", "o") == []  # 64 KiB: dynamic shared memory
    assert cm.MmaTiles(128, 128, 32, 2, 4, 4).dynamic("k", "o") and not PORTABLE.dynamic("k", "o")
    assert cm.MmaTiles(256, 256, 64, 4, 4, 4).problems("k", "o")  # 256 KiB: more than a block may use
    assert cm.MmaTiles(128, 128, 64, 2, 2, 4, 2).problems("k", "o")  # two blocks of 128 KiB do not fit an SM
    assert cm.MmaTiles(128, 128, 24, 2, 4, 2).problems()  # BK not a multiple of 16
    assert cm.MmaTiles(96, 128, 32, 2, 4, 2).problems()  # 96 rows are not whole swizzle rows
    assert cm.MmaTiles().problems("-", "o")  # an operand contiguous along neither side


def test_tile_arguments_round_trip() -> None:
    for t in (*cm.MMA_CHOICES, *cm.TF32_CHOICES, *uc.TILE_CHOICES):
        assert uc.tiles_of(uc.tile_args(t)) == t


def test_float_operands_never_take_half_tensor_cores_and_half_never_tf32() -> None:
    model, fn, _ = _kernel(FIXTURES / "pos_nn_basic.cu")
    assert uc.rewrite_source(model, fn.name, PORTABLE) is None
    model, fn, _ = _kernel(FIXTURES / "pos_half_nn.cu")
    assert uc.rewrite_source(model, fn.name, cm.TF32_CHOICES[0]) is None


def test_rewrite_keeps_signature_guard_and_epilogue() -> None:
    path = ROOT / "bench/suite_ood/hgemm/tn_alpha_beta.cu"
    model, fn, c = _kernel(path, "hgemm_tn_ab")
    out = uc.rewrite_source(model, fn.name, PORTABLE)
    assert out is not None
    text = out.decode()
    after = analyze_text(out)
    assert after.syntax_problems == ()
    new = next(f for f in after.functions if f.name == "hgemm_tn_ab")
    assert [(p.name, p.type) for p in new.params] == [(p.name, p.type) for p in fn.params]
    assert c.store in text and "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text  # both operands are stored [k][outer]
    assert "cp.async.cg.shared.global" in text and "cp.async.wait_group 1" in text  # three stages
    # 16-byte copies only behind the runtime test of the pointer and the leading dimension.
    assert "(reinterpret_cast<unsigned long long>(A) % 16 == 0) && (ww_a_k % 8 == 0)" in text
    assert re.search(r"if \(ww_vec_A\) \{\s+\{\s+const int ww_b = [^;]*;\s+asm volatile\(\"cp\.async", text)


def test_bfloat16_uses_bf16_mma() -> None:
    model, fn, _ = _kernel(FIXTURES / "pos_bf16_nt_cast.cu")
    out = uc.rewrite_source(model, fn.name, PORTABLE)
    assert out is not None and b".f32.bf16.bf16.f32" in out


def _sources() -> tuple[list[bytes], list[str]]:
    sources, labels = [], []
    targets = [(FIXTURES / n, None) for n in HALF] + [(ROOT / p, k) for p, (k, _) in OOD.items()]
    models = [(analyze_text(p.read_bytes(), str(p)), k) for p, k in targets]
    models.append((analyze_text(_tt_half(), "tt.cu"), "hgemm_tt"))
    for model, name in models:
        fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL and (name is None or f.name == name))
        for t in cm.MMA_CHOICES:
            out = uc.rewrite_source(model, fn.name, t)
            assert out is not None, (fn.name, t.key)
            sources.append(out)
            labels.append(f"{fn.name} {t.key}")
    for path in ("pos_nn_basic.cu", "pos_while_tt.cu"):
        model, fn, c = _kernel(FIXTURES / path)
        for t in cm.TF32_CHOICES:
            if t.regs and t.problems(c.a.layout, c.b.layout):
                continue  # a register-operand shape fits one of the two orientations (see its own test)
            out = uc.rewrite_source(model, fn.name, t)
            assert out is not None, (fn.name, t.key)
            sources.append(out)
            labels.append(f"{fn.name} {t.key}")
    return sources, labels


def test_every_layout_generates_a_parsable_kernel() -> None:
    for out, label in zip(*_sources(), strict=True):
        assert analyze_text(out).syntax_problems == (), label


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
def test_every_tensor_core_shape_compiles() -> None:
    # Every shape on NN (A k-major, B n-major) and TT (the other way round: both ldmatrix forms and both copy
    # orientations), the first shape on every other kernel, both TF32 shapes on NN: a dozen-odd nvcc runs.
    sources, labels = [], []
    seen: set[str] = set()
    for out, label in zip(*_sources(), strict=True):
        kernel, key = label.split()
        first = kernel not in seen
        seen.add(kernel)
        if kernel in ("hgemm_nn", "hgemm_tt") or first or (kernel == "sgemm_nn" and "tf32" in key):
            if kernel == "hgemm_nn" and any(lb.startswith("hgemm_nn ") and lb.endswith(key) for lb in labels):
                continue  # two fixtures are called hgemm_nn: compile one of them per shape
            sources.append(out)
            labels.append(label)
    assert len(sources) < 60
    for label, (ok, log) in zip(labels, compile_many(sources), strict=True):
        assert ok, f"{label}: {log}"


def _value(expr: str) -> int:
    """Return the value of a generated integer C expression of literals (`*`, `+`, `^`, `&`, `>>` read alike)."""
    assert re.fullmatch(r"[0-9()*+^&> ]+", expr), expr
    return int(eval(expr, {"__builtins__": {}}))


def _bank_groups(lay: cm._Layout, rows: list[int], chunk: int) -> set[int]:
    """Return the 16-byte bank groups (of 8 per 128 bytes) that one 16-byte read per row lands in."""
    out = set()
    for r in rows:
        off = _value(lay.off(str(r), str(chunk)))
        out.add((off * 2 // 16) % 8)
    return out


@pytest.mark.parametrize("t", [t for t in cm.MMA_CHOICES if not t.wgmma], ids=lambda t: t.key)
@pytest.mark.parametrize("layout", ["k", "o"])
def test_swizzled_tiles_make_every_ldmatrix_phase_conflict_free(t: cm.MmaTiles, layout: str) -> None:
    for outer in (t.bm, t.bn):
        lay = cm._layout(t, outer, layout)
        assert lay.elems == lay.rows * lay.cols  # no padding
        for r0 in range(0, lay.rows, 8):  # ldmatrix phases read 8 consecutive rows at one chunk column
            for ch in range(lay.cpr):
                assert len(_bank_groups(lay, list(range(r0, r0 + 8)), ch)) == 8, (layout, r0, ch)
        # The swizzle is a permutation of each row's chunks: every element has one place.
        for r in range(lay.rows):
            places = {_value(lay.off(str(r), str(ch))) for ch in range(lay.cpr)}
            assert places == {r * lay.cols + ch * lay.ce for ch in range(lay.cpr)}


@pytest.mark.parametrize("t", [t for t in cm.TF32_CHOICES if not t.wgmma], ids=lambda t: t.key)
@pytest.mark.parametrize("layout", ["k", "o"])
def test_padded_tf32_fragment_reads_are_conflict_free(t: cm.MmaTiles, layout: str) -> None:
    lay = cm._layout(t, t.bm, layout)
    assert (lay.pcols * 4) % 16 == 0  # rows stay 16-byte aligned for cp.async
    # A fragment register: lane (g, t4) reads row g, k t4 (k-major tile) or k t4, row g (outer-major tile).
    banks = set()
    for g in range(8):
        for t4 in range(4):
            row, col = (g, t4) if layout == "k" else (t4, g)
            banks.add((row * lay.pcols + col) % 32)
    assert len(banks) == 32


DYNAMIC = cm.MmaTiles(128, 128, 64, 2, 2, 3, 2)


def test_a_pipeline_past_48_kib_uses_dynamic_shared_memory_and_raises_the_limit_at_each_launch() -> None:
    model, fn, c = _kernel(FIXTURES / "pos_half_nn.cu")
    smem = DYNAMIC.smem_bytes(c.a.layout, c.b.layout)
    assert smem > cm.SMEM_LIMIT and uc.dynamic_smem(c, DYNAMIC) == smem and uc.dynamic_smem(c, PORTABLE) == 0
    out = uc.rewrite_source(model, fn.name, DYNAMIC)
    assert out is not None
    text = out.decode()
    assert "extern __shared__ uint4 ww_dsmem[];" in text and "__shared__ alignas(128)" not in text
    # The launch passes the bytes, and the statement before it raises the kernel's limit, at the launch's indent.
    assert (
        f"  cudaFuncSetAttribute(hgemm_nn, cudaFuncAttributeMaxDynamicSharedMemorySize, {smem});\n  hgemm_nn<<<" in text
    )
    assert re.search(rf"hgemm_nn<<<dim3\([^;]*\), dim3\(128\), {smem}>>>\(A, B, C, M, N, K\);", text)
    assert analyze_text(out).syntax_problems == ()
    # A problem file's launch gets the same bytes.
    changes = uc.launch_changes(c, fn, DYNAMIC)
    assert changes is not None and ("smem", 0, str(smem)) in [(ch.part, ch.axis, ch.python) for ch in changes]
    static = uc.launch_changes(c, fn, PORTABLE)
    assert static is not None and ("smem", 0, "0") in [(ch.part, ch.axis, ch.python) for ch in static]


def _with_launch(launch: str) -> bytes:
    src = (FIXTURES / "pos_half_nn.cu").read_bytes()
    return src.replace(b"  hgemm_nn<<<grid, block>>>(A, B, C, M, N, K);", launch.encode())


@pytest.mark.parametrize(
    ("launch", "offered"),
    [
        ("  hgemm_nn<<<grid, block, 0, 0>>>(A, B, C, M, N, K);", True),  # a literal 0 is replaced, the stream kept
        ("  hgemm_nn<<<grid, block, 1024>>>(A, B, C, M, N, K);", False),  # bytes the kernel did not use: refused
        ("  if (M > 0) hgemm_nn<<<grid, block>>>(A, B, C, M, N, K);", False),  # no statement before it to add
    ],
)
def test_dynamic_shared_memory_launch_edits_are_exact_or_refused(launch: str, offered: bool) -> None:
    data = _with_launch(launch)
    model = analyze_text(data, "launch.cu")
    out = uc.rewrite_source(model, "hgemm_nn", DYNAMIC)
    assert (out is not None) == offered
    if out is not None:
        assert re.search(r"dim3\(128\), \d+, 0>>>", out.decode())
    # The static shapes need none of this and are offered on every launch form.
    assert uc.rewrite_source(model, "hgemm_nn", PORTABLE) is not None


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
def test_dynamic_shared_memory_rewrite_with_its_host_launch_compiles() -> None:
    model, fn, _ = _kernel(FIXTURES / "pos_half_nn.cu")
    out = uc.rewrite_source(model, fn.name, DYNAMIC)
    assert out is not None
    ((ok, log),) = compile_many([out])
    assert ok, log


WGMMA = [t for t in cm.MMA_CHOICES if t.wgmma]


def _chunk_address(lay: object, row: int, chunk: int) -> int:
    return _value(lay.off(str(row), str(chunk))) * 2  # type: ignore[attr-defined]


@pytest.mark.parametrize("t", WGMMA, ids=lambda t: t.key)
def test_wgmma_tiles_are_the_128_byte_swizzle_canonical_layouts(t: cm.MmaTiles) -> None:
    # K-major: element chunk c of row r lies at r * 128 + ((c ^ (r & 7)) * 16): rows of 128 bytes, 8 rows per
    # 1024-byte swizzle period (the descriptor's stride-dimension offset), the chunk XORed by the row's low bits.
    k = cm._layout(t, t.bm, "k")
    for r in range(t.bm):
        for ch in range(8):
            assert _chunk_address(k, r, ch) == r * 128 + ((ch ^ (r & 7)) * 16)
    # MN-major: 64-element atoms of BK k rows (the leading-dimension offset BK * 128 bytes apart), each k row 128
    # bytes, chunks XORed by the k row's low bits; every byte of a stage is used once.
    mn = cm._layout(t, t.bn, "o")
    seen = set()
    for r in range(t.bk):
        for ch in range(t.bn // 8):
            addr = _chunk_address(mn, r, ch)
            assert addr == (ch // 8) * t.bk * 128 + r * 128 + (((ch % 8) ^ (r & 7)) * 16)
            seen.add(addr)
    assert len(seen) * 16 == mn.elems * 2 == t.bk * t.bn * 2
    assert t.threads == 128 * t.wm and t.dynamic("k", "o") and t.problems("k", "o") == []
    assert cm.MmaTiles(128, 128, 32, 2, 1, 3, wgmma=True).problems()  # BK must be one 128-byte row
    assert cm.MmaTiles(128, 128, 64, 2, 1, 3, tf32=True, wgmma=True).problems()  # half and bfloat16 only


def test_wgmma_kernels_are_built_for_the_architecture_specific_target() -> None:
    from warpwise.verify.worker.nvbuild import target_arch

    model, fn, _ = _kernel(FIXTURES / "pos_half_nn.cu")
    out = uc.rewrite_source(model, fn.name, WGMMA[0])
    assert out is not None
    text = out.decode()
    assert f"wgmma.mma_async.sync.aligned.m64n{WGMMA[0].bn}k16.f32.f16.f16" in text
    assert "fence.proxy.async.shared::cta" in text
    assert target_arch(text, "sm_90") == "sm_90a"
    plain = uc.rewrite_source(model, fn.name, PORTABLE)
    assert plain is not None and target_arch(plain.decode(), "sm_90") == "sm_90"
    assert target_arch(text, "sm_100") == "sm_100"  # only sm_90 has an `a` target that runs wgmma


@pytest.mark.parametrize("t", [t for t in cm.TF32_CHOICES if t.wgmma and not t.regs], ids=lambda t: t.key)
def test_tf32_wgmma_tiles_are_k_major_and_the_transposing_stores_conflict_free(t: cm.MmaTiles) -> None:
    for rows in (t.bm, t.bn):
        lay = cm._layout(t, rows, "o")  # K-major whatever the global layout
        for r in range(rows):
            for ch in range(8):
                assert _value(lay.off(str(r), str(ch))) * 4 == r * 128 + ((ch ^ (r & 7)) * 16)
        # One warp's 32-bit stores of a transposed 16 k x 8 output block (lane l: k row l & 15, chunk l >> 4),
        # for each of its four floats, at every unit a warp takes: 32 distinct banks.
        for unit in range(rows // 4 // (t.threads // 32)):
            for e in range(4):
                banks = set()
                for lane in range(32):
                    k = (unit & 1) * 16 + (lane & 15)
                    n = ((unit >> 1) * 2 + (lane >> 4)) * 4 + e
                    word = _value(lay.off(str(n), str(k >> 2))) + (k & 3)
                    banks.add(word % 32)
                assert len(banks) == 32, (t.key, unit, e)
    assert t.problems("o", "o") == [] and t.problems("k", "o") == []


REGS = [t for t in cm.TF32_CHOICES if t.regs]


@pytest.mark.parametrize("t", REGS, ids=lambda t: t.key)
def test_tf32_register_operand_reads_are_conflict_free_and_the_other_operand_is_k_major(t: cm.MmaTiles) -> None:
    # The shape fits the orientation whose register operand (stored along its outputs) has 64 outputs per
    # warpgroup: A when BM is 64 * wm, else B (the kernel then computes C^T = B^T A^T).
    fits = [(a, b) for a, b in (("o", "k"), ("k", "o")) if not t.problems(a, b)]
    assert fits, t.key
    assert t.problems("o", "o") and t.problems("k", "k")  # one operand in registers, the other K-major
    for a, b in fits:
        r_rows, s_rows = (t.bm, t.bn) if a == "o" else (t.bn, t.bm)
        lr, ls = cm._layout(t, r_rows, "o"), cm._layout(t, s_rows, "k")
        for r in range(s_rows):
            for ch in range(8):
                assert _value(ls.off(str(r), str(ch))) * 4 == r * 128 + ((ch ^ (r & 7)) * 16)
        # Each fragment register of each k8 step: lane (g, t4) reads k row 8 ks + dk + t4, output
        # 64 w + 16 q + do + g of the padded tile: 32 distinct banks for every warp of every warpgroup.
        for w in range(t.wm):
            for q in range(4):
                for ks in range(t.bk // 8):
                    for do, dk in ((0, 0), (8, 0), (0, 4), (8, 4)):
                        banks = set()
                        for lane in range(32):
                            g, t4 = lane >> 2, lane & 3
                            word = (8 * ks + dk + t4) * lr.pcols + 64 * w + 16 * q + do + g
                            banks.add(word % 32)
                        assert len(banks) == 32, (t.key, w, q, ks, do, dk)
        assert t.smem_bytes(a, b) <= cm.SMEM_OPTIN


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
def test_tf32_register_operand_kernels_compile_without_serialized_wgmma() -> None:
    # ptxas serializes wgmma (warning C7513) when a register a wgmma reads may change while it is in flight;
    # the generator awaits the previous group before it reads the next fragments, so no shape may warn.
    sources, labels = [], []
    for rel, kernel in (
        ("bench/suite/matmul/naive.cu", "matmul_naive"),
        ("bench/contraction/problems/sgemm_kt_while.cu", "sgemm_kt_while"),
    ):
        model, fn, c = _kernel(ROOT / rel, kernel)
        for t in REGS:
            if t.problems(c.a.layout, c.b.layout):
                continue
            out = uc.rewrite_source(model, fn.name, t)
            assert out is not None and b"wgmma.mma_async.sync.aligned.m64n" in out, (kernel, t.key)
            sources.append(out)
            labels.append(f"{kernel} {t.key}")
    assert len(labels) >= 6
    for label, (ok, log) in zip(labels, compile_many(sources, verbose=True), strict=True):
        assert ok, f"{label}: {log}"
        assert "C7513" not in log and "spill" not in log.replace("0 bytes spill", ""), f"{label}: {log}"
