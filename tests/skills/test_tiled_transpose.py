"""The tiled-copy transformation of the strided-transpose-access card (skills/strided-transpose-access/).

The card's fixtures run through tests/skills/test_cards.py like every card's; here: what the recogniser reads
from each style and from the naive suites' transposes, why near misses are refused, that every tile size compiles
for every style, that the search's variants carry a launch of one block per tile, and (on a GPU) that the gate
finds each rewrite of the suites' transposes correct with the launch kept and with one 32 x 8 block per tile.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FunctionKind
from warpwise.skills.library import BUILTIN_CARDS, builtin_library

FOLDER = BUILTIN_CARDS / "strided-transpose-access"
FIXTURES = FOLDER / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
_card = builtin_library().get("strided-transpose-access")
assert _card is not None and _card.rules is not None, "the strided-transpose-access card did not load"
rules = _card.rules

# What the recogniser must read from each style: the copy, as its summary says.
STYLES = {
    "bench/suite/transpose/naive.cu": "`out[col * rows + row] = in[row * cols + col]` for row < rows, col < cols",
    "bench/suite_ood/transpose/loop_rows_no_tile.cu": (
        "`odata[col * height + row] = idata[row * width + col]` for row < height, col < width"
    ),
    "bench/suite_ood/transpose/one_d_divmod.cu": "`dst[col * rows + row] = src[row * cols + col]` for row < rows, col < cols",
    "bench/suite_ood/transpose/rect_block_strided_reads.cu": "`B[col * M + row] = A[row * N + col]` for row < M, col < N",
    "skills/strided-transpose-access/fixtures/pos_one_d_divmod.cu": (
        "`out[col * n_rows + row] = in[row * n_cols + col]` for row < n_rows, col < n_cols"
    ),
    "skills/strided-transpose-access/fixtures/pos_early_return_uint.cu": (
        "`b[col * m + row] = a[row * n + col]` for row < m, col < n"
    ),
    "skills/strided-transpose-access/fixtures/pos_loop_rows_rect.cu": (
        "`odata[col * height + row] = idata[row * width + col]` for row < height, col < width"
    ),
}

NEAR_MISSES = {
    "scaled_transpose": "is not an element of a pointer parameter",
    "half_guarded": "no upper bound for coordinate a",
    "copy2d": "are not `a * L + b` and `b * L' + a`",
    "every_other": "are not `a * L + b` and `b * L' + a`",
    "tiled": "a declaration calls a function or assigns",
}


def _kernels(path: Path) -> list:
    model = analyze_text(path.read_bytes(), str(path))
    return [(model, fn) for fn in model.functions if fn.kind is FunctionKind.KERNEL]


@pytest.mark.parametrize("rel", sorted(STYLES))
def test_recogniser_reads_each_style(rel: str) -> None:
    ((model, fn),) = _kernels(ROOT / rel)
    tk, why = rules.recognise_transpose(model, fn)
    assert tk is not None, why
    assert tk.summary == STYLES[rel]


# Transposes the card reports (their store is strided) but whose copy it does not rewrite, with the reason.
DISPLAY_ONLY = b"""
__global__ void scaled_transpose(float* out, const float* in, int rows, int cols, float s) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols && y < rows) out[x * rows + y] = s * in[y * cols + x];
}
__global__ void half_guarded(float* out, const float* in, int rows, int cols) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols) out[x * rows + y] = in[y * cols + x];
}
"""


def test_near_misses_are_refused_with_a_reason() -> None:
    seen = {}
    for path in FIXTURES.glob("neg_*.cu"):
        for model, fn in _kernels(path):
            tk, why = rules.recognise_transpose(model, fn)
            assert tk is None, fn.name
            seen[fn.name] = why
    for model, fn in _kernels_text(DISPLAY_ONLY):
        tk, why = rules.recognise_transpose(model, fn)
        assert tk is None, fn.name
        seen[fn.name] = why
    for name, reason in NEAR_MISSES.items():
        assert reason in seen[name], (name, seen[name])


def test_every_tile_compiles_for_every_style() -> None:
    sources = []
    for rel in sorted(STYLES):
        ((model, fn),) = _kernels(ROOT / rel)
        for tile in rules.TILE_CHOICES:
            out = rules.rewrite_source(model, fn.name, tile)
            assert out is not None and b"__syncthreads();" in out
            assert out.count(b"__global__") == 1  # the same kernel, its body replaced
            sources.append(out)
    bad = [log for ok, log in compile_many(sources) if not ok]
    assert not bad, bad[0]


def test_every_tile_builds_with_nvrtc() -> None:
    """NVRTC (the gate's first compiler, without the CUDA headers nvcc adds) builds each rewritten kernel, through
    the gate's own builder (loading a second NVRTC into the process by hand would leave the builder a different one)."""
    from warpwise.verify.types import Source
    from warpwise.verify.worker import nvbuild

    if nvbuild.nvrtc_version() is None:
        pytest.skip("NVRTC (cuda-bindings) is not installed")
    for rel in sorted(r for r in STYLES if r.startswith("bench/")):
        ((model, fn),) = _kernels(ROOT / rel)
        for tile in rules.TILE_CHOICES:
            out = rules.rewrite_source(model, fn.name, tile)
            assert out is not None
            built = nvbuild.build(Source(out.decode(), fn.name, "k.cu"), "sm_90")
            assert built.info.ok and built.info.compiler.lower().startswith("nvrtc"), (rel, tile, built.info.log)


def test_rewrite_keeps_the_signature_and_is_idempotent_on_its_output() -> None:
    path = ROOT / "bench/suite_ood/transpose/one_d_divmod.cu"
    ((model, fn),) = _kernels(path)
    out = rules.rewrite_source(model, fn.name)
    assert out is not None
    sig = path.read_bytes().split(b"{", 1)[0]
    assert out.startswith(sig)
    ((model2, fn2),) = [(m, f) for m, f in _kernels_text(out)]
    tk, why = rules.recognise_transpose(model2, fn2)
    assert tk is None and why  # the tiled kernel is not offered the rewrite again


def _kernels_text(data: bytes) -> list:
    model = analyze_text(data, "tiled.cu")
    return [(model, fn) for fn in model.functions if fn.kind is FunctionKind.KERNEL]


def test_search_variants_give_one_block_per_tile() -> None:
    from warpwise.search.transformations import _transform
    from warpwise.search.version import LaunchOverride

    path = ROOT / "bench/suite_ood/transpose/loop_rows_no_tile.cu"
    ((model, fn),) = _kernels(path)
    tk, _ = rules.recognise_transpose(model, fn)

    from types import SimpleNamespace

    match = SimpleNamespace(region=SimpleNamespace(facts={"transpose_kernel": tk}))
    variants = rules.search_variants([match])
    labels = [v[0] for v in variants]
    assert "tile 32, launch kept" in labels and "tile 64, one 32x8 block per tile" in labels
    _, args, steps = next(v for v in variants if v[0] == "tile 64, one 32x8 block per tile")
    assert args == {"tile": 64}
    override = LaunchOverride().then(_transform(steps[0], "t"))
    ns: dict = {}
    exec(override.source(), ns)
    grid, block, _ = ns["launch_candidate"]({"width": 4096, "height": 100})
    assert block == (32, 8, 1) and grid == (64 * 2, 1, 1)


GPU_CASES = [
    (rel, variant) for rel in sorted(r for r in STYLES if r.startswith("bench/")) for variant in ("kept", "tile32_32x8")
]


@pytest.mark.gpu
@pytest.mark.parametrize(("rel", "variant"), GPU_CASES, ids=[f"{Path(c[0]).stem}-{c[1]}" for c in GPU_CASES])
def test_gate_finds_the_tiled_copy_correct(rel: str, variant: str) -> None:
    from warpwise.skills.launches import changed_problem_spec
    from warpwise.verify.backends import gpu_count, make_backend
    from warpwise.verify.gate import Candidate, Gate
    from warpwise.verify.launch import LaunchChange
    from warpwise.verify.types import Options, Status

    if gpu_count() == 0:
        pytest.skip("no GPU: the gate cannot run the rewrite")
    path = ROOT / rel
    original = path.read_text()
    ((model, fn),) = _kernels(path)
    tk, _ = rules.recognise_transpose(model, fn)
    cand = rules.rewrite_source(model, fn.name, 32)
    assert cand is not None
    spec = None
    if variant != "kept":
        tiles = f"(-(-({tk.python['rows']}) // 32)) * (-(-({tk.python['cols']}) // 32))"
        changes = (
            LaunchChange("grid", 0, tiles, "tiles"),
            LaunchChange("grid", 1, "1", "1"),
            LaunchChange("block", 0, "32", "32"),
            LaunchChange("block", 1, "8", "8"),
        )
        spec = changed_problem_spec(str(path), original, fn.name, changes)
        assert spec is not None
    backend = make_backend("local", cache=None)
    try:
        r = Gate(backend, None).verify(
            Candidate(str(path), original, fn.name, cand.decode(), str(path), None, spec=spec),
            Options(seeds=(0, 1), time_limit_s=60.0),
        )
    finally:
        backend.close()
    assert r.status in (Status.VERIFIED, Status.NOT_FASTER), (r.status, r.message)
