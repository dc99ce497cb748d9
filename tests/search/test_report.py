"""The report's edit, the guardrails for generated kernels, and the reward rules."""

from __future__ import annotations

import math

from tests.search.fakes import recorded
from warpwise.search.guardrails import screen_text
from warpwise.search.report import minimal_edit
from warpwise.search.reward import FAILURE_PENALTY, reward_of, time_saved
from warpwise.verify.types import Status

START = "__global__ void k(float* x) {\n  x[threadIdx.x] *= 2.0f;\n}\n"


def test_minimal_edit_is_one_range_on_whole_characters() -> None:
    after = START.replace("2.0f", "3.0f")
    e = minimal_edit("k.cu", START, after)
    assert e is not None and (e.start, e.end, e.text) == (START.index("2.0f"), START.index("2.0f") + 1, "3")
    before, later = "// é\nx\n", "// è\nx\n"
    e = minimal_edit("k.cu", before, later)
    data = before.encode()
    assert e is not None and (data[: e.start] + e.text.encode() + data[e.end :]).decode() == later
    assert minimal_edit("k.cu", START, START) is None


def test_guardrails() -> None:
    assert screen_text(START, START.replace("*=", "+=")) is None
    assert "variable" in screen_text(START, "__device__ float memo[64];\n" + START)
    assert "static" in screen_text(START, START.replace("  x[", "  static float last = 0;\n  x["))
    assert "CUDA runtime" in screen_text(START, START.replace("  x[", "  cudaStream_t s;\n  x["))
    assert "exits or traps" in screen_text(START, START.replace("  x[", '  asm volatile("exit;");\n  x['))
    # What the start already has is not held against the candidate.
    memo = "__device__ float memo[64];\n" + START
    assert screen_text(memo, memo.replace("2.0f", "4.0f")) is None
    # `__device__` functions are not state.
    assert screen_text(START, "__device__ float twice(float v) { return 2 * v; }\n" + START) is None


def test_reward_rules() -> None:
    assert math.isclose(reward_of(recorded(2.0)).value, 0.5)
    assert reward_of(recorded(1.003)).value == 0.0
    slower = reward_of(recorded(0.5))
    assert slower.value == -1.0 and not slower.terminal
    for status in ("incorrect", "compile_failed", "launch_failed", "timed_out", "crashed"):
        r = reward_of(recorded(status))
        assert r.value == FAILURE_PENALTY and r.terminal
    no_gpu = reward_of(recorded("no_gpu"))
    assert no_gpu.value == 0.0 and not no_gpu.terminal and Status.NO_GPU.value == "no_gpu"
    assert time_saved(4.0) == 0.75 and time_saved(0.25) == -1.0
