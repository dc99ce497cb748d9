"""The analysis warm-up at start compiles what the first documents' analyses would otherwise compile on first use:
a first document pays for its own analysis, not for tree-sitter compiling the cards' queries (tens of
milliseconds each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.parse import CudaDocument, query
from warpwise.server.analysis import warm_up
from warpwise.server.providers import CardProvider, RuleProvider, collect_items
from warpwise.server.settings import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rel", ["bench/suite/gelu_f16/naive.cu", "bench/suite/softmax/naive.cu"])
def test_a_first_document_compiles_no_query_the_warm_up_did_not(rel: str) -> None:
    providers = [RuleProvider(), CardProvider()]
    warm_up(providers, DEFAULTS)
    misses = query.cache_info().misses
    path = ROOT / rel
    collect_items(providers, analyze_document(CudaDocument(str(path), path.read_bytes())), DEFAULTS)
    assert query.cache_info().misses == misses
