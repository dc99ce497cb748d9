"""The analyzers' fast paths agree with the direct forms they replace, on every fixture, example and the anchor.

The latency work (issue 2) replaced a few tree queries and walks by cheaper equivalents; the golden dumps show
that the model did not change on these files, and these tests check each equivalence on its own, node by node,
so that a file the golden set does not cover is less likely to find a difference.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

from tests.analyzers.golden import sources
from warpwise.analyzers import model
from warpwise.analyzers.build_file import FileContext, _kind_of, _top_level
from warpwise.analyzers.build_function import _FunctionBuilder
from warpwise.analyzers.build_syntax import _F_FUNCTION
from warpwise.analyzers.model import Access, Function, FunctionKind, MemorySpace, Position
from warpwise.analyzers.parse import CudaDocument, captures, query

SOURCES = [(name, path) for name, path in sources() if path.exists()]
_LDG = ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu")
_NO_CONTEXT = FileContext((), frozenset(), frozenset())


def _document(path: Path) -> CudaDocument:
    return CudaDocument(path.name, path.read_bytes())


@pytest.mark.parametrize(("name", "path"), SOURCES, ids=[n for n, _ in SOURCES])
def test_launches_found_from_tokens_match_the_launch_query(name: str, path: Path) -> None:
    doc = _document(path)
    functions, _, _ = _top_level(doc.tree.root_node)
    for fn, template in functions:
        body = fn.child_by_field_name("body")
        if body is None:
            continue
        builder = _FunctionBuilder(fn, template, doc.data, _NO_CONTEXT)
        expected = sorted(
            captures(query("(call_expression (kernel_call_syntax)) @launch"), body).get("launch", []),
            key=lambda n: n.start_byte,
        )
        assert [n.id for n in builder._launch_nodes(body)] == [n.id for n in expected]


@pytest.mark.parametrize(("name", "path"), SOURCES, ids=[n for n, _ in SOURCES])
def test_loads_marked_top_down_match_the_walk_up(name: str, path: Path) -> None:
    doc = _document(path)
    root = doc.tree.root_node
    builder = _FunctionBuilder(root, None, doc.data, _NO_CONTEXT)
    calls = captures(query("(call_expression) @call"), root).get("call", [])
    marked = builder._under_ldg(calls)
    for node in captures(query("(subscript_expression) @n (pointer_expression) @n"), root).get("n", []):
        walked = False
        p, hops = node.parent, 0
        while p is not None and hops < 3:
            if p.type == "call_expression":
                fn = p.child_by_field_id(_F_FUNCTION)
                walked = fn is not None and doc.data[fn.start_byte : fn.end_byte].decode("utf-8", "replace") in _LDG
                break
            p, hops = p.parent, hops + 1
        assert (node.id in marked) == walked, node.text


@pytest.mark.parametrize(("name", "path"), SOURCES, ids=[n for n, _ in SOURCES])
def test_function_kind_in_one_pass_matches_the_specifier_checks(name: str, path: Path) -> None:
    def has(node: Any, token: str) -> bool:
        for c in node.children:
            if c.type == token:
                return True
            wrapper = c.type in ("type_qualifier", "storage_class_specifier", "attribute_specifier")
            if wrapper and any(g.type == token for g in c.children):
                return True
        return False

    doc = _document(path)
    for fn, _ in _top_level(doc.tree.root_node)[0]:
        if has(fn, "__global__"):
            expected = FunctionKind.KERNEL
        elif has(fn, "__device__"):
            expected = FunctionKind.HOST_DEVICE if has(fn, "__host__") else FunctionKind.DEVICE
        else:
            expected = FunctionKind.HOST
        assert _kind_of(fn) is expected


def test_model_objects_stay_frozen_dataclasses_with_the_same_constructor() -> None:
    access = Access(
        array="a",
        base="a",
        space=MemorySpace.GLOBAL,
        kind=model.AccessKind.READ,
        index="i",
        indices=("i",),
        pattern=model.AccessPattern.CONTIGUOUS,
        stride=None,
        stride_text=None,
        width=4,
        element_type="float",
        vector_cast=False,
        loops=(),
        index_names=frozenset({"i"}),
        span=(0, 4),
        index_span=(2, 3),
        in_thread_branch=False,
        via_ldg=False,
    )
    assert access == Access(*(getattr(access, f.name) for f in dataclasses.fields(Access)))
    assert hash(access) == hash(dataclasses.replace(access))
    with pytest.raises(dataclasses.FrozenInstanceError):
        access.base = "b"
    assert list(inspect.signature(Access).parameters) == [f.name for f in dataclasses.fields(Access)]
    fn = Function("k", FunctionKind.KERNEL, 0, 1, (0, 1), None, "", (), (), None, (), (), (), (), (), (), ())
    assert fn.locals == {} and fn.pointer_aliases == {} and fn.locals is not fn.pointer_aliases
    assert dataclasses.replace(fn, base=5).base == 5
    assert Position(1, 2) == Position(line=1, character=2)
    with pytest.raises(TypeError):
        Position(1)
