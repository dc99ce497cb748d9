"""Fixtures of the search tests: a kernel file, a result cache and a runner over recorded gate results."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.search.fakes import AXPY, Marks, RecordedBackend
from warpwise.search.evaluate import GateVerifier
from warpwise.search.optimize import OptimizeOptions, optimize
from warpwise.search.report import SearchReport
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate

Runner = Callable[..., tuple[SearchReport, RecordedBackend]]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARPWISE_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("WARPWISE_LLM_ENDPOINT", "WARPWISE_LLM_MODEL", "WARPWISE_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def kernel_file(tmp_path: Path) -> Path:
    path = tmp_path / "axpy.cu"
    path.write_text(AXPY)
    return path


@pytest.fixture
def run(tmp_path: Path, kernel_file: Path) -> Runner:
    """Run a search over `Marks(graph)` with recorded outcomes, on one cache per test."""
    cache = ResultCache(tmp_path / "results.sqlite3")

    def runner(
        graph: dict[tuple[str, ...], list[tuple[str, float]]],
        outcomes: dict[tuple[str, ...], Any],
        *,
        backend: RecordedBackend | None = None,
        progress: Any = None,
        cancel: Any = None,
        **kw: Any,
    ) -> tuple[SearchReport, RecordedBackend]:
        backend = backend or RecordedBackend(outcomes)
        kw.setdefault("budget_s", None)
        kw.setdefault("candidates", 20)
        opts = OptimizeOptions(cards=False, params=False, lineage=False, extra_sources=[Marks(graph)], **kw)
        verifier = GateVerifier(Gate(backend, cache))
        report = optimize(str(kernel_file), "axpy", opts, verifier=verifier, progress=progress, cancel=cancel)
        return report, backend

    return runner
