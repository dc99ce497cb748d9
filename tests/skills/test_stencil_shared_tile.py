"""The stencil-shared-tile transformation: what it recognises (any spelling), what it refuses and why, the tiled
kernel it writes (nvcc compiles it where nvcc exists), its search actions, and the gate on odd sizes (GPU)."""

from __future__ import annotations

import shutil
import sys

import pytest

from tests.conftest import ROOT
from tests.nvcc import compile_source
from warpwise.analyzers.build import analyze_text
from warpwise.skills.library import builtin_library

builtin_library()
st = sys.modules["warpwise.skills.cards.stencil_shared_tile"]
FIX = ROOT / "skills" / "stencil-shared-tile" / "fixtures"


def _recognise(source: str | bytes, kernel: str):
    data = source.encode() if isinstance(source, str) else source
    model = analyze_text(data)
    fn = next(f for f in model.functions if f.name == kernel)
    return st.recognise(model, fn)


@pytest.mark.parametrize(
    ("rel", "kernel", "array", "pitch", "loads"),
    [
        ("bench/suite/blur3x3/naive.cu", "blur3x3_naive", "in", "width", 9),
        ("bench/suite_ood/stencil/jacobi5_2d.cu", "jacobi_step", "u", "nx", 5),
        ("bench/suite_ood/stencil/heat1d.cu", "heat_step", "u", None, 5),
        ("skills/stencil-shared-tile/fixtures/pos_jacobi_macro_typedef.cu", "jacobi", "u", "1000", 5),
        ("skills/stencil-shared-tile/fixtures/pos_flat_five_point.cu", "laplace5", "src", None, 5),
    ],
)
def test_recognises_stencils_in_any_spelling(rel: str, kernel: str, array: str, pitch: str | None, loads: int) -> None:
    shape, why = _recognise((ROOT / rel).read_bytes(), kernel)
    assert shape is not None, why
    assert (shape.array, shape.pitch, shape.loads) == (array, pitch, loads)


def test_block_shape_comes_from_the_launch() -> None:
    shape, why = _recognise((FIX / "pos_blur_clamp.cu").read_bytes(), "blur3x3")
    assert shape is not None, why
    assert shape.block == (16, 16)
    body = st.tiled_body(analyze_text((FIX / "pos_blur_clamp.cu").read_bytes()), shape, 2)
    assert "constexpr int WW_TX = 20, WW_TY = 20;" in body


@pytest.mark.parametrize(
    ("rel", "kernel", "reason"),
    [
        ("bench/suite/conv3x3/naive.cu", "conv3x3_naive", "loops of more than 16 iterations"),
        ("bench/suite_ood/stencil/laplace7_3d_zloop.cu", "laplacian3d", "loops of more than 16 iterations"),
        ("skills/stencil-shared-tile/fixtures/neg_in_place.cu", "smooth_in_place", "reads and writes `u`"),
        ("skills/stencil-shared-tile/fixtures/neg_already_tiled.cu", "avg3", "already uses shared memory"),
        ("skills/stencil-shared-tile/fixtures/neg_ldg_address.cu", "box3", "calls `__ldg`"),
        (
            "skills/stencil-shared-tile/fixtures/neg_embedding_lookup.cu",
            "lookup_rows",
            "where `tokens[blockIdx.x]` points",
        ),
        ("skills/stencil-shared-tile/fixtures/neg_gather_neighbours.cu", "sample3", "where `pos[i]` points"),
        (
            "skills/stencil-shared-tile/fixtures/neg_own_elements.cu",
            "scale4",
            "its own elements of `x` (offsets 0 to 3",
        ),
        ("skills/stencil-shared-tile/fixtures/neg_own_elements_loop.cu", "pack_nibbles", "`codes` (offsets 0 to 7"),
        ("skills/stencil-shared-tile/fixtures/neg_pixel_channels.cu", "luminance", "`rgb` (offsets 0 to 2"),
    ],
)
def test_refuses_with_a_reason(rel: str, kernel: str, reason: str) -> None:
    shape, why = _recognise((ROOT / rel).read_bytes(), kernel)
    assert shape is None and reason in why, why


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            "__device__ float f(float v);\n"
            "__global__ void k(const float* u, float* v, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i > 0 && i < n - 1) v[i] = f(u[i - 1]) + u[i] + u[i + 1];\n}\n",
            "calls `f`",
        ),
        (
            "__global__ void k(const float* u, float* v, int* c, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i > 0 && i < n - 1) { v[i] = u[i - 1] + u[i] + u[i + 1]; atomicAdd(c, 1); }\n}\n",
            "calls `atomicAdd`",
        ),
        (
            "__global__ void k(const float* u, float* v, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i > 0 && i < n - 1) v[i] += u[i - 1] + u[i] + u[i + 1];\n}\n",
            "reads the array it writes",
        ),
        (
            "__global__ void k(const float* u, float* v, const int* idx, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i > 0 && i < n - 1) v[i] = u[i - 1] + u[i] + u[(int)u[i + 1]];\n}\n",
            "where `u[i + 1]` points",
        ),
        (
            "__global__ void k(const float* u, float* v, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  n = n - 1;\n"
            "  if (i > 0 && i < n) v[i] = u[i - 1] + u[i] + u[i + 1];\n}\n",
            "assigns its parameter `n`",
        ),
    ],
)
def test_refuses_bodies_it_cannot_repeat(source: str, reason: str) -> None:
    shape, why = _recognise(source, "k")
    assert shape is None and reason in why, why


