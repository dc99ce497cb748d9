"""A full structural dump of the kernel model and findings of one file, for golden regression tests.

The dump walks every public attribute of the model (dataclass fields, named-tuple fields or slots, whichever the
class uses), so a faster representation of a model class still dumps the same way, and every value is written in
a form JSON keeps exactly (fractions and enums as text, sets sorted). Findings carry their LSP ranges too, so a
change in position conversion shows up as well.

Regenerate the golden files (only when an analysis result is meant to change) with
`.venv/bin/python -m tests.analyzers.golden`.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.conftest import ANCHOR, CUDA_INVALID, CUDA_VALID, EXAMPLES, FIXTURES
from warpwise.analyzers.build import analyze_document, analyze_text
from warpwise.analyzers.findings import check_model
from warpwise.analyzers.model import FileModel, LineIndex

GOLDEN = FIXTURES / "golden"


def sources() -> list[tuple[str, Path]]:
    """Return (golden name, source path) for every file with a golden dump."""
    out = [("anchor_kernels.cu", ANCHOR)]
    out += [(f"valid_{p.name}", p) for p in sorted(CUDA_VALID.glob("*.cu"))]
    out += [(f"invalid_{p.name}", p) for p in sorted(CUDA_INVALID.glob("*.cu"))]
    out += [(f"examples_{p.name}", p) for p in sorted(EXAMPLES.glob("*.cu"))]
    return out


def _fields(obj: Any) -> list[str] | None:
    """Return the public attribute names of a model object, or None for a plain value."""
    if isinstance(obj, FileModel):
        # The model's source is dumped as what it contributes (text and line index); memos are not model facts.
        return [f.name for f in dataclasses.fields(obj) if f.name not in ("source", "memo")] + ["lines", "text"]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [f.name for f in dataclasses.fields(obj) if f.name != "memo"]  # A function's memo is no model fact.
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return list(obj._fields)
    slots: list[str] = []
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if not name.startswith("_") and name not in slots:
                slots.append(name)
    return slots or None


def dump(obj: Any) -> Any:
    """Return a JSON-ready structure that compares equal exactly when the model objects do, field by field."""
    if isinstance(obj, enum.Enum):
        return f"{type(obj).__name__}.{obj.value}"
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, Fraction):
        return f"Fraction({obj.numerator}/{obj.denominator})"
    if isinstance(obj, float):
        return repr(obj)
    if isinstance(obj, bytes):
        return {"bytes": len(obj)}
    if isinstance(obj, LineIndex):
        return {"line_count": obj.line_count}
    if isinstance(obj, frozenset | set):
        return {"set": sorted(dump(x) for x in obj)}
    if isinstance(obj, dict):
        return {"dict": [[dump(k), dump(v)] for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))]}
    names = _fields(obj)
    if names is not None:
        return {"type": type(obj).__name__, **{n: dump(getattr(obj, n)) for n in names}}
    if isinstance(obj, list | tuple):
        return [dump(x) for x in obj]
    raise TypeError(f"cannot dump {type(obj).__name__}")


def dump_model(model: FileModel) -> dict[str, Any]:
    """Return the dump of a model and of its findings (with their LSP ranges)."""
    findings = []
    for f in check_model(model):
        rng = model.lines.range(*f.span)
        findings.append(
            {
                **dump(f),
                "range": [rng.start.line, rng.start.character, rng.end.line, rng.end.character],
                "related_ranges": [
                    [r.start.line, r.start.character, r.end.line, r.end.character]
                    for r in (model.lines.range(*rel.span) for rel in f.related)
                ],
            }
        )
    return {"model": dump(model), "findings": findings}


def dump_file(path: Path) -> dict[str, Any]:
    """Analyse one file from scratch and return its dump."""
    return dump_model(analyze_text(path.read_bytes(), path.name))


def dump_reanalysis(path: Path) -> dict[str, Any]:
    """Analyse a file twice through one document (the second run reuses every function) and return the dump."""
    from warpwise.analyzers.parse import CudaDocument

    doc = CudaDocument(path.name, path.read_bytes())
    analyze_document(doc)
    return dump_model(analyze_document(doc))


def write_all() -> None:
    """Write every golden file from the current code."""
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, path in sources():
        if not path.exists():
            print(f"skipped {name}: {path} is missing", file=sys.stderr)
            continue
        out = GOLDEN / f"{name}.json"
        out.write_text(json.dumps(dump_file(path), indent=1, sort_keys=True) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    write_all()
