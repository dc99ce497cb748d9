"""The kernels of the expert corpus and the naive suite, with their problem files, for the lineage tests."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.conftest import ROOT
from warpwise.verify.spec import read_problem

CORPUS = ROOT / "lineages" / "corpus"
SUITE = ROOT / "bench" / "suite"
CORPUS_CHECK = ROOT / "bench" / "gpu" / "corpus_check.py"


@dataclass(frozen=True)
class Kernel:
    """One kernel file and the problem file beside it."""

    kind: str
    operator: str
    source: Path
    problem: Path

    @property
    def ident(self) -> str:
        """Return the test id: `expert/scan`, `naive/topk`."""
        return f"{self.kind}/{self.operator}"


def experts() -> list[Kernel]:
    """Return every expert of the corpus."""
    return [
        Kernel("expert", d.name, d / "expert.cu", d / "expert.problem.py")
        for d in sorted(CORPUS.iterdir())
        if d.is_dir()
    ]


def naives() -> list[Kernel]:
    """Return every naive kernel of the suite."""
    return [
        Kernel("naive", d.name, d / "naive.cu", d / "naive.problem.py") for d in sorted(SUITE.iterdir()) if d.is_dir()
    ]


ALL = experts() + naives()


def load_problem(path: Path) -> dict[str, Any]:
    """Execute a problem file as the gate's worker does and return its namespace."""
    ns: dict[str, Any] = {"__name__": "warpwise_problem", "__file__": str(path)}
    exec(compile(read_problem(path), str(path), "exec"), ns)
    return ns


def small_presets(ns: dict[str, Any]) -> list[str]:
    """Return the problem's size presets other than `full`."""
    return [name for name in ns["SIZES"] if name != "full"]


@contextlib.contextmanager
def scale(preset: str) -> Iterator[None]:
    """Select a size preset through WARPWISE_PROBLEM_SCALE for the duration of a block."""
    old = os.environ.get("WARPWISE_PROBLEM_SCALE")
    os.environ["WARPWISE_PROBLEM_SCALE"] = preset
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("WARPWISE_PROBLEM_SCALE", None)
        else:
            os.environ["WARPWISE_PROBLEM_SCALE"] = old


@functools.cache
def corpus_check() -> ModuleType:
    """Import bench/gpu/corpus_check.py (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("corpus_check", CORPUS_CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_check"] = module
    spec.loader.exec_module(module)
    return module
