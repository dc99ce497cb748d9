"""The editor's `verification.rtol` / `verification.atol` reach the gate: its options, its cache key, its checks."""

from __future__ import annotations

from tests.verify.helpers import candidate, variant
from warpwise.server.settings import DEFAULTS, parse_settings
from warpwise.server.verification import verify_options
from warpwise.verify.gate import PreparedJob, prepare
from warpwise.verify.types import TOLERANCES, Options, tolerances_for


def test_without_a_tolerance_the_defaults_hold() -> None:
    assert tolerances_for(Options()) == TOLERANCES


def test_the_tolerance_sets_float32_and_only_loosens_half_precision() -> None:
    tight = tolerances_for(Options(tolerance=(1e-6, 1e-7)))
    assert tight["f32"] == (1e-6, 1e-7)
    assert tight["f16"] == TOLERANCES["f16"] and tight["bf16"] == TOLERANCES["bf16"]
    assert tight["f64"] == TOLERANCES["f64"]
    loose = tolerances_for(Options(tolerance=(5e-2, 1e-2)))
    assert loose["f16"] == (5e-2, 1e-2) and loose["bf16"] == (5e-2, 1e-2)


def test_a_problem_files_tolerance_wins() -> None:
    table = tolerances_for(Options(tolerance=(1e-6, 1e-7)), (("f32", 1e-3, 1e-3),))
    assert table["f32"] == (1e-3, 1e-3)


def test_the_tolerance_is_part_of_the_cache_key() -> None:
    c = candidate(variant(3))
    plain, same, other = (
        prepare(c, Options(compile_only=True, tolerance=t)) for t in (None, (1e-4, 1e-5), (1e-3, 1e-5))
    )
    assert isinstance(plain, PreparedJob) and isinstance(same, PreparedJob) and isinstance(other, PreparedJob)
    assert len({plain.key.spec_hash, same.key.spec_hash, other.key.spec_hash}) == 3
    assert other.job.options.tolerance == (1e-3, 1e-5)


def test_the_servers_verification_options_carry_the_settings() -> None:
    assert verify_options(DEFAULTS).tolerance == (1e-4, 1e-5) == TOLERANCES["f32"]
    settings, problems = parse_settings({"verification": {"rtol": 1e-3, "atol": 1e-4}})
    assert not problems
    options = verify_options(settings)
    assert options.tolerance == (1e-3, 1e-4)
    assert options.time_limit_s == settings.compiler_timeout_seconds


def test_a_problem_files_tolerance_reaches_the_run_spec(tmp_path) -> None:
    # `tolerance = (rtol, atol)` in a problem file is the problem's own statement of a correct output: the spec
    # carries it (float32 as written, half precision never stricter than its default), so the gate compares with
    # it and its cache key changes with it. Anything but a literal pair of finite non-negative numbers is ignored.
    from warpwise.analyzers.build import analyze_text
    from warpwise.verify.spec import ProblemSpec, problem_tolerance, resolve_spec

    src = tmp_path / "k.cu"
    src.write_text(
        "__global__ void k(float *y, const float *x, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }\n"
    )
    body = (
        "import torch\nkernel = 'k'\n{tol}\n"
        "def make_inputs(seed):\n    x = torch.rand(8)\n    return {{'y': torch.empty(8), 'x': x, 'n': 8}}\n"
        "def reference(inputs):\n    return {{'y': inputs['x']}}\n"
        "def launch(inputs):\n    return (1, 1, 1), (8, 1, 1)\n"
    )
    specs = []
    for tol in ("tolerance = (1e-2, 5e-2)", "tolerance = (1e-6, 1e-7)", "", "tolerance = compute()"):
        (tmp_path / "k.problem.py").write_text(body.format(tol=tol))
        model = analyze_text(src.read_bytes(), str(src))
        spec = resolve_spec(str(src), src.read_bytes(), "k", model)
        assert isinstance(spec, ProblemSpec) and spec.source == "problem_file"
        specs.append(spec.run.tolerances)
    loose, tight, none, opaque = specs
    assert dict((d, (r, a)) for d, r, a in loose)["f32"] == (1e-2, 5e-2)
    assert tolerances_for(Options(), loose)["f16"] == (max(1e-2, TOLERANCES["f16"][0]), 5e-2)
    assert tolerances_for(Options(), tight)["f32"] == (1e-6, 1e-7)
    assert tolerances_for(Options(), tight)["f16"] == TOLERANCES["f16"]  # half precision allows no less
    assert none == () and opaque == ()
    for bad in ("tolerance = (True, 1)", "tolerance = (-1, 0)", "tolerance = (1e999, 0)", "tolerance = 'x'", "("):
        assert problem_tolerance(bad) is None, bad
