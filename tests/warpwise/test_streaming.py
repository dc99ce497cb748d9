"""`warpwise check` streams text and JSON: each file is written as soon as it is analysed, and the streamed JSON is
byte for byte the document `json.dump(indent=2)` writes."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

import warpwise.engine
from warpwise.cli import main
from warpwise.engine import FileReport, InputProblem, analyze_path
from warpwise.report import JsonWriter, finding_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.cu"))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_each_file_is_written_before_the_next_is_analysed(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    seen: list[str] = []

    def analyze(path: str, *args: object, **kwargs: object) -> FileReport | InputProblem:
        seen.append(out.getvalue())
        return analyze_path(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(warpwise.engine, "analyze_path", analyze)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["check", "--format", fmt, *map(str, EXAMPLES)]) == 1
    assert len(seen) == len(EXAMPLES)
    for i, before in enumerate(seen):
        assert all(str(p) in before for p in EXAMPLES[:i]), f"file {i} was analysed before file {i - 1} was written"
        assert str(EXAMPLES[i]) not in before


def test_streamed_json_is_the_document_json_dump_writes() -> None:
    reports = [r for r in (analyze_path(str(p)) for p in EXAMPLES) if isinstance(r, FileReport)]
    problems = [InputProblem("missing.cu", "no such file or folder")]
    out = io.StringIO()
    writer = JsonWriter(out)
    for r in reports:
        writer.file(r)
    for p in problems:
        writer.problem(p)
    writer.finish()
    doc = {
        "version": warpwise.__version__,
        "files": [
            {
                "path": r.path,
                "kernels": [k.name for k in r.model.kernels],
                "findings": [finding_json(r, f) for f in r.findings],
            }
            for r in reports
        ],
        "problems": [{"path": p.path, "message": p.message} for p in problems],
    }
    assert out.getvalue() == json.dumps(doc, indent=2) + "\n"
    empty = io.StringIO()
    JsonWriter(empty).finish()
    assert (
        empty.getvalue() == json.dumps({"version": warpwise.__version__, "files": [], "problems": []}, indent=2) + "\n"
    )
