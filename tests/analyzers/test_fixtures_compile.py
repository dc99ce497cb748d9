"""Every fixture and example meant to be valid CUDA compiles with nvcc for sm_90 (CI fails if one does not)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import CUDA_VALID, EXAMPLES, needs_nvcc

VALID = sorted(CUDA_VALID.glob("*.cu")) + sorted(EXAMPLES.glob("*.cu"))


@needs_nvcc
@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_source_compiles(path: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "-c", str(path), "-o", str(tmp_path / "out.o")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
