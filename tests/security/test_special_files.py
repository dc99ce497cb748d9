"""`warpwise check` on hostile inputs: FIFOs, devices, symlinks to them, huge files in every mode, many files.

Reproducers: a FIFO or a `/dev/zero` symlink named `.cu` hung `check` (3.2 GB in 8 s); `--diff`/`--fix` had no
size limit (a 20 MiB file ran past 300 s); memory grew with the number of files. Each is now skipped with a
message, bounded, or streamed.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from warpwise import engine
from warpwise.cli import main

TIMEOUT_S = 60


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warpwise", "check", *args], capture_output=True, text=True, timeout=TIMEOUT_S
    )


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "pipe.cu")
    (tmp_path / "zero.cu").symlink_to("/dev/zero")
    (tmp_path / "kernel.cu").write_bytes((EXAMPLES / "vector_ops.cu").read_bytes())
    return tmp_path


@pytest.mark.parametrize("mode", [[], ["--diff"], ["--format", "json"], ["--format", "sarif"]])
def test_fifos_and_devices_are_skipped_with_a_message(hostile: Path, mode: list[str]) -> None:
    proc = check(*mode, str(hostile))
    assert proc.returncode == 2, proc.stderr
    out = proc.stdout + proc.stderr
    assert f"{hostile / 'pipe.cu'}: error: skipped: a FIFO, not a regular file" in out
    assert f"{hostile / 'zero.cu'}: error: skipped: a character device, not a regular file" in out
    if not mode:
        assert "kernel `saxpy`" in proc.stdout


def test_a_fifo_named_directly_is_skipped(hostile: Path) -> None:
    proc = check("--fix", str(hostile / "pipe.cu"))
    assert proc.returncode == 2 and "skipped: a FIFO" in proc.stderr


@pytest.mark.parametrize("mode", [["--diff"], ["--fix"], []])
def test_the_size_limit_applies_to_every_mode(tmp_path: Path, mode: list[str]) -> None:
    big = tmp_path / "big.cu"
    big.write_bytes(b"// padding\n" * (2 * 2**20 // 11 + 1))
    proc = check(*mode, "--max-file-size", "1", str(big))
    assert proc.returncode == 2
    assert f"{big}: error: skipped: the file is 2.0 MiB, over the 1 MiB limit" in proc.stdout + proc.stderr
    assert big.stat().st_size > 2**20 and b"padding" in big.read_bytes()[:20]


@pytest.mark.parametrize("size", ["1e308", "0", "-1", "nan"])
def test_an_absurd_size_limit_is_refused_with_a_message(tmp_path: Path, size: str) -> None:
    proc = check("--max-file-size", size, str(EXAMPLES / "vector_ops.cu"))
    assert proc.returncode == 2 and "--max-file-size" in proc.stderr and "MiB" in proc.stderr


def test_a_file_that_grows_past_the_limit_while_read_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "k.cu"
    path.write_bytes(b"x" * 100)
    problem = engine.read_source(str(path), max_bytes=50)
    assert isinstance(problem, engine.InputProblem) and "over the" in problem.message
    assert engine.read_source(str(path), max_bytes=100) == b"x" * 100


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_check_keeps_one_file_in_memory_at_a_time(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(5):
        (tmp_path / f"k{i:02}.cu").write_bytes((EXAMPLES / "vector_ops.cu").read_bytes())
    real = engine.analyze_path
    alive_before: list[int] = []

    def tracked(*args, **kwargs):
        gc.collect()
        alive_before.append(sum(1 for o in gc.get_objects() if type(o) is engine.FileReport))
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "analyze_path", tracked)
    assert main(["check", "--format", fmt, str(tmp_path)]) == 1
    assert len(alive_before) == 5
    # The model of the previous file may still be referenced by the loop's variable; none older is.
    assert max(alive_before) <= 1, alive_before
    assert "k04.cu" in capsys.readouterr().out