def test_rewrite_keeps_the_body_and_serves_reads_from_the_tile() -> None:
    src = (ROOT / "bench/suite_ood/stencil/jacobi5_2d.cu").read_bytes()
    out = st.rewrite_source(analyze_text(src), "jacobi_step", 1)
    assert out is not None
    text = out.decode()
    # Both passes hold the user's boundary handling as written; the first stores to a local, the second to u_new.
    assert text.count("if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1)") == 2
    assert "ww_sink0 = ww_mark((long long)(j * nx + i));" in text
    assert "u_new[j * nx + i] = 0.25f * (ww_read((long long)(j * nx + i - 1))" in text
    assert text.count("__syncthreads();") == 3
    assert "const long long ww_ld = (long long)(nx);" in text


def test_search_offers_each_halo_with_the_launch_unchanged() -> None:
    from tests.search.test_transformations import context
    from warpwise.search.transformations import TransformationActions

    # The problem file's `launch(inputs)` decides the block at run time: each block shape the tile may be sized
    # for is an action, with each halo.
    ctx, v = context(ROOT / "bench/suite_ood/stencil/jacobi5_2d.cu", "jacobi_step")
    acts = {a.name: a for a in TransformationActions().actions(v, ctx)}
    names = sorted(a for a in acts if a.startswith("transform:stencil-shared-tile:"))
    assert names == sorted(
        f"transform:stencil-shared-tile:shared tile for {b[0]} x {b[1]} blocks, halo {h}"
        for b in st.BLOCK_CHOICES_2D
        for h in st.HALO_CHOICES
    )
    two = acts["transform:stencil-shared-tile:shared tile for 32 x 8 blocks, halo 2"].produce()
    assert two is not None and "blockIdx.y * blockDim.y - 2;" in two.text
    assert "constexpr int WW_TX = 36, WW_TY = 12;" in two.text
    assert two.launch is None or not two.launch.transforms


def test_a_launch_in_the_file_fixes_the_tile_block() -> None:
    model = analyze_text((FIX / "pos_heat_1d.cu").read_bytes())
    fn = next(f for f in model.functions if f.name == "heat_step")
    shape, why = st.recognise(model, fn)
    assert shape is not None, why
    assert shape.block == (256, 1)
    assert [label for label, _, _ in st.search_variants([_Match(shape)])] == [
        f"shared tile, halo {h}" for h in st.HALO_CHOICES
    ]
    assert "constexpr int WW_TX = 258, WW_TY = 1;" in st.tiled_body(model, shape, 1)


class _Region:
    def __init__(self, shape) -> None:
        self.facts = {"stencil_shape": shape}


class _Match:
    def __init__(self, shape) -> None:
        self.region = _Region(shape)


SUITE = [
    ("bench/suite/blur3x3/naive.cu", "blur3x3_naive"),
    ("bench/suite_ood/stencil/jacobi5_2d.cu", "jacobi_step"),
    ("bench/suite_ood/stencil/heat1d.cu", "heat_step"),
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize(("rel", "kernel"), SUITE, ids=[k for _, k in SUITE])
@pytest.mark.parametrize("halo", st.HALO_CHOICES)
def test_rewritten_suite_kernels_compile(rel: str, kernel: str, halo: int) -> None:
    out = st.rewrite_source(analyze_text((ROOT / rel).read_bytes()), kernel, halo)
    assert out is not None
    ok, log = compile_source(out)
    assert ok, log


GPU_CASES = [
    # (file, kernel, halo, block the tile is sized for: None = the launch's or the first choice)
    ("bench/suite/blur3x3/naive.cu", "blur3x3_naive", 1, None),
    ("bench/suite/blur3x3/naive.cu", "blur3x3_naive", 2, (32, 8)),  # a tile sized for another block than 16 x 16
    ("bench/suite_ood/stencil/jacobi5_2d.cu", "jacobi_step", 1, None),
    ("bench/suite_ood/stencil/jacobi5_2d.cu", "jacobi_step", 2, (32, 8)),
    ("bench/suite_ood/stencil/heat1d.cu", "heat_step", 1, None),
    ("bench/suite_ood/stencil/heat1d.cu", "heat_step", 2, (128, 1)),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("rel", "kernel", "halo", "block"), GPU_CASES, ids=[f"{c[1]}-{c[2]}-{c[3]}" for c in GPU_CASES]
)
def test_gate_finds_the_tiled_stencil_correct_on_odd_sizes(
    rel: str, kernel: str, halo: int, block, monkeypatch
) -> None:
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    # The `odd` preset: sizes that are not multiples of the block, so partial tiles, edges and clamps run.
    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", "odd")
    path = ROOT / rel
    original = path.read_text()
    cand = st.rewrite_source(analyze_text(original.encode(), str(path)), kernel, halo, block)
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
