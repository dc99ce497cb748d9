"""The server analyses the CUDA strings of a Python file's `load_inline` call at the Python file's positions."""

from __future__ import annotations

from lsprotocol import types

from tests.conftest import FIXTURES
from tests.server.conftest import Session

INLINE = FIXTURES / "realworld" / "inline" / "model_new.py"


async def test_hover_on_a_kernel_inside_a_load_inline_string(session: Session) -> None:
    uri = session.open(INLINE, language_id="python")
    await session.static(uri)
    lines = INLINE.read_text().splitlines()
    line = next(i for i, ln in enumerate(lines) if ln.startswith("__global__ void elementwise_add_kernel"))
    column = lines[line].index("elementwise_add_kernel") + 3
    hover = await session.hover(uri, line, column)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "**kernel `elementwise_add_kernel`**" in hover.contents.value
    assert hover.range is not None and hover.range.start.line == line
