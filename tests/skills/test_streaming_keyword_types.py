"""streaming-cache-hints reads the file's typedefs, aliases and records only for element types that could be one:
a type spelled in keywords resolves alike without them (no file can name an alias or a record `float`)."""

from __future__ import annotations

import pytest

from warpwise.analyzers.build import analyze_text
from warpwise.skills.library import builtin_library

_card = builtin_library().get("streaming-cache-hints")
assert _card is not None and _card.rules is not None
sch = _card.rules

SOURCE = """
typedef float real;
typedef unsigned long long u64;
using idx = unsigned;
struct pair_t { float a, b; };
union bits { float f; unsigned u; };
__global__ void k(const real* __restrict__ x, float* y, int n) {}
"""

KEYWORD_TYPES = [
    "float",
    "const float",
    "volatile const double",
    "unsigned",
    "signed",
    "signed int",
    "unsigned long long",
    "long double",
    "bool",
    "void",
    "short",
    "char",
]


@pytest.mark.parametrize("written", KEYWORD_TYPES)
def test_a_keyword_type_resolves_as_the_whole_file_read_resolves_it(written: str) -> None:
    model = analyze_text(SOURCE, "/tmp/stream.cu")
    bare = sch._bare_type(written)
    assert all(w in sch._KEYWORD_TYPES for w in bare.split())
    resolved, records = sch.resolve_type(model, written)
    assert sch._library_spelling(bare) == resolved
    assert resolved not in records


def test_names_of_the_file_still_take_the_whole_file_read() -> None:
    model = analyze_text(SOURCE, "/tmp/stream.cu")
    assert sch.resolve_type(model, "const real")[0] == "float"
    assert sch.resolve_type(model, "idx")[0] == "unsigned int"
    assert "pair_t" in sch.resolve_type(model, "pair_t")[1]
    for name in ("real", "idx", "pair_t", "u64"):
        assert not all(w in sch._KEYWORD_TYPES for w in name.split())
