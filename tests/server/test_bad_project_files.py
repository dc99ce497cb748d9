"""Hostile project files (issue 17): the editor names the file and the piece, and keeps analysing."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import KERNELS, Session
from warpwise.server.gate_adapter import build_flags
from warpwise.server.settings import DEFAULTS


def _hostile_project(root: Path) -> Path:
    (root / "pyproject.toml").write_text("[tool.warpwise]\ndefines = 3\n")
    (root / "compile_commands.json").write_text("[{not json")
    src = root / "kernels.cu"
    src.write_text('#include "absent_header.h"\n' + KERNELS.read_text())
    return src


async def test_a_wrong_config_key_a_malformed_compile_db_and_a_missing_header_leave_analysis_running(
    session: Session, tmp_path: Path
) -> None:
    src = _hostile_project(tmp_path)
    uri = session.open(src)
    codes = {str(d.code) for d in await session.static(uri)}
    assert {"missing-restrict", "uncoalesced-global-access"} <= codes
    # An edit is analysed too: the server is still there.
    version = session.change(uri, (0, 0), (0, 0), "// edited\n")
    assert {str(d.code) for d in await session.static(uri, version)} == codes


def test_the_build_flags_of_a_hostile_project_name_each_file_and_key(tmp_path: Path) -> None:
    src = _hostile_project(tmp_path)
    problems = [str(p) for p in build_flags(str(src), DEFAULTS).problems]
    assert any(str(tmp_path / "pyproject.toml") in p and "`tool.warpwise.defines`" in p for p in problems), problems
    assert any("compile_commands.json" in p and "not valid JSON" in p for p in problems), problems
