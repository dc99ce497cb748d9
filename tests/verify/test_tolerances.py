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
