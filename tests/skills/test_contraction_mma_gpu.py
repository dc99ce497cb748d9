"""The contraction card's tensor-core, TF32 and 1-D rewrites through the real gate (`gpu` marker).

Correctness only (one seed, a short timing): each rewrite is checked against the problem file's reference at its
`odd` preset and at 1025 x 1023 x 259 (no size a multiple of any tile; odd leading dimensions take the scalar
path). The timings on the H200 are in bench/results/contraction_mma-2026-12-02.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.skills.launches import changed_problem_spec
from warpwise.skills.library import builtin_library
from warpwise.skills.rewrites import contraction_mma as cm
from warpwise.verify.backends import LocalBackend
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Candidate, Gate
from warpwise.verify.spec import kernel_function
from warpwise.verify.types import Options, Status

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
_card = builtin_library().get("untiled-contraction")
assert _card is not None and _card.rules is not None
uc = _card.rules
HALF = [
    ("bench/suite_ood/hgemm/nn_float_acc.cu", "hgemm_nn"),
    ("bench/suite_ood/hgemm/tn_alpha_beta.cu", "hgemm_tn_ab"),
    ("bench/contraction/problems/bgemm_nt_cast.cu", "bgemm_nt"),
]
QUICK = Options(seeds=(0,), warmup_ms=0.0, rep_ms=0.0, min_reps=3)


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    cache = ResultCache(tmp_path_factory.mktemp("cache") / "results.sqlite3")
    backend = LocalBackend(gpus=1, cache=cache)
    yield Gate(backend, cache)
    backend.close()


def _check(gate: Gate, rel: str, kernel: str, tiles: object, sizes: tuple[int, int, int], opts: Options) -> None:
    path = ROOT / rel
    text = path.read_text()
    model = analyze_text(text.encode(), str(path))
    fn = kernel_function(model, kernel)
    assert fn is not None
    c, why = uc.recognise(model, fn)
    assert c is not None, why
    new = uc.rewrite_source(model, kernel, tiles)
    changes = uc.launch_changes(c, fn, tiles)
    assert new is not None and changes is not None
    spec = changed_problem_spec(str(path), text, kernel, changes)
    extra = f"\n\nSIZES = dict(SIZES)\nSIZES['full'] = {sizes!r}\n"
    spec = dataclasses.replace(spec, run=dataclasses.replace(spec.run, problem_source=spec.run.problem_source + extra))
    res = gate.verify(Candidate(str(path), text, kernel, new.decode(), str(path), spec=spec), opts)
    assert res.status in (Status.VERIFIED, Status.NOT_FASTER), (kernel, getattr(tiles, "key", tiles), res.message)


@pytest.mark.parametrize("sizes", [(65, 70, 61), (1025, 1023, 259)])
@pytest.mark.parametrize(("rel", "kernel"), HALF)
def test_every_tensor_core_shape_is_correct(gate: Gate, rel: str, kernel: str, sizes: tuple[int, int, int]) -> None:
    for tiles in cm.MMA_CHOICES:
        _check(gate, rel, kernel, tiles, sizes, QUICK)


def test_tf32_and_the_one_d_mapping_are_correct(gate: Gate) -> None:
    loose = dataclasses.replace(QUICK, tolerance=cm.TF32_TOLERANCE)
    for tiles in cm.TF32_CHOICES:
        if not tiles.problems("k", "o"):  # a register-operand shape fits one orientation of two
            _check(gate, "bench/suite/matmul/naive.cu", "matmul_naive", tiles, (1025, 1023, 259), loose)
    # The register-operand shapes with A stored along its outputs (B along k), at both odd sizes, and on
    # matmul_naive at the small odd size (B along its outputs: the transposed product).
    for tiles in [t for t in cm.TF32_CHOICES if t.regs]:
        for sizes in ((1025, 1023, 259), (65, 70, 61)):
            if not tiles.problems("o", "k"):
                _check(gate, "bench/contraction/problems/sgemm_kt_while.cu", "sgemm_kt_while", tiles, sizes, loose)
            if not tiles.problems("k", "o") and sizes[0] == 65:
                _check(gate, "bench/suite/matmul/naive.cu", "matmul_naive", tiles, sizes, loose)
    # A stored along its outputs (TN): the TF32 wgmma shapes transpose it on its way to shared memory.
    for tiles in [t for t in cm.TF32_CHOICES if t.wgmma and not t.regs]:
        _check(gate, "bench/suite_ood/sgemm/tn_one_d_typedef.cu", "gemm_tn", tiles, (1025, 1023, 259), loose)
    # gemm_tn (1-D launch, i = idx / N, j = idx % N): the exact SIMT rewrite.
    _check(gate, "bench/suite_ood/sgemm/tn_one_d_typedef.cu", "gemm_tn", uc.Tiles(), (1025, 1023, 259), QUICK)


def test_the_tf32_quick_fix_verifies_with_the_problems_own_tolerance(gate: Gate) -> None:
    # The editor's TF32 fix (contraction-without-tensor-cores on a float kernel whose problem file admits TF32) is
    # checked against the problem's reference with the problem's tolerance, which the spec carries: no option here.
    from warpwise.skills.engine import compute_fix, match_file
    from warpwise.skills.rewrite import apply_edits

    path = ROOT / "bench/contraction/problems/sgemm_kt_while.cu"
    text = path.read_text()
    model = analyze_text(text.encode(), str(path))
    (m,) = [m for m in match_file(model, builtin_library(), enabled={"contraction-without-tensor-cores"})]
    fix = compute_fix(model, m)
    assert fix is not None
    new = apply_edits(model.text, fix.edits).decode()
    fn = kernel_function(model, "sgemm_kt_while")
    assert fn is not None
    changes = _card_rules_launch_changes(m)
    spec = changed_problem_spec(str(path), text, "sgemm_kt_while", changes)
    extra = "\n\nSIZES = dict(SIZES)\nSIZES['full'] = (1025, 1023, 259)\n"
    spec = dataclasses.replace(spec, run=dataclasses.replace(spec.run, problem_source=spec.run.problem_source + extra))
    assert ("f32", 1e-2, 5e-2) in spec.run.tolerances
    res = gate.verify(Candidate(str(path), text, "sgemm_kt_while", new, str(path), spec=spec), QUICK)
    assert res.status in (Status.VERIFIED, Status.NOT_FASTER), res.message


def _card_rules_launch_changes(match: object) -> object:
    from warpwise.skills.library import card_rules

    return card_rules("contraction-without-tensor-cores").problem_launch_changes([match])
