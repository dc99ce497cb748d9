"""The tensor-core card on float kernels: offered (TF32, unsafe) only when the kernel's problem file admits TF32.

A float contraction on TF32 tensor cores is correct only within `TF32_TOLERANCE`, so `contraction-without-tensor-
cores` fires on a float kernel only when its problem file states a tolerance at least that loose; its fix is the
TF32 `mma.sync` kernel (portable), its title says the operands are rounded, and the gate's spec carries the
problem's tolerance. Without a problem file, with a tighter tolerance or with one that is not a literal, it stays
silent (the untiled-contraction card's exact rewrite is then the fix).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.nvcc import compile_many
from warpwise.analyzers.build import analyze_text
from warpwise.skills.engine import compute_fix, match_file
from warpwise.skills.library import builtin_library
from warpwise.skills.rewrite import apply_edits
from warpwise.verify.spec import ProblemSpec, resolve_spec

ROOT = Path(__file__).resolve().parents[2]
KT = ROOT / "bench/contraction/problems/sgemm_kt_while.cu"
CARD = "contraction-without-tensor-cores"


def _copy(tmp: Path, tolerance: str | None) -> Path:
    src = tmp / KT.name
    src.write_bytes(KT.read_bytes())
    problem = KT.with_name("sgemm_kt_while.problem.py").read_text()
    if tolerance is None:
        problem = problem.replace("tolerance = (1e-2, 5e-2)\n", "")
    else:
        problem = problem.replace("tolerance = (1e-2, 5e-2)", tolerance)
    (tmp / "sgemm_kt_while.problem.py").write_text(problem)
    return src


def _matches(path: Path) -> list:
    model = analyze_text(path.read_bytes(), str(path))
    return [m for m in match_file(model, builtin_library(), enabled={CARD})], model


@pytest.mark.parametrize(
    ("tolerance", "fires"),
    [
        ("tolerance = (1e-2, 5e-2)", True),
        ("tolerance = (2e-2, 1e-1)", True),
        ("tolerance = (1e-4, 1e-3)", False),
        ("tolerance = compute()", False),
        (None, False),
    ],
)
def test_a_float_kernel_gets_tf32_only_when_its_problem_admits_it(
    tmp_path: Path, tolerance: str | None, fires: bool
) -> None:
    found, _ = _matches(_copy(tmp_path, tolerance))
    assert bool(found) == fires
    if fires:
        assert "TF32" in found[0].fix_title and "rounded to TF32" in found[0].fix_title


def test_without_a_path_a_float_kernel_is_not_offered_tf32() -> None:
    model = analyze_text(KT.read_bytes())
    assert [m for m in match_file(model, builtin_library(), enabled={CARD})] == []


def test_the_half_fix_title_is_unchanged(tmp_path: Path) -> None:
    half = ROOT / "skills" / CARD / "fixtures" / "pos_half_nn.cu"
    model = analyze_text(half.read_bytes(), str(half))
    (m,) = [m for m in match_file(model, builtin_library(), enabled={CARD})]
    assert m.fix_title.endswith("(mma.sync, 128 x 128 tiles, 3 cp.async stages) — sums in another order")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed on this machine")
def test_the_tf32_fix_compiles_and_the_spec_carries_the_tolerance(tmp_path: Path) -> None:
    src = _copy(tmp_path, "tolerance = (1e-2, 5e-2)")
    (m,), model = _matches(src)
    fix = compute_fix(model, m)
    assert fix is not None and fix.edits
    out = apply_edits(model.text, fix.edits)
    assert b"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in out and b"cvt.rna.tf32.f32" in out
    ((ok, log),) = compile_many([out])
    assert ok, log
    spec = resolve_spec(str(src), src.read_bytes(), "sgemm_kt_while", model)
    assert isinstance(spec, ProblemSpec) and ("f32", 1e-2, 5e-2) in spec.run.tolerances
