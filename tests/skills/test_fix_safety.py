"""Fix safety as properties (issue 18): every fix is idempotent, `check --fix` converges, and no fix makes a file
that compiled stop compiling.

The corpus is every CUDA file the project ships for testing (card fixtures, examples, the analyzers' valid
sources), and, through hypothesis, files made of two of them one after the other (so fixes meet code they were not
written next to). Compilation is checked with nvcc where it is installed (cached by content, `tests/nvcc.py`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CUDA_VALID
from tests.nvcc import compile_source
from tests.skills.cardtest import fixture_files, rewrite_all
from warpwise.analyzers.build import analyze_text
from warpwise.engine import fix_text
from warpwise.skills.engine import match_file
from warpwise.skills.library import builtin_library

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(
    [p for p in fixture_files("*.cu") if not p.name.endswith(".expected.cu")]
    + sorted((ROOT / "examples").glob("*.cu"))
    + sorted(CUDA_VALID.glob("*.cu"))
)
MAX_ROUNDS = 8


def _id(p: Path) -> str:
    # Card fixtures come from the installed package, which lies outside the checkout when warpwise is installed
    # from a wheel (as on the GPU machine): name those by their card folder.
    if p.is_relative_to(ROOT):
        return str(p.relative_to(ROOT))
    return f"skills/{p.parent.parent.name}/fixtures/{p.name}"


def _cards_with_fixes(source: bytes) -> list[str]:
    model = analyze_text(source)
    return sorted({m.card_id for m in match_file(model, builtin_library()) if m.has_rewrite})


def _idempotent(source: bytes) -> None:
    for card in _cards_with_fixes(source):
        once = rewrite_all(card, source)
        twice = rewrite_all(card, once)
        assert twice == once, f"{card}: applying its fixes twice differs from once"


def _converges(source: bytes) -> bytes:
    out = fix_text(source, "corpus.cu", include_unsafe=True, max_rounds=MAX_ROUNDS)
    assert out.rounds < MAX_ROUNDS, f"--fix did not converge in {MAX_ROUNDS} rounds: {[f.card_id for f in out.applied]}"
    again = fix_text(out.text, "corpus.cu", include_unsafe=True, max_rounds=MAX_ROUNDS)
    assert again.text == out.text, f"a second --fix changed the file again: {[f.card_id for f in again.applied]}"
    return out.text


def test_the_corpus_is_not_empty() -> None:
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("path", CORPUS, ids=_id)
def test_every_fix_is_idempotent(path: Path) -> None:
    _idempotent(path.read_bytes())


@pytest.mark.parametrize("path", CORPUS, ids=_id)
def test_fix_converges_and_keeps_the_file_compiling(path: Path) -> None:
    source = path.read_bytes()
    fixed = _converges(source)
    if shutil.which("nvcc") is None or fixed == source:
        return
    ok_before, _ = compile_source(source)
    if ok_before:
        ok_after, log = compile_source(fixed)
        assert ok_after, f"the fixed {path.name} no longer compiles:\n{log[:2000]}"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CORPUS), st.sampled_from(CORPUS))
def test_fixes_of_files_put_together_are_idempotent_and_converge(first: Path, second: Path) -> None:
    source = first.read_bytes() + b"\n" + second.read_bytes()
    _idempotent(source)
    _converges(source)


def test_a_gathered_table_is_not_streamed() -> None:
    src = b"""
    __global__ void gather_rows(const float* __restrict__ table, const int* __restrict__ idx, float* __restrict__ out,
                                int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) out[i] = table[idx[i]] * 2.0f;
    }
    """
    names = {
        m.region.facts["name"]
        for m in match_file(analyze_text(src), builtin_library(), enabled={"streaming-cache-hints"})
    }
    assert names == {"out", "idx"}
    _idempotent(src)
