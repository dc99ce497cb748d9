"""A file built with fast math gets no `precise-math-call` finding: nvcc already compiles `expf` to `__expf` there
(issue 18: a finding whose own preconditions say it changes nothing is not shown). The flags are read the way the
gate reads them: the project configuration, then the file's compile_commands.json entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warpwise.engine import FileReport, analyze_path
from warpwise.verify.project import fast_math_origin, parse_command_line

KERNEL = b"""__global__ void softmax_exp(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = expf(x[i]) + sinf(x[i]);
}
"""


def _calls(path: Path) -> list[str]:
    report = analyze_path(str(path), {"precise-math-call"})
    assert isinstance(report, FileReport)
    return sorted(f.message.split("(")[0].strip("`") for f in report.findings if f.rule == "precise-math-call")


def test_default_build_keeps_the_finding(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_bytes(KERNEL)
    assert fast_math_origin(src) is None
    assert _calls(src) == ["expf", "sinf"]


@pytest.mark.parametrize("flag", ["--use_fast_math", "-use_fast_math"])
def test_project_configuration_with_fast_math_silences_the_card(tmp_path: Path, flag: str) -> None:
    (tmp_path / "warpwise.toml").write_text(f'nvcc-flags = ["-O3", "{flag}"]\n')
    src = tmp_path / "src" / "k.cu"
    src.parent.mkdir()
    src.write_bytes(KERNEL)
    origin = fast_math_origin(src)
    assert origin is not None and flag in origin and "warpwise.toml" in origin
    assert _calls(src) == []


def test_compile_commands_with_fast_math_silences_the_card(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_bytes(KERNEL)
    other = tmp_path / "other.cu"
    other.write_bytes(KERNEL)
    db = [
        {"directory": str(tmp_path), "file": "k.cu", "command": "nvcc -O3 --use_fast_math -c k.cu"},
        {"directory": str(tmp_path), "file": "other.cu", "arguments": ["nvcc", "-O3", "-c", "other.cu"]},
    ]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    assert _calls(src) == []
    assert _calls(other) == ["expf", "sinf"], "only the entry that asks for fast math changes the answer"


def test_a_changed_configuration_is_read_again(tmp_path: Path) -> None:
    cfg = tmp_path / "warpwise.toml"
    cfg.write_text('nvcc-flags = ["--use_fast_math"]\n')
    src = tmp_path / "k.cu"
    src.write_bytes(KERNEL)
    assert _calls(src) == []
    cfg.write_text('nvcc-flags = ["-O3"]\n')
    import os

    st = cfg.stat()
    os.utime(cfg, (st.st_atime, st.st_mtime + 5))
    assert _calls(src) == ["expf", "sinf"]


def test_command_lines_keep_both_spellings_of_fast_math(tmp_path: Path) -> None:
    for flag in ("--use_fast_math", "-use_fast_math"):
        assert parse_command_line(["-O3", flag, "-c", "k.cu"], tmp_path).fast_math() == flag
    assert parse_command_line(["-O3", "-c", "k.cu"], tmp_path).fast_math() is None
