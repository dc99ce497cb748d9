"""The untiled-contraction card (skills/untiled-contraction/): recogniser, generated kernel, launches.

The card's own fixtures (`pos_*` in seven styles, `neg_*` near misses) run through tests/skills/test_cards.py like
every card's; here: what the recogniser reads from each style, why each near miss is refused, that every tile
choice compiles for every style, and that the launch changes (host code and problem files) are the tiled grid.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library
from warpwise.verify.launch import problem_source

FOLDER = BUILTIN_CARDS / "untiled-contraction"
FIXTURES = FOLDER / "fixtures"
_card = builtin_library().get("untiled-contraction")
assert _card is not None and _card.rules is not None, "the untiled-contraction card did not load"
uc = _card.rules
ROOT = Path(__file__).resolve().parents[2]

# style -> (kernel, layout, i, j, k, M bound, N bound, K bound)
STYLES = {
    "pos_nn_basic.cu": ("sgemm_nn", "NN", "row", "col", "k", "M", "N", "K"),
    "pos_restyled_macros.cu": ("mm_macros", "NN", "r", "c", "p", "MROWS", "NCOLS", "KDEPTH"),
    "pos_uint_typedef.cu": ("gemm_uint", "NN", "i", "j", "k", "M", "N", "K"),
    "pos_swapped_roles.cu": ("matmul_rows_on_x", "NN", "x", "y", "t", "m", "n", "k"),
    "pos_transposed_b.cu": ("gemm_nt", "NT", "row", "col", "kk", "M", "N", "K"),
    "pos_alpha_beta_tn.cu": ("sgemm_tn_alpha_beta", "TN", "m", "n", "k", "M", "N", "K"),
    "pos_while_tt.cu": ("mm_while_tt", "TT", "i", "j", "k", "M", "N", "K"),
    "pos_half_nn.cu": ("hgemm_nn", "NN", "row", "col", "k", "M", "N", "K"),
    "pos_bf16_nt_cast.cu": ("bgemm_nt", "NT", "i", "j", "k", "M", "N", "K"),
}
NEAR_MISSES = {
    "neg_data_bound.cu": "bound that every thread shares",
    "neg_atomic.cu": "no accumulator",
    "neg_nonaffine.cu": "affine",
    "neg_half_product.cu": "is not `acc += A[..] * B[..]`",
}


def _kernel(path: Path):
    model = analyze_text(path.read_bytes(), str(path))
    fn = next(f for f in model.functions if f.kind is FunctionKind.KERNEL)
    return model, fn


def test_card_loads_from_its_folder() -> None:
    card = builtin_library().get("untiled-contraction")
    assert card is not None and card.has_rewrite
    assert card.path.endswith("untiled-contraction/card.md")


@pytest.mark.parametrize("name", sorted(STYLES))
def test_recognises_each_style(name: str) -> None:
    model, fn = _kernel(FIXTURES / name)
    c, why = uc.recognise(model, fn)
    assert c is not None, why
    kernel, layout, i, j, k, m, n, kb = STYLES[name]
    assert (c.kernel, c.layout, c.i, c.j, c.k) == (kernel, layout, i, j, k)
    assert (uc.poly_text(c.m_bound), uc.poly_text(c.n_bound), uc.poly_text(c.k_bound)) == (m, n, kb)


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_refuses_near_misses_with_a_reason(name: str) -> None:
    model, fn = _kernel(FIXTURES / name)
    c, why = uc.recognise(model, fn)
    assert c is None
    assert NEAR_MISSES[name] in why and fn.name in why


def test_refuses_other_shapes() -> None:
    base = """__global__ void f(const float *A, const float *B, float *C, int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float sum = INIT;
    for (int k = 0; k < K; STEP) sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
  }
}
"""

    def rec(**subst: str):
        text = base
        for key, value in {"INIT": "0.0f", "STEP": "++k", **subst}.items():
            text = text.replace(key, value)
        model = analyze_text(text)
        return uc.recognise(model, model.functions[0])[0]

    assert rec() is not None
    assert rec(INIT="1.0f") is None  # a non-zero start is not kept by the rewrite
    assert rec(STEP="k += 2") is None  # not every k
    double = base.replace("const float *A", "const double *A").replace("float sum", "double sum")
    model = analyze_text(double.replace("INIT", "0.0").replace("STEP", "++k"))
    assert uc.recognise(model, model.functions[0])[0] is None  # float only
    transposed_c = base.replace("C[row * N + col]", "C[col * M + row]").replace("INIT", "0.0f")
    model = analyze_text(transposed_c.replace("STEP", "++k"))
    c = uc.recognise(model, model.functions[0])[0]
    assert c is not None and (c.i, c.j) == ("col", "row")  # C^T = B^T A^T: the store stays contiguous along j


def test_tile_problems() -> None:
    assert uc.Tiles().problems() == []
    assert all(t.problems() == [] for t in uc.TILE_CHOICES)
    assert uc.Tiles(128, 128, 8, 6, 8).problems()
    assert uc.Tiles(64, 64, 8, 4, 4).problems()  # 256 threads cannot load a 64 x 8 tile in 16-byte vectors
    assert uc.Tiles(256, 256, 8, 4, 4).problems()  # 4096 threads


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
def test_every_tile_choice_compiles() -> None:
    # NN (A contiguous along k, B along n) and TT (the other way round) cover every load path of the generator;
    # the default tiles compile for every style in test_cards.py.
    sources, labels = [], []
    for name in ("pos_nn_basic.cu", "pos_while_tt.cu"):
        model, fn = _kernel(FIXTURES / name)
        for tiles in uc.TILE_CHOICES:
            out = uc.rewrite_source(model, fn.name, tiles)
            assert out is not None
            after = analyze_text(out)
            assert after.syntax_problems == (), (name, tiles.key)
            sources.append(out)
            labels.append(f"{name} {tiles.key}")
    for label, (ok, log) in zip(labels, compile_many(sources), strict=True):
        assert ok, f"{label}: {log}"


def test_host_launch_becomes_a_grid_of_tiles() -> None:
    model, fn = _kernel(FIXTURES / "pos_nn_basic.cu")
    out = uc.rewrite_source(model, fn.name, uc.Tiles(128, 64, 16, 8, 4, 0)).decode()
    assert "sgemm_nn<<<dim3(((N) + 63) / 64, ((M) + 127) / 128), dim3(256)>>>(A, B, C, M, N, K);" in out
    assert "__launch_bounds__" not in out
    out = uc.rewrite_source(model, fn.name).decode()
    assert "__global__ void __launch_bounds__(256, 2) sgemm_nn(const float *A" in out


def test_epilogue_and_guard_are_kept() -> None:
    model, fn = _kernel(FIXTURES / "pos_alpha_beta_tn.cu")
    out = uc.rewrite_source(model, fn.name).decode()
    assert "C[m * ldc + n] = alpha * tmp + beta * C[m * ldc + n];" in out
    assert "if ((m < M && n < N))" in out
    model, fn = _kernel(FIXTURES / "pos_restyled_macros.cu")
    assert "if ((!(r >= MROWS || c >= NCOLS)))" in uc.rewrite_source(model, fn.name).decode()


def test_vector_loads_only_behind_a_runtime_alignment_test() -> None:
    model, fn = _kernel(FIXTURES / "pos_uint_typedef.cu")
    out = uc.rewrite_source(model, fn.name).decode()
    assert "const bool ww_vec_A = (reinterpret_cast<unsigned long long>(A) % 16 == 0) && (ww_a_o % 4 == 0);" in out
    assert "const long long ww_a_o = lda, ww_a_k = 1;" in out
    assert out.count("reinterpret_cast<const float4 *>(A + ww_base)") == 2  # first tile and the prefetch
    assert "if (ww_vec_A && ww_o < ww_M && ww_kk + 3 < ww_K)" in out


def _geometry(source: str, inputs: dict) -> tuple:
    ns: dict = {}
    exec(compile(source, "<problem>", "exec"), ns)
    return ns["launch"](inputs), ns["launch_candidate"](inputs)


def test_problem_file_launch_change() -> None:
    model, fn = _kernel(ROOT / "bench" / "suite" / "matmul" / "naive.cu")
    c, _ = uc.recognise(model, fn)
    changes = uc.launch_changes(c, fn, uc.Tiles())
    base = "def launch(inputs):\n    return ((-(-inputs['N'] // 16), -(-inputs['M'] // 16), 1), (16, 16, 1))\n"
    original, candidate = _geometry(problem_source(base, (), changes), {"M": 4095, "N": 4097, "K": 1023})
    assert original == ((257, 256, 1), (16, 16, 1), 0)
    assert candidate == ((33, 32, 1), (256, 1, 1), 0)
    # Macros are not known to Python: no launch change for a kernel whose sizes are macros.
    model, fn = _kernel(FIXTURES / "pos_restyled_macros.cu")
    c, _ = uc.recognise(model, fn)
    assert uc.launch_changes(c, fn, uc.Tiles()) is None


def test_verify_skill_on_the_suite_problem_file_launches_tiles() -> None:
    from warpwise.skills.launches import card_problem_spec

    path = ROOT / "bench" / "suite" / "matmul" / "naive.cu"
    spec = card_problem_spec(str(path), path.read_text(), "matmul_naive", "untiled-contraction")
    assert spec is not None
    assert "launch_candidate" in spec.run.problem_source
    assert 'max(1, -(-(1 * int(inputs["N"])) // 128))' in spec.run.problem_source
