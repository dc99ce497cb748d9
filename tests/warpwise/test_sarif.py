"""`warpwise check --format sarif`: valid SARIF 2.1.0 (the OASIS schema), with fingerprints, rule help, precondition
verdicts in the message, and `fixes` for safe fixes only."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema

from warpwise.engine import analyze_model, parsed_model
from warpwise.report import render_sarif

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())

SOURCE = """#include <cuda_runtime.h>
__global__ void taps(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 32 < n) {
    float acc = 0.0f;
    for (int k = 0; k < 32; ++k) {
      float v = x[i + k];
      acc += sqrtf(fabsf(v)) + expf(-v) + logf(1.0f + v * v) + sinf(v) * cosf(v);
    }
    y[i] = acc;
  }
}
__global__ void scale(float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 2.0;
}
"""


def _sarif(text: str, path: str = "src/k.cu") -> dict[str, Any]:
    report = analyze_model(parsed_model(text.encode(), path))
    out = io.StringIO()
    render_sarif([report], [], out)
    return json.loads(out.getvalue())


def test_the_log_is_valid_sarif_2_1_0() -> None:
    log = _sarif(SOURCE)
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert log["runs"][0]["results"], "the example has findings"


def test_the_schema_check_would_catch_a_malformed_log() -> None:
    log = _sarif(SOURCE)
    log["runs"][0]["results"][0]["level"] = "severe"
    assert list(jsonschema.Draft4Validator(SCHEMA).iter_errors(log))


def test_examples_log_is_valid_sarif(tmp_path: Path) -> None:
    from warpwise.engine import FileReport, analyze_path, collect_sources

    files, _ = collect_sources([str(ROOT / "examples")])
    reports = [r for r in (analyze_path(f) for f in files) if isinstance(r, FileReport)]
    out = io.StringIO()
    render_sarif(reports, [], out)
    jsonschema.Draft4Validator(SCHEMA).validate(json.loads(out.getvalue()))


def test_rules_carry_help() -> None:
    rules = {r["id"]: r for r in _sarif(SOURCE)["runs"][0]["tool"]["driver"]["rules"]}
    card = rules["constant-trip-loop-without-unroll"]
    assert card["help"]["text"] and "#pragma unroll" in card["help"]["markdown"]
    assert card["fullDescription"]["text"]
    assert rules["unused-suppression"]["help"]["markdown"].startswith("A suppression comment")


def test_card_results_carry_verdicts_in_the_message_and_safe_fixes_only() -> None:
    results = _sarif(SOURCE)["runs"][0]["results"]
    unroll = next(r for r in results if r["ruleId"] == "constant-trip-loop-without-unroll")
    assert "Preconditions checked against this code:" in unroll["message"]["text"]
    assert "Fix (safe): " in unroll["message"]["text"]
    assert unroll["properties"]["applicability"] == "safe"
    assert {p["verdict"] for p in unroll["properties"]["preconditions"]} <= {"holds", "unknown", "violated"}
    (fix,) = unroll["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "src/k.cu"
    assert any("#pragma unroll" in r["insertedContent"]["text"] for r in change["replacements"])
    for r in results:
        if r.get("properties", {}).get("applicability") != "safe":
            assert "fixes" not in r, f"{r['ruleId']} is not safe and must not carry a fix"


def test_fingerprints_survive_code_moving_and_tell_results_apart() -> None:
    before = _sarif(SOURCE)["runs"][0]["results"]
    after = _sarif("// a new comment\n\n" + SOURCE)["runs"][0]["results"]

    def keys(results: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return sorted((r["ruleId"], r["partialFingerprints"]["warpwiseFindingHash/v1"]) for r in results)

    assert keys(before) == keys(after)
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in before] != [
        r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after
    ]
    prints = [r["partialFingerprints"]["warpwiseFindingHash/v1"] for r in before]
    assert len(prints) == len(set(prints))
    changed = _sarif(SOURCE.replace("x[i] * 2.0", "x[i] * 3.0"))["runs"][0]["results"]
    double = [r for r in before if r["ruleId"] == "double-literal-promotion"]
    double2 = [r for r in changed if r["ruleId"] == "double-literal-promotion"]
    assert double[0]["partialFingerprints"] != double2[0]["partialFingerprints"]
