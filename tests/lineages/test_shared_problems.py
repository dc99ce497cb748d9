"""A naive-suite problem that describes the same problem as a corpus problem extends it instead of copying it.

Two problem files describe the same problem when, at the suite's small preset, they make the same inputs (names,
dtypes, shapes, values) and the same reference outputs. The check runs the files, so restyled copies count:
a suite problem file that is a copy keeps its own inputs and reference, which drift from the corpus's when one of
them is fixed. Where they are the same, the suite file names the corpus file in `problem_extends` and keeps only
what differs (its kernel, launch, sizes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from warpwise.verify.spec import read_problem

torch = pytest.importorskip("torch")

SUITE = ROOT / "bench" / "suite"
CORPUS = ROOT / "lineages" / "corpus"


def _namespace(path: Path, sizes: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run a problem file (with what it extends) and return its names; `sizes` replaces its `SIZES`."""
    ns: dict[str, Any] = {"__name__": f"problem_{path.parent.name}"}
    exec(compile(read_problem(path), str(path), "exec"), ns)
    if sizes is not None:
        ns["SIZES"] = sizes
    return ns


def _same(a: Any, b: Any) -> bool:
    """Return whether two inputs or two outputs are the same values (tensors: dtype, shape and elements)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.allclose(a.double(), b.double(), 1e-6, 1e-6)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return bool(a == b)


def _same_buffer(a: Any, b: Any) -> bool:
    """Return whether two output buffers have the same dtype and shape."""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and (a.dtype, a.shape) == (b.dtype, b.shape)


def same_problem(suite: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Return whether two problem files make the same inputs and reference at the suite file's small preset."""
    mine = _namespace(suite)
    presets = [name for name in mine.get("SIZES", {}) if name != "full"]
    if not presets:
        return False
    monkeypatch.setenv("WARPWISE_PROBLEM_SCALE", presets[0])
    theirs = _namespace(corpus, mine["SIZES"])
    try:
        inputs, other = mine["make_inputs"](0), theirs["make_inputs"](0)
        expected = mine["reference"](dict(inputs))
        if inputs.keys() != other.keys() or not _same(expected, theirs["reference"](dict(inputs))):
            return False
    except Exception:  # A problem that cannot run on the other's inputs or sizes is another problem.
        return False
    # The outputs' buffers are allocated, not filled (the gate poisons them): their dtype and shape count.
    return all(_same_buffer(inputs[k], other[k]) if k in expected else _same(inputs[k], other[k]) for k in inputs)


def _extends(path: Path) -> bool:
    return "problem_extends" in path.read_text(encoding="utf-8")


def _corpus_problems() -> list[Path]:
    # A problem without size presets runs only at its full size; the check runs small ones.
    return [p for p in sorted(CORPUS.glob("*/*.problem.py")) if "SIZES" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("suite", sorted(SUITE.glob("*/*.problem.py")), ids=lambda p: p.parent.name)
def test_a_suite_problem_of_a_corpus_problem_extends_it(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if _extends(suite):
        return
    copies = [c for c in _corpus_problems() if same_problem(suite, c, monkeypatch)]
    assert copies == [], (
        f"{suite.relative_to(ROOT)} describes the problem of {', '.join(str(c.relative_to(ROOT)) for c in copies)}: "
        "name it in `problem_extends` and keep only the kernel, launch and sizes"
    )


def test_the_check_sees_a_copied_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = CORPUS / "blur3x3" / "expert.problem.py"
    copy = tmp_path / "naive.problem.py"
    # A restyled copy (another kernel, another launch, the same inputs and reference) is the same problem.
    copy.write_text(read_problem(corpus).replace('kernel = "blur3x3_f32"', 'kernel = "blur3x3_naive"') + "\n")
    assert same_problem(copy, corpus, monkeypatch)
    # Another operator on inputs of the same names is not.
    other = tmp_path / "sharpen.problem.py"
    other.write_text(read_problem(corpus).replace("(2.0, 4.0, 2.0)", "(2.0, -12.0, 2.0)") + "\n")
    assert not same_problem(other, corpus, monkeypatch)
