"""The gate's output comparison on the CPU: poisons, and values that happen to equal them."""

from __future__ import annotations

import torch

from warpwise.verify.types import BufferSpec, Role
from warpwise.verify.worker.device import (
    CANDIDATE_POISON,
    ORIGINAL_POISON,
    SECOND_CANDIDATE_POISON,
    compare,
    poison_bits,
    poison_lookalikes,
    written_under,
)

Q = BufferSpec("q", "u8", 8, Role.OUT)
TOL: dict[str, tuple[float, float]] = {}


def _bytes(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.uint8)


def test_the_three_poisons_of_every_dtype_differ() -> None:
    for dtype in ("f16", "bf16", "f32", "f64", "u8", "i16", "i32", "i64"):
        pats = {poison_bits(dtype, k) for k in (ORIGINAL_POISON, CANDIDATE_POISON, SECOND_CANDIDATE_POISON)}
        assert len(pats) == 3, dtype


def test_a_value_equal_to_the_poison_reads_as_unwritten_until_a_second_run_shows_it_written() -> None:
    p = poison_bits("u8", CANDIDATE_POISON)
    expected = _bytes(p, 3, p, 4, 5, 6, 7, 8)
    got = expected.clone()
    first = compare(Q, expected, got, 0, TOL, expected_poisoned=True)
    assert first is not None and "left unwritten" in first.reason and first.bad_elements == 2
    assert poison_lookalikes(Q, expected, got, CANDIDATE_POISON) == 2
    # The second run, under the second poison, wrote the same values: nothing is unwritten.
    written = written_under(Q, got, SECOND_CANDIDATE_POISON)
    assert compare(Q, expected, got, 0, TOL, expected_poisoned=True, written=written) is None


def test_an_element_unwritten_in_both_runs_stays_unwritten() -> None:
    p1 = poison_bits("u8", CANDIDATE_POISON)
    p2 = poison_bits("u8", SECOND_CANDIDATE_POISON)
    expected = _bytes(p1, p1, 1, 2, 3, 4, 5, 6)
    got = _bytes(p1, p1, 1, 2, 3, 4, 5, 6)
    again = _bytes(p1, p2, 1, 2, 3, 4, 5, 6)  # element 1 holds the second poison: never written
    m = compare(Q, expected, got, 0, TOL, expected_poisoned=True, written=written_under(Q, again, 2))
    assert m is not None and m.bad_elements == 1 and m.first_bad_index == 1
    assert "left unwritten" in m.reason


def test_a_different_value_is_a_mismatch_whatever_the_second_run_says() -> None:
    expected = _bytes(1, 2, 3, 4, 5, 6, 7, 8)
    got = _bytes(1, 2, 3, 9, 5, 6, 7, 8)
    m = compare(Q, expected, got, 0, TOL, expected_poisoned=True, written=torch.ones(8, dtype=torch.bool))
    assert m is not None and m.bad_elements == 1 and "differ" in m.reason


def test_the_original_is_judged_against_its_own_poison() -> None:
    # The original run starts from poison 0: a value equal to the candidate's poison is an ordinary value there.
    p1 = poison_bits("u8", CANDIDATE_POISON)
    expected = _bytes(p1, 1, 2, 3, 4, 5, 6, 7)
    assert compare(Q, expected, expected.clone(), 0, TOL, expected_poisoned=False, got_poison=ORIGINAL_POISON) is None
    p0 = poison_bits("u8", ORIGINAL_POISON)
    left = _bytes(p0, 1, 2, 3, 4, 5, 6, 7)
    m = compare(Q, expected, left, 0, TOL, expected_poisoned=False, got_poison=ORIGINAL_POISON)
    assert m is not None and "left unwritten" in m.reason


def test_float_outputs_use_the_same_second_run() -> None:
    f = BufferSpec("y", "f32", 4, Role.OUT)
    bits = torch.tensor([poison_bits("f32", CANDIDATE_POISON), 0, 0, 0], dtype=torch.int32)
    expected = bits.clone().view(torch.float32)
    got = bits.clone().view(torch.float32)
    assert compare(f, expected, got, 0, TOL, expected_poisoned=True) is not None
    written = written_under(f, got, SECOND_CANDIDATE_POISON)
    assert compare(f, expected, got, 0, TOL, expected_poisoned=True, written=written) is None
