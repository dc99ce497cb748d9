"""Resource builds in their own process (issue 18): a compiler crash is an unconfirmed claim, and the language
server's builds run in the background, so the first one (NVRTC's start, seconds) never holds up an analysis."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.verify import resources
from warpwise.verify.resources import KernelResources, Unconfirmed

FAKE = Path(__file__).resolve().parent / "fake_resource_worker.py"
SOURCE_PATH = (
    Path(__file__).resolve().parents[2]
    / "skills"
    / "dynamic-local-array-index"
    / "fixtures"
    / "pos_heavy_accumulators.cu"
)
SOURCE = SOURCE_PATH.read_bytes()


@pytest.fixture
def fake_worker(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Point the resource builds at the stand-in worker, with fresh state; return a function that sets its args."""
    from warpwise.verify.worker import nvbuild

    monkeypatch.delenv(resources.ENV_DISABLE, raising=False)
    monkeypatch.setattr(nvbuild, "nvrtc_version", lambda: "NVRTC (test stand-in)")
    monkeypatch.setattr(resources, "_memo", type(resources._memo)())
    monkeypatch.setattr(resources, "_pending", set())
    monkeypatch.setattr(resources, "_listeners", [])
    monkeypatch.setattr(resources, "_cache_dir", lambda: None)
    monkeypatch.setattr(resources, "_nvrtc", [])
    worker = resources._Worker()
    monkeypatch.setattr(resources, "_worker", worker)

    def use(*args: str) -> None:
        monkeypatch.setenv(resources.ENV_WORKER, json.dumps([sys.executable, str(FAKE), *args]))

    yield use
    worker.close()


def test_a_compiler_crash_is_an_unconfirmed_claim_and_the_caller_lives_on(fake_worker) -> None:  # type: ignore[no-untyped-def]
    fake_worker("0", "crash")
    model = analyze_text(SOURCE, "acc.cu")
    got = resources.kernel_resources(model, "accumulate")
    assert isinstance(got, Unconfirmed) and "crashed" in got.reason, got
    # The next build starts a new process.
    fake_worker("0")
    other = analyze_text(SOURCE + b"\n// edited\n", "acc.cu")
    again = resources.kernel_resources(other, "accumulate")
    assert isinstance(again, KernelResources) and again.stack_bytes == 96


def test_background_builds_answer_at_once_and_tell_the_listeners(fake_worker, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    fake_worker("3")
    monkeypatch.setattr(resources, "_background", True)
    done = threading.Event()
    resources.add_listener(done.set)
    model = analyze_text(SOURCE, "acc.cu")
    uses = resources.pending_uses()
    t0 = time.perf_counter()
    first = resources.kernel_resources(model, "accumulate")
    assert time.perf_counter() - t0 < 1.0, "the caller waited for the build"
    assert first == Unconfirmed(resources.PENDING)
    assert resources.pending_uses() > uses
    assert done.wait(60), "no listener was called once the build answered"
    after = resources.kernel_resources(model, "accumulate")
    assert isinstance(after, KernelResources) and after.stack_bytes == 96


def test_held_builds_wait_for_the_release_then_run_in_order(fake_worker, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    fake_worker("0")
    monkeypatch.setattr(resources, "_background", True)
    monkeypatch.setattr(resources, "_held", None)
    answered = threading.Event()
    resources.add_listener(answered.set)
    resources.hold()
    model = analyze_text(SOURCE, "acc.cu")
    assert resources.kernel_resources(model, "accumulate") == Unconfirmed(resources.PENDING)
    # Held back: nothing runs, however long the caller waits (the server's first analysis).
    assert not answered.wait(1.0), "a build ran while the builds were held back"
    assert resources.kernel_resources(model, "accumulate") == Unconfirmed(resources.PENDING)
    resources.release()
    assert answered.wait(60), "the held build did not run after the release"
    after = resources.kernel_resources(model, "accumulate")
    assert isinstance(after, KernelResources) and after.stack_bytes == 96
    resources.release()  # A second release, with nothing held, is harmless.


def test_the_caller_asks_the_build_process_for_nvrtc_and_never_loads_it() -> None:
    """NVRTC is loaded only in the build process (the library takes about 40 MiB of the process that loads it):
    a caller that builds asks that process for its version instead, and holds no NVRTC binding itself."""
    script = f"""
import json, os, sys
os.environ.pop({resources.ENV_DISABLE!r}, None)
os.environ[{resources.ENV_WORKER!r}] = json.dumps([sys.executable, {str(FAKE)!r}, "0"])
from warpwise.analyzers.build import analyze_text
from warpwise.verify import resources
got = resources.kernel_resources(analyze_text(open({str(SOURCE_PATH)!r}, "rb").read(), "acc.cu"), "accumulate")
print(json.dumps([type(got).__name__, getattr(got, "compiler", ""), "cuda.bindings.nvrtc" in sys.modules]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    kind, compiler, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert (kind, compiler) == ("KernelResources", "NVRTC (test stand-in)"), done.stdout
    assert loaded is False


def test_without_nvrtc_in_the_build_process_claims_are_unconfirmed_and_it_is_not_kept(fake_worker) -> None:  # type: ignore[no-untyped-def]
    fake_worker("0", "no-nvrtc")
    got = resources.kernel_resources(analyze_text(SOURCE, "acc.cu"), "accumulate")
    assert isinstance(got, Unconfirmed) and "no CUDA compiler" in got.reason, got
    assert resources._worker._proc is None
