"""Timing conditions from readings of the GPU (no GPU needed: a reader that plays one back)."""

from __future__ import annotations

from warpwise.verify.worker import gpu_state
from warpwise.verify.worker.gpu_state import Reading, Sampler


class Replay:
    """A reader that returns recorded readings, the last one forever."""

    source = "nvml"
    interval_s = 0.001

    def __init__(self, *readings: Reading) -> None:
        self.readings = list(readings)

    def read(self) -> Reading:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


def conditions(*readings: Reading) -> gpu_state.TimingConditions:
    with Sampler(Replay(*readings)) as s:
        pass
    return s.conditions(1)


def test_a_steady_exclusive_gpu_is_settled() -> None:
    c = conditions(Reading(1980, 40, 1), Reading(1965, 44, 1))
    assert gpu_state.unsettled(c) == ""
    assert (c.sm_mhz_before, c.sm_mhz_after, c.temp_c_max, c.other_processes) == (1980, 1965, 44, 0)


def test_a_clock_that_moved_more_than_five_percent_is_unsettled() -> None:
    c = conditions(Reading(1980, 40, 1), Reading(1700, 60, 1))
    assert gpu_state.unsettled(c) == "the SM clock moved 14% (1700-1980 MHz)"


def test_another_process_on_the_gpu_is_unsettled() -> None:
    c = conditions(Reading(1980, 40, 1), Reading(1980, 40, 3))
    assert gpu_state.unsettled(c) == "2 other processes used the GPU"


def test_unreadable_state_is_said_and_not_retried() -> None:
    with Sampler(None, "nvml: ImportError") as s:
        pass
    c = s.conditions(1)
    assert c.source == "none" and "could not be read (nvml: ImportError)" in c.note
    assert gpu_state.unsettled(c) == ""
