"""What a keystroke reuses from the previous version is what a fresh analysis would compute.

The analysis lane keeps one document and its caches across versions: the model reuses unchanged functions, the
match cache their matches (the same match objects where nothing moved), the card provider the items built for
those matches, and the quiet default its severities and contenders per item. Here every version of a few edited
files goes through a warm lane and through a fresh one (new document, providers and caches), and the items and
the published diagnostics must be equal; and the reuse must really happen for functions the edit did not touch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_lsp import client_capabilities

from warpwise.analyzers.model import Position
from warpwise.server.analysis import Analysis, AnalysisLane
from warpwise.server.app import create_server
from warpwise.server.documents import OpenDocument
from warpwise.server.features.diagnostics import static_diagnostics_json
from warpwise.server.providers import CardProvider, RuleProvider
from warpwise.server.settings import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "examples").glob("*.cu"))


def _insertions(text: str) -> list[tuple[int, str]]:
    """Return (line, text) insertions at the start of a line: one inside the file, then a line on top."""
    return [(len(text.splitlines()) // 2, " "), (0, "// top\n")]


class _Pipeline:
    """One document through an analysis lane and the publishing code, as the server runs them."""

    def __init__(self, path: Path, text: str, version: int = 1) -> None:
        self.server = create_server()
        self.server.client.read(client_capabilities("visual-studio-code"))
        self.lane = AnalysisLane([RuleProvider(), CardProvider()], lambda r: None, lambda e: None)
        self.doc = OpenDocument(path.resolve().as_uri(), str(path), "cuda-cpp", version, text.encode())

    def analyse(self) -> tuple[Analysis, str]:
        """Analyse the document's current version; return the analysis and the published diagnostics."""
        result = self.lane._process(self.doc.snapshot(DEFAULTS, 0))
        assert isinstance(result, Analysis)
        diags = static_diagnostics_json(self.server.client, result, self.doc.uri, self.server.verification)
        return result, json.dumps(diags, sort_keys=True)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_warm_versions_publish_what_a_fresh_analysis_does(path: Path) -> None:
    text = path.read_text()
    warm = _Pipeline(path, text)
    warm.analyse()
    done: list[tuple[int, str]] = []
    # Each insertion, then each undone in reverse: a function changes, all move, they move back, the text returns.
    steps = [(line, inserted, True) for line, inserted in _insertions(text)]
    steps += [(line, inserted, False) for line, inserted in reversed(_insertions(text))]
    for line, inserted, insert in steps:
        if insert:
            warm.doc.apply_range(Position(line, 0), Position(line, 0), inserted)
            done.append((line, inserted))
        else:
            end = Position(line + 1, 0) if inserted.endswith("\n") else Position(line, len(inserted))
            warm.doc.apply_range(Position(line, 0), end, "")
        warm.doc.version += 1
        got, published = warm.analyse()
        fresh, expected = _Pipeline(path, warm.doc.text.decode(), warm.doc.version).analyse()
        assert got.items == fresh.items, f"{path.name}: items differ after an edit at line {line}"
        assert published == expected, f"{path.name}: diagnostics differ after an edit at line {line}"
    assert warm.doc.text.decode() == text


def test_items_of_untouched_functions_are_reused() -> None:
    path = ROOT / "examples" / "vector_ops.cu"
    text = path.read_text()
    warm = _Pipeline(path, text)
    before, _ = warm.analyse()
    cards = [i for i in before.items if i.source == "card"]
    assert len({i.function for i in cards}) >= 2, "the file should have card findings in several functions"
    # A comment after the last function: no function's text, context or place changes.
    end = len(text.splitlines())
    warm.doc.apply_range(Position(end, 0), Position(end, 0), "// the end\n")
    warm.doc.version += 1
    after, _ = warm.analyse()
    kept = {(i.id, i.span): i for i in after.items if i.source == "card"}
    for item in cards:
        assert kept[(item.id, item.span)] is item, f"{item.id} in `{item.function}` was built again"
