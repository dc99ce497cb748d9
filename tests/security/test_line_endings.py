"""Line endings as LSP defines them: `\\n`, `\\r\\n` and a lone `\\r` all end a line.

Reproducer: a file with lone `\\r` line endings had its diagnostics on the wrong lines (every finding on line 1).
"""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES
from warpwise import engine
from warpwise.analyzers.model import LineIndex, Position

# The kernels of the example without its preprocessor lines (a directive ends at `\n` in the grammar).
SOURCE = "\n".join(ln for ln in (EXAMPLES / "vector_ops.cu").read_text().split("\n") if not ln.startswith("#"))


def findings_by_line(data: bytes) -> list[tuple[str, int, int]]:
    report = engine.analyze_model(engine.parsed_model(data, "k.cu"), None)
    out = []
    for f in report.findings:
        pos = report.model.lines.position(f.span[0])
        out.append((f.rule, pos.line, pos.character))
    return sorted(out)


@pytest.mark.parametrize("eol", ["\r\n", "\r"])
def test_findings_land_on_the_same_lines_whatever_the_line_ending(eol: str) -> None:
    want = findings_by_line(SOURCE.encode())
    assert want and len({line for _, line, _ in want}) > 3
    assert findings_by_line(SOURCE.replace("\n", eol).encode()) == want


def test_positions_and_offsets_follow_lsp_line_endings() -> None:
    lines = LineIndex(b"a\r\nbc\rd\ne")
    assert lines.line_count == 4
    assert [lines.position(o) for o in (0, 3, 6, 8)] == [Position(0, 0), Position(1, 0), Position(2, 0), Position(3, 0)]
    # A column past the end of a line stops before its terminator.
    assert lines.offset(Position(0, 9)) == 1 and lines.offset(Position(1, 9)) == 5 and lines.offset(Position(2, 9)) == 7
