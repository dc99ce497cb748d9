"""Claims the compiler confirms (issue 18): local memory from ptxas' report, and safe fixes that add no spills."""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.findings import Severity
from warpwise.engine import fix_text
from warpwise.skills import guard
from warpwise.skills.engine import compute_fix, match_file
from warpwise.skills.library import builtin_library
from warpwise.verify import resources
from warpwise.verify.resources import KernelResources, Unconfirmed
from warpwise.verify.worker.nvbuild import nvrtc_version

FIXTURES = Path(__file__).resolve().parents[2] / "skills" / "dynamic-local-array-index" / "fixtures"
CARD = "dynamic-local-array-index"
TAPS = (
    Path(__file__).resolve().parents[2]
    / "skills"
    / "constant-trip-loop-without-unroll"
    / "fixtures"
    / "pos_fixed_taps.cu"
)


needs_nvrtc = pytest.mark.skipif(nvrtc_version() is None, reason="NVRTC (the compile extra) is not installed")


def _matches(source: bytes, card: str = CARD) -> list:
    return match_file(analyze_text(source), builtin_library(), enabled={card})


@pytest.fixture
def no_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every resource claim unconfirmed, as on a machine without a CUDA compiler."""
    monkeypatch.setenv(resources.ENV_DISABLE, "1")
    monkeypatch.setattr(resources, "_memo", type(resources._memo)())


@needs_nvrtc
def test_local_memory_is_claimed_only_where_ptxas_reports_a_stack_frame() -> None:
    assert _matches((FIXTURES / "compiler_unrolls.cu").read_bytes()) == []
    (m,) = _matches((FIXTURES / "pos_heavy_accumulators.cu").read_bytes())
    assert "ptxas reports" in m.message and "bytes of stack frame for `accumulate`" in m.message
    assert m.severity is Severity(builtin_library().get(CARD).header.severity)


def test_without_a_compiler_the_claim_is_an_unconfirmed_hint(no_builds: None) -> None:
    # Indices known only at run time: registers cannot be indexed by them, whatever the compiler unrolls.
    runtime = b"""
__global__ void pick(const float* x, float* y, const int* sel) {
  float buf[8];
  for (int t = 0; t < 8; ++t) buf[t] = x[threadIdx.x * 8 + t];
  y[threadIdx.x] = buf[sel[threadIdx.x] & 7];
}
"""
    found = _matches(runtime)
    assert found
    for m in found:
        assert m.severity is Severity.HINT
        assert "unconfirmed" in m.message and "ptxas reports" not in m.message
    # Only compile-time trip counts: whether nvcc unrolls them is the compiler's call, so without its report the
    # card claims nothing (issue 18: claims the compiler confirms; the public GEMMs' 32-trip accumulator loops were
    # unrolled by nvcc although their bodies are not light).
    assert _matches((FIXTURES / "compiler_unrolls.cu").read_bytes()) == []
    assert _matches((FIXTURES / "pos_heavy_accumulators.cu").read_bytes()) == []


def _report(stack: int, spills: int) -> KernelResources:
    return KernelResources("taps", "sm_90", "test", 32, stack, spills, spills)


def test_a_safe_fix_whose_build_adds_spills_is_held_back(monkeypatch: pytest.MonkeyPatch) -> None:
    source = TAPS.read_bytes()
    before = analyze_text(source)

    def fake(model, kernel, arch="sm_90"):  # type: ignore[no-untyped-def]
        return _report(0, 0) if model.text == before.text else _report(0, 90)

    monkeypatch.setattr(resources, "kernel_resources", fake)
    (m,) = _matches(source, "constant-trip-loop-without-unroll")
    fix = compute_fix(before, m)
    assert fix is not None
    why = guard.unsafe_for_resources(before, m, fix)
    assert why is not None and "adds 180 bytes of spills" in why
    only = {"constant-trip-loop-without-unroll"}
    outcome = fix_text(source, "taps.cu", select=only)
    assert outcome.text == source
    assert [f.card_id for f, _ in outcome.held_back] == ["constant-trip-loop-without-unroll"]
    assert fix_text(source, "taps.cu", include_unsafe=True, select=only).text != source


def test_a_safe_fix_whose_build_adds_nothing_is_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "kernel_resources", lambda model, kernel, arch="sm_90": _report(0, 0))
    source = TAPS.read_bytes()
    outcome = fix_text(source, "taps.cu", select={"constant-trip-loop-without-unroll"})
    assert outcome.text != source and not outcome.held_back


def test_without_a_build_a_guarded_fix_is_not_applied_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "kernel_resources", lambda model, kernel, arch="sm_90": Unconfirmed("no compiler"))
    source = TAPS.read_bytes()
    outcome = fix_text(source, "taps.cu", select={"constant-trip-loop-without-unroll"})
    assert outcome.text == source
    ((_, why),) = {f.title: (f, w) for f, w in outcome.held_back}.values()
    assert why.startswith("unconfirmed")


@needs_nvrtc
def test_a_loop_the_compiler_unrolls_by_itself_gets_no_unroll_finding() -> None:
    card = "constant-trip-loop-without-unroll"
    rolled = TAPS.read_bytes()  # a heavy 32-trip body: nvcc keeps the loop
    (m,) = _matches(rolled, card)
    verdict = next(v for v in m.verdicts if v.id == "compiler-keeps-loop")
    assert verdict.status.value == "holds", verdict.reason
    small = b"__global__ void k(const float* x, float* y) {\n  float s = 0.0f;\n  for (int j = 0; j < 4; ++j) s += x[j];\n  y[threadIdx.x] = s;\n}\n"
    assert _matches(small, card) == []  # the same machine code with and without the pragma: no finding
