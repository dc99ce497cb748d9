"""Deoptimizers on a real GPU: what the exact passes derive computes what the kernel computed.

The tiled kernels are the card rewrites of naive suite kernels (the forward direction), so unstaging them walks
the card's rewrite back; the register tile is the SGEMM expert's. The gate checks every simpler kernel against
the problem's reference on three seeds; whether it is slower does not matter here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lineages.kernels import CORPUS, load_problem, naives
from warpwise.analyzers.build import analyze_text
from warpwise.lineages.deopt import KernelSource, candidates
from warpwise.lineages.deopt.unstage import unstage_shared
from warpwise.lineages.lineage import Expert, LineageBuilder, load_expert
from warpwise.skills.engine import card_rewrites
from warpwise.verify.backends import LocalBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate
from warpwise.verify.spec import read_problem
from warpwise.verify.types import Options, Status

pytestmark = pytest.mark.gpu

FAST = Options(warmup_ms=10, rep_ms=40, time_limit_s=120)
CORRECT = (Status.VERIFIED, Status.NOT_FASTER)


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LineageBuilder]:
    cache = ResultCache(tmp_path_factory.mktemp("cache") / "results.sqlite3")
    backend = LocalBackend(gpus=1, cache=cache)
    yield LineageBuilder(Gate(backend), dataclasses.replace(FAST))
    backend.close()


# The launches of the suite's problem files (16 x 16 blocks), written out so the tiling cards know the block.
LAUNCHERS = {
    "matmul": "void run(const float* A, const float* B, float* C, int M, int N, int K) {\n"
    "  matmul_naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(A, B, C, M, N, K);\n}\n",
    "transpose": "void run(const float* in, float* out, int rows, int cols) {\n"
    "  transpose_naive<<<dim3((cols + 15) / 16, (rows + 15) / 16), dim3(16, 16)>>>(in, out, rows, cols);\n}\n",
}


RESTRICT = {
    "matmul": lambda t: t.replace(
        "const float* A, const float* B, float* C",
        "const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C",
    ),
    "transpose": lambda t: t.replace(
        "const float* in, float* out", "const float* __restrict__ in, float* __restrict__ out"
    ),
}


# Staged kernels the unstage pass starts from where no card's rewrite stages any more: the suite's transpose
# through a 16 x 17 tile (what strided-transpose-access wrote before its rewrite became a launch-independent copy).
STAGED = {"transpose": Path(__file__).resolve().parent / "staged" / "transpose_tile16_restrict.cu"}


def _tiled(tmp: Path, operator: str, card: str | None) -> Expert:
    """Return the card's rewrite of a naive suite kernel (or its staged copy), beside a copy of its problem file."""
    k = next(n for n in naives() if n.operator == operator)
    kernel = load_problem(k.problem)["kernel"]
    # Unstaging is exact only when no store of another thread can change the tile's source: `__restrict__`.
    text = RESTRICT[operator](k.source.read_text(encoding="utf-8")) + "\n" + LAUNCHERS[operator]
    if card is None:
        tiled = STAGED[operator].read_bytes()
    else:
        _, tiled = card_rewrites(analyze_text(text.encode(), str(k.source)))[(kernel, card)]
    path = tmp / f"{operator}_tiled.cu"
    path.write_bytes(tiled)
    # The copy carries the problem it extends inlined (a relative `problem_extends` would not resolve from tmp).
    (tmp / f"{operator}_tiled.problem.py").write_text(read_problem(k.problem), encoding="utf-8")
    return load_expert(path)


@pytest.mark.parametrize(
    ("operator", "card", "tiles"),
    [("matmul", "repeated-global-tile-reads", 2), ("transpose", None, 1)],
)
def test_unstaged_kernels_compute_what_the_staged_ones_did(
    builder: LineageBuilder, tmp_path: Path, operator: str, card: str | None, tiles: int
) -> None:
    expert = _tiled(tmp_path, operator, card)
    current = expert.text
    for _ in range(tiles):
        (d,) = unstage_shared(KernelSource.parse(current, expert.kernel, str(expert.path)))
        simpler = d.apply(current)
        res = builder.verify_step(expert, simpler, (), current, ())
        assert res.status in CORRECT, f"{d.key}: {res.status.value} {res.message}"
        current = simpler
    assert "__shared__" not in current and "__syncthreads" not in current


def test_a_halved_register_tile_computes_the_same_product(builder: LineageBuilder) -> None:
    expert = load_expert(CORPUS / "sgemm" / "expert.cu")
    src = KernelSource.parse(expert.text, expert.kernel, str(expert.path))
    for key in ("untile:register-tile:TM=8", "untile:register-tile:TN=8"):
        d = next(d for d in candidates(src) if d.key == key)
        res = builder.verify_step(expert, d.apply(expert.text), d.launch, expert.text, ())
        assert res.status in CORRECT, f"{key}: {res.status.value} {res.message}"
