"""Bounded work: huge expressions degrade to a partial model with a message; absurd settings get their default.

Reproducers: a 60 KB kernel holding one 10,000-term sum took 13 s and 1.9 GB in the server (over two minutes
here before the budget); `analysis.maxFileSizeMiB: 1e308` stopped all analysis with no message.
"""

from __future__ import annotations

import time

import pytest

from warpwise import engine
from warpwise.analyzers.build import FUNCTION_NODE_BUDGET
from warpwise.server.settings import DEFAULTS, parse_settings

SMALL = "__global__ void small(float* y, int n) {\n  int i = threadIdx.x;\n  if (i < n) y[i] = 0.5 * y[i];\n}\n"


def big_sum(terms: int) -> str:
    body = " + ".join(f"x[i + {k}]" for k in range(terms))
    return (
        "__global__ void big(const float* x, float* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  if (i < n) y[i] = {body};\n}}\n"
    )


def test_a_ten_thousand_term_sum_is_analysed_partially_with_a_message() -> None:
    text = (big_sum(10_000) + SMALL).encode()
    assert len(text) > 60_000
    t0 = time.perf_counter()
    report = engine.analyze_model(engine.parsed_model(text, "big.cu"), None)
    elapsed = time.perf_counter() - t0
    budget = [f for f in report.findings if f.rule == "analysis-budget"]
    assert len(budget) == 1 and budget[0].function is None
    assert budget[0].message.startswith("`big` has ") and f"budget of {FUNCTION_NODE_BUDGET:,}" in budget[0].message
    assert report.model.lines.position(budget[0].span[0]).line == 0
    # The other kernel of the file is analysed in full.
    assert any(f.function == "small" and f.rule == "double-literal-promotion" for f in report.findings)
    assert elapsed < 10.0, f"{elapsed:.1f} s"


def test_kernels_under_the_budget_are_analysed_in_full() -> None:
    report = engine.analyze_model(engine.parsed_model(big_sum(50).encode(), "k.cu"), None)
    assert not [f for f in report.findings if f.rule == "analysis-budget"]
    fn = report.model.function("big")
    assert fn is not None and len(fn.accesses) >= 50


@pytest.mark.parametrize(
    "body",
    [
        "y[i] = " + "(" * 20_000 + "x[i]" + ")" * 20_000 + ";",
        "y[i] = " + "-" * 20_000 + "x[i];",
        "if (i) {" * 20_000 + "y[i] = x[i];" + "}" * 20_000,
    ],
    ids=["parentheses", "unary-minus", "nested-blocks"],
)
def test_deep_nesting_is_analysed_partially_without_recursing(body: str, caplog: pytest.LogCaptureFixture) -> None:
    # Twenty thousand levels: past Python's recursion limit if anything walked the tree recursively.
    text = f"__global__ void deep(const float* x, float* y, int i) {{ {body} }}\n{SMALL}".encode()
    t0 = time.perf_counter()
    report = engine.analyze_model(engine.parsed_model(text, "deep.cu"), None)
    elapsed = time.perf_counter() - t0
    assert [f.message.split(" has ")[0] for f in report.findings if f.rule == "analysis-budget"] == ["`deep`"]
    assert any(f.function == "small" and f.rule == "double-literal-promotion" for f in report.findings)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert elapsed < 10.0, f"{elapsed:.1f} s"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("analysis.maxFileSizeMiB", 1e308),
        ("analysis.maxFileSizeMiB", float("inf")),
        ("analysis.maxFileSizeMiB", 0),
        ("compiler.timeoutSeconds", 1e300),
        ("verification.gpuTimeBudgetSeconds", -5),
        ("verification.atol", 1e9),
        ("gpu.backend", "everywhere"),
        ("compiler.flags", "-O3"),
        ("log.level", 3),
    ],
)
def test_absurd_settings_get_a_message_and_their_default(key: str, value: object) -> None:
    settings, problems = parse_settings({key: value})
    assert [p.key for p in problems] == [key]
    assert "using the default" in problems[0].message
    assert settings == DEFAULTS
