"""Resource builds run the compiler in a child process: a compiler crash is an unconfirmed claim, never a crash."""

from __future__ import annotations

import pytest

from warpwise.verify import resources
from warpwise.verify.types import Source


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "_cache_dir", lambda: None)
    monkeypatch.setattr(resources, "_compiler", resources._Compiler())


def test_a_compiler_that_segfaults_gives_an_unconfirmed_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "_CHILD", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    got = resources._isolated_build(Source("__global__ void k() {}\n", "k", "k.cu"), "sm_90")
    assert isinstance(got, resources.Unconfirmed)
    assert "crashed building `k`" in got.reason and "signal 11" in got.reason


def test_a_child_without_a_report_gives_an_unconfirmed_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "_CHILD", "print('not json')\n")
    got = resources._isolated_build(Source("__global__ void k() {}\n", "k", "k.cu"), "sm_90")
    assert isinstance(got, resources.Unconfirmed)
    assert "gave no report" in got.reason


def test_the_child_builds_what_the_parent_would() -> None:
    from warpwise.verify.worker import nvbuild

    if nvbuild.nvrtc_version() is None:
        pytest.skip("NVRTC (cuda-bindings) is not installed")
    got = resources._isolated_build(Source("__global__ void k(float* p) { p[0] = 1.0f; }\n", "k", "k.cu"), "sm_90")
    assert not isinstance(got, resources.Unconfirmed)
    assert got.info.ok and got.info.registers is not None
    # The child stays up for the next build.
    again = resources._isolated_build(Source("__global__ void k(int* p) { p[1] = 2; }\n", "k", "k.cu"), "sm_90")
    assert not isinstance(again, resources.Unconfirmed) and again.info.ok


def test_a_child_that_crashed_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "_CHILD", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    src = Source("__global__ void k() {}\n", "k", "k.cu")
    assert isinstance(resources._isolated_build(src, "sm_90"), resources.Unconfirmed)
    monkeypatch.setattr(resources, "_CHILD", "import sys\nfor line in sys.stdin:\n    print('{}', flush=True)\n")
    got = resources._isolated_build(src, "sm_90")
    assert isinstance(got, resources.Unconfirmed) and "gave no report" in got.reason
