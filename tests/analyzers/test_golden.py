"""Golden regression: the full model and findings of every fixture, example and the anchor file never change.

The golden dumps were written by the analyzers before their performance work (issue 2); any optimisation must
leave every field of every function, access, loop, call, branch, launch and finding as it was, whether a
function is analysed fresh, reused from the cache, or re-analysed after an edit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.analyzers.golden import GOLDEN, dump_file, dump_model, dump_reanalysis, sources
from tests.conftest import ANCHOR
from warpwise.analyzers.build import analyze_document, analyze_text
from warpwise.analyzers.model import Position
from warpwise.analyzers.parse import CudaDocument, TextEdit

SOURCES = sources()


def _golden(name: str) -> object:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def _roundtrip(obj: object) -> object:
    """Return the dump as JSON reads it back (tuples become lists), for comparison with a golden file."""
    return json.loads(json.dumps(obj, sort_keys=True))


def _skip_if_missing(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is missing (the shared benchmark inputs are not checked out)")


@pytest.mark.parametrize(("name", "path"), SOURCES, ids=[n for n, _ in SOURCES])
def test_fresh_analysis_matches_golden(name: str, path: Path) -> None:
    _skip_if_missing(path)
    assert _roundtrip(dump_file(path)) == _golden(name)


@pytest.mark.parametrize(("name", "path"), SOURCES, ids=[n for n, _ in SOURCES])
def test_cached_reanalysis_matches_golden(name: str, path: Path) -> None:
    _skip_if_missing(path)
    assert _roundtrip(dump_reanalysis(path)) == _golden(name)


def test_anchor_edits_match_fresh_analysis_and_golden() -> None:
    _skip_if_missing(ANCHOR)
    positions = json.loads(Path(str(ANCHOR) + ".positions.json").read_text())
    edit = positions["edit_char"]
    start = Position(edit["line"], edit["character"])
    one = Position(start.line, start.character + 1)
    doc = CudaDocument(ANCHOR.name, ANCHOR.read_bytes())
    analyze_document(doc)
    for change in (
        TextEdit(start, one, edit["alt"]),
        TextEdit(start, one, edit["orig"]),
        TextEdit(start, start, " "),
        TextEdit(start, one, ""),
    ):
        doc.apply([change])
        after = dump_model(analyze_document(doc))
        assert after == dump_model(analyze_text(doc.data, ANCHOR.name))
    assert _roundtrip(after) == _golden("anchor_kernels.cu")
