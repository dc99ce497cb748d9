"""The quiet default: which findings are drawn as warnings, and the setting that restores every finding (issue 18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.findings import Severity
from warpwise.skills.presentation import MIN_P_VERIFIED, MIN_SPEEDUP, Outlook, rule_concern, shown_severity, why_shown


def test_a_performance_finding_without_an_expected_gain_is_a_hint() -> None:
    assert shown_severity("shared-bank-conflict", Severity.WARNING) is Severity.HINT
    assert shown_severity("scalar-global-access", Severity.INFO, outlook=Outlook(1.05, 0.9)) is Severity.HINT
    assert shown_severity("scalar-global-access", Severity.INFO, outlook=Outlook(1.8, 0.3)) is Severity.HINT


@pytest.mark.parametrize(
    ("outlook", "expected"),
    [
        (Outlook(MIN_SPEEDUP, MIN_P_VERIFIED, measured_best=1.5), Severity.WARNING),
        (Outlook(MIN_SPEEDUP - 0.01, 0.99), Severity.HINT),
        (Outlook(3.0, MIN_P_VERIFIED - 0.01), Severity.HINT),
        (Outlook(verified=True), Severity.WARNING),
        (None, Severity.HINT),
    ],
)
def test_an_expected_or_verified_gain_is_a_warning(outlook: Outlook | None, expected: Severity) -> None:
    assert shown_severity("scalar-global-access", Severity.HINT, outlook=outlook) is expected


def test_correctness_problems_and_notes_keep_their_declared_severity() -> None:
    assert rule_concern("divergent-syncthreads") == "correctness"
    assert rule_concern("uncoalesced-global-access") == "performance"
    assert shown_severity("divergent-syncthreads", Severity.ERROR, concern="correctness") is Severity.ERROR
    assert shown_severity("int32-index-overflow", Severity.WARNING, concern="correctness") is Severity.WARNING
    assert shown_severity("syntax-error", Severity.INFO) is Severity.INFO


def test_a_correctness_warning_whose_risk_is_not_proven_is_a_hint() -> None:
    risky = Outlook(unproven_benefit=None)
    unproven = Outlook(unproven_benefit="may-exceed-int32")
    rule = "int32-index-overflow"
    assert shown_severity(rule, Severity.WARNING, concern="correctness", outlook=risky) is Severity.WARNING
    assert shown_severity(rule, Severity.WARNING, concern="correctness", outlook=unproven) is Severity.HINT
    assert "may-exceed-int32" in why_shown(Severity.HINT, Severity.WARNING, unproven, "correctness")
    verified = Outlook(verified=True, unproven_benefit="may-exceed-int32")
    assert shown_severity(rule, Severity.WARNING, concern="correctness", outlook=verified) is Severity.WARNING
    # An error is proven by its rule; a benefit condition never lowers it.
    assert shown_severity("divergent-syncthreads", Severity.ERROR, concern="correctness", outlook=unproven) is (
        Severity.ERROR
    )
    assert shown_severity(rule, Severity.WARNING, concern="correctness", outlook=unproven, show_all=True) is (
        Severity.WARNING
    )


def test_show_all_restores_every_declared_severity() -> None:
    for sev in Severity:
        assert shown_severity("shared-bank-conflict", sev, show_all=True) is sev


def test_sector_counts_follow_the_stride_and_width() -> None:
    from warpwise.skills.traffic import sectors

    assert sectors(1, 4) == 4  # 32 floats: 128 bytes, 4 sectors
    assert sectors(2, 4) == 8
    assert sectors(4, 4) == 16
    assert sectors(8, 4) == 32  # 32 bytes apart: a sector per lane
    assert sectors(1000, 4) == 32
    assert sectors(1, 16) == 16  # float4
    assert sectors(2, 16) == 32


def test_a_large_traffic_win_is_a_warning_without_a_prediction() -> None:
    from warpwise.skills.presentation import MIN_TRAFFIC_FACTOR, why_shown

    big = Outlook(traffic_factor=MIN_TRAFFIC_FACTOR, traffic="each warp's access touches 16 sectors")
    small = Outlook(traffic_factor=MIN_TRAFFIC_FACTOR / 2, traffic="each warp's access touches 8 sectors")
    assert shown_severity("uncoalesced-global-access", Severity.WARNING, outlook=big) is Severity.WARNING
    assert shown_severity("uncoalesced-global-access", Severity.WARNING, outlook=small) is Severity.HINT
    # A finding declared below warning is never raised by its traffic alone.
    assert shown_severity("uncoalesced-global-access", Severity.INFO, outlook=big) is Severity.HINT
    assert "16 sectors" in why_shown(Severity.WARNING, Severity.WARNING, big, "performance")


def test_the_naive_transpose_is_a_warning_in_the_quiet_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from warpwise.engine import analyze_path
    from warpwise.presentation import present

    monkeypatch.setenv("WARPWISE_NO_RESOURCE_BUILDS", "1")
    path = Path(__file__).parents[2] / "examples" / "transpose.cu"
    report = present(analyze_path(str(path)))
    naive = [f for f in report.findings if f.function == "transpose_naive" and f.severity is Severity.WARNING]
    # (With resource builds off, `constant-trip-loop-without-unroll` cannot ask the compiler whether it already
    # unrolls the loop; whether that unconfirmed claim is a warning is the ranking's call, not this test's.)
    assert "strided-transpose-access" in [f.rule for f in naive], [(f.rule, f.severity) for f in report.findings]
    # The rule the card supersedes on that access is not shown beside it.
    assert not [f for f in report.findings if f.rule == "uncoalesced-global-access" and f.function == "transpose_naive"]


def test_a_prediction_does_not_raise_a_hint_whose_benefit_the_card_leaves_unproven() -> None:
    """precise-math-call is a declared hint whose gain needs an arithmetic-bound kernel, which no check decides: a
    prediction of 1.2x on a memory-bound softmax does not make it a warning; a verified result does (issue 18)."""
    from warpwise.skills.model import Axis
    from warpwise.skills.presentation import unproven_benefit, why_shown
    from warpwise.skills.regions import PreconditionVerdict, VerdictStatus

    def v(kind: str, status: VerdictStatus, pid: str) -> PreconditionVerdict:
        return PreconditionVerdict(pid, Axis.PIPELINE, "text", kind, status, "reason", True)

    verdicts = (
        v("soundness", VerdictStatus.UNKNOWN, "error-budget"),
        v("benefit", VerdictStatus.UNKNOWN, "arithmetic-bound"),
    )
    assert unproven_benefit(verdicts) == "arithmetic-bound"
    assert unproven_benefit(verdicts[:1]) is None, "an undecided soundness condition is not about the gain"
    assert unproven_benefit((v("benefit", VerdictStatus.HOLDS, "arithmetic-bound"),)) is None
    predicted = Outlook(1.22, 0.83, unproven_benefit="arithmetic-bound")
    assert shown_severity("precise-math-call", Severity.HINT, outlook=predicted) is Severity.HINT
    assert "arithmetic-bound" in why_shown(Severity.HINT, Severity.HINT, predicted, "performance")
    proven = Outlook(1.22, 0.83, measured_best=1.3)
    assert shown_severity("precise-math-call", Severity.HINT, outlook=proven) is Severity.WARNING
    verified = Outlook(1.22, 0.83, verified=True, unproven_benefit="arithmetic-bound")
    assert shown_severity("precise-math-call", Severity.HINT, outlook=verified) is Severity.WARNING
    # A card that declares a warning keeps what the prediction says: it did not call its own gain uncertain.
    assert shown_severity("scalar-global-access", Severity.WARNING, outlook=predicted) is Severity.WARNING


def test_neighbouring_accesses_and_views_count_in_the_traffic() -> None:
    """Four scalar loads `x[4t]` ... `x[4t + 3]` use every byte of the sectors they fetch, and a 16-byte view read
    from lanes 16 bytes apart is contiguous in bytes: neither multiplies the DRAM sectors (issue 18)."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.skills.traffic import access_traffic

    src = b"""
#define LD4(v) (reinterpret_cast<const float4 *>(&(v))[0])
__global__ void four(const float* x, float* y) {
  int t = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  y[t] = x[t];
  y[t + 1] = x[t + 1];
  y[t + 2] = x[t + 2];
  y[t + 3] = x[t + 3];
}
__global__ void one_of_four(const float* x, float* y) {
  int t = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  y[t] = x[t];
}
__global__ void rows(const float* x, float4* y, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  y[t] = LD4(x[t * n]);
}
"""
    model = analyze_text(src)

    def factors(kernel: str) -> list[float]:
        fn = model.function(kernel)
        out = []
        for acc in fn.accesses:
            got = access_traffic(model, kernel, fn.base + acc.span[0])
            if got is not None:
                out.append(got.factor)
        return out

    assert factors("four") and set(factors("four")) == {1.0}
    assert min(factors("one_of_four")) >= 4.0, "a lone load of every fourth float moves 4x the sectors"
    # A 16-byte view per lane from rows of at least one sector: 32 sectors where 16 would do, 2x, not 8x.
    assert factors("rows") == [2.0]


