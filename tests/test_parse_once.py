"""A `SourceFile` is parsed once per version: the invariant, counted at tree-sitter's one entry point.

`warpwise.analyzers.parse.parse_tree` is the only call of tree-sitter's parser (the last test checks that no
other module creates or calls a parser); counting its calls shows what each step costs: one `warpwise check` of a
file parses it once, resolving a fix parses nothing, and the gate's preparation of a candidate parses the
candidate once when the caller hands it the original's model.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, ROOT
from warpwise.analyzers import parse
from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import Position
from warpwise.analyzers.parse import CudaDocument, SourceFile, TextEdit
from warpwise.cli import main
from warpwise.engine import analyze_model, parsed_model
from warpwise.skills.engine import compute_fix
from warpwise.verify.gate import Candidate, PreparedJob, prepare
from warpwise.verify.types import Options


class Parses:
    """The texts tree-sitter was asked to parse since the counter was installed."""

    def __init__(self) -> None:
        self.texts: list[bytes] = []

    @property
    def count(self) -> int:
        """Return how many parses ran."""
        return len(self.texts)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[Parses]:
    """Count the calls of `parse_tree` (and keep the texts they parsed)."""
    seen = Parses()
    real = parse.parse_tree

    def counting(data: bytes, *args: Any, **kwargs: Any) -> Any:
        seen.texts.append(bytes(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(parse, "parse_tree", counting)
    yield seen


def test_check_of_a_file_parses_it_once(parses: Parses, capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "vector_ops.cu"
    code = main(["check", str(path), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out, "the example has findings (the check did its work)"
    assert parses.texts == [path.read_bytes()]


def _card_fixture_files() -> list[Path]:
    cards = ROOT / "skills"
    return sorted(p for p in cards.glob("*/fixtures/*.cu") if not p.name.endswith(".expected.cu"))


def test_resolving_fixes_parses_nothing(parses: Parses) -> None:
    resolved = 0
    for path in _card_fixture_files():
        model = parsed_model(path.read_bytes(), str(path))
        report = analyze_model(model)
        before = parses.count
        for m in report.matches:
            if m.has_rewrite and compute_fix(model, m) is not None:
                resolved += 1
        assert parses.count == before, f"resolving the fixes of {path.name} parsed the file again"
    assert resolved > 20, "the card fixtures exercise the rewrites"


ORIGINAL = """__global__ void scale(const float* x, float* y, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s;
}

void run() {
  const int n = 1 << 20;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  scale<<<(n + 255) / 256, 256>>>(x, y, n, 2.0f);
}
"""
CANDIDATE = ORIGINAL.replace("const float* x, float* y, int n", "const float* __restrict__ x, float* y, int n")


@pytest.mark.parametrize("text_only", [False, True], ids=["original parsed", "original as text"])
def test_gate_preparation_parses_the_candidate_once(parses: Parses, text_only: bool) -> None:
    model = analyze_text(ORIGINAL, "scale.cu")
    before = parses.count
    c = Candidate("scale.cu", ORIGINAL, "scale", CANDIDATE, "scale.cu", original_model=None if text_only else model)
    prepared = prepare(c, Options(compile_only=True))
    assert isinstance(prepared, PreparedJob)
    assert prepared.spec is not None and prepared.spec.source == "inferred", "the spec came from the launch site"
    expected = [ORIGINAL.encode(), CANDIDATE.encode()] if text_only else [CANDIDATE.encode()]
    assert parses.texts[before:] == expected


def test_gate_reparses_a_model_of_other_text(parses: Parses) -> None:
    stale = analyze_text(ORIGINAL.replace("* s", "* 2.0f"), "scale.cu")
    before = parses.count
    c = Candidate("scale.cu", ORIGINAL, "scale", CANDIDATE, "scale.cu", original_model=stale)
    assert isinstance(prepare(c, Options(compile_only=True)), PreparedJob)
    assert parses.texts[before:] == [ORIGINAL.encode(), CANDIDATE.encode()], "a model of other text is not used"


def test_an_edit_yields_a_new_source_and_leaves_the_old_tree_alone(parses: Parses) -> None:
    doc = CudaDocument("scale.cu", ORIGINAL)
    first = doc.source
    old_sexp = str(first.tree.root_node)
    doc.apply([TextEdit(Position(2, 20), Position(2, 21), "z")])
    assert doc.source is not first and doc.source.text != first.text
    assert str(first.tree.root_node) == old_sexp and first.tree.root_node.end_byte == len(first.text)
    assert parses.count == 2, "the document parsed once per version"


def test_a_source_without_tree_parses_once_on_demand(parses: Parses) -> None:
    src = SourceFile(b"__global__ void k() {}")
    assert parses.count == 0
    assert src.tree is src.tree and parses.count == 1


def test_only_the_parse_module_runs_the_parser() -> None:
    offenders = []
    for folder in ("analyzers", "skills", "verify", "lineages", "ranking", "search", "server", "warpwise"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "analyzers" / "parse.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
                if name in ("new_parser", "parse_tree", "Parser"):
                    offenders.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')} uses {name}")
    assert offenders == [], "parse through SourceFile (analyzers/parse.py), not a parser of your own"