def test_a_prediction_raises_a_hint_only_for_a_card_measured_to_pay_off() -> None:
    """The model extrapolates: it predicted 1.4x for streaming-cache-hints, which no measurement ever showed, and
    the labelled set judged every such warning a no-op. A declared hint becomes a warning on a prediction only
    when the card's own evidence holds a speedup of at least MIN_SPEEDUP; a verified result always raises it."""
    from warpwise.skills.presentation import measured_best, why_shown

    assert measured_best([]) is None and measured_best([1.01, 1.4, 0.9]) == 1.4
    never = Outlook(1.41, 0.61, measured_best=None)
    small = Outlook(1.41, 0.61, measured_best=1.03)
    backed = Outlook(1.41, 0.61, measured_best=MIN_SPEEDUP)
    assert shown_severity("streaming-cache-hints", Severity.HINT, outlook=never) is Severity.HINT
    assert shown_severity("streaming-cache-hints", Severity.HINT, outlook=small) is Severity.HINT
    assert shown_severity("streaming-cache-hints", Severity.HINT, outlook=backed) is Severity.WARNING
    assert "never measured" in why_shown(Severity.HINT, Severity.HINT, never, "performance")
    verified = Outlook(1.41, 0.61, verified=True)
    assert shown_severity("streaming-cache-hints", Severity.HINT, outlook=verified) is Severity.WARNING
    # A card that declares a warning is not second-guessed by its evidence.
    assert shown_severity("scalar-global-access", Severity.WARNING, outlook=never) is Severity.WARNING


def test_an_index_overflow_is_a_warning_only_where_the_index_can_pass_int32(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from warpwise.engine import analyze_path
    from warpwise.presentation import present

    monkeypatch.setenv("WARPWISE_NO_RESOURCE_BUILDS", "1")
    path = tmp_path / "scale.cu"
    path.write_text(
        "__global__ void wide(float* x, size_t n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) x[i] = 0.0f;\n}\n"
        "__global__ void narrow(float* x, unsigned int rows, unsigned int cols) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < rows * cols) x[i] = 0.0f;\n}\n"
    )
    shown = {
        f.function: f.severity for f in present(analyze_path(str(path))).findings if f.rule == "int32-index-overflow"
    }
    # `n` is a 64-bit size: the index can pass 2^31. A 32-bit size shows no such array: the finding stays a hint.
    assert shown == {"wide": Severity.WARNING, "narrow": Severity.HINT}
