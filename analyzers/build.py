"""Build the kernel model (`FileModel`) from a tree-sitter tree.

The file is cut into function definitions; each is analysed on its own by `_FunctionBuilder` with one query over
its subtree, and the result is kept in the document's cache under the function's text (plus the file-level
constants it may read). After an edit only the functions whose text changed are analysed again; the others are
reused with their base offset moved. Nothing here raises on any input: a construct that cannot be read is left
out of the model or classified `unknown`.

This module is the entry point and the incremental cache. The file-level facts are read by `build_file.py`; one
function is analysed by `build_function.py`'s `_FunctionBuilder`, whose parts each read one kind of construct
(`build_signature.py`, `build_declarations.py`, `build_control.py`, `build_accesses.py`, `build_calls.py`) over
the state of `build_state.py`; `build_syntax.py` is the tree-sitter speed prelude they share.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from warpwise.analyzers.build_file import FileContext, _file_context, _kind_of, _syntax_problems, eval_numeric_text
from warpwise.analyzers.build_function import _FunctionBuilder
from warpwise.analyzers.build_syntax import Node, _declarator_name, _texter
from warpwise.analyzers.checkpoint import checkpoint
from warpwise.analyzers.cuda_api import MATH_CALLS
from warpwise.analyzers.model import FileModel, Function, FunctionKind, LineIndex, SyntaxProblem
from warpwise.analyzers.parse import CudaDocument

__all__ = [
    "FUNCTION_NODE_BUDGET",
    "MATH_CALLS",
    "FileContext",
    "analyze_document",
    "analyze_text",
    "eval_numeric_text",
    "line_index",
]

log = logging.getLogger(__name__)
FUNCTION_NODE_BUDGET = 16_000
"""Functions with more syntax nodes are modelled without their bodies (the analysis of one expression of a few
thousand terms grows faster than linearly); the model says so on the function's name."""


def analyze_document(doc: CudaDocument) -> FileModel:
    """Build the model of a document, reusing the analysis of functions whose text did not change.

    Host functions are analysed first: their launch sites tell which template arguments each kernel is
    instantiated with, and when every launch in the file agrees, the kernel is analysed with those values
    (so `tile[TILE][TILE + 1]` has known dimensions).
    """
    source = doc.source
    src = source.text
    root = source.tree.root_node
    ctx, macros, functions = _file_context(root, src)
    ctx_key = repr(ctx).encode()
    old = doc.cache
    new_cache: dict[bytes, Any] = {}
    kinds = [_kind_of(fn) for fn, _ in functions]
    results: list[Function | None] = [None] * len(functions)
    texter: list[Callable[[Node], str]] = []

    def text_of() -> Callable[[Node], str]:
        if not texter:
            texter.append(_texter(src, src.decode("ascii") if src.isascii() else None))
        return texter[0]

    budget: list[SyntaxProblem] = []

    def build(i: int, binding: tuple[str, ...]) -> None:
        checkpoint()
        fn_node, template = functions[i]
        nodes = fn_node.descendant_count
        shallow = nodes > FUNCTION_NODE_BUDGET
        outer_start = template.start_byte if template is not None else fn_node.start_byte
        key = b"%d\0%s\0%s\0%s" % (
            fn_node.start_byte - outer_start,
            ctx_key,
            "\1".join(binding).encode(),
            src[outer_start : fn_node.end_byte],
        )
        cached = old.get(key) or new_cache.get(key)
        if cached is None:
            try:
                builder = _FunctionBuilder(fn_node, template, src, ctx, text_of(), kinds[i])
                builder.has_launch = src.find(b"<<<", fn_node.start_byte, fn_node.end_byte) >= 0
                builder.binding = binding
                try:
                    cached = builder.build(shallow)
                finally:
                    builder.release()
            except Exception:  # Analysis never raises on source text; one bad function is skipped and logged.
                log.exception("could not analyse the function at byte %d of %s", fn_node.start_byte, doc.path)
                return
        new_cache[key] = cached
        if shallow:
            at = fn_node.start_byte + cached.name_span[0]
            span = (at, at + cached.name_span[1] - cached.name_span[0])
            budget.append(
                SyntaxProblem(
                    f"`{cached.name}` has {nodes:,} syntax nodes, over the analysis budget of "
                    f"{FUNCTION_NODE_BUDGET:,}: its body is not analysed, so no findings are reported inside it",
                    span,
                )
            )
        results[i] = (
            cached if cached.base == fn_node.start_byte else dataclasses.replace(cached, base=fn_node.start_byte)
        )

    for i, kind in enumerate(kinds):
        if kind is FunctionKind.HOST:
            build(i, ())
    instantiations: dict[str, set[tuple[str, ...]]] = {}
    for res in results:
        if res is not None:
            for launch in res.launches:
                instantiations.setdefault(launch.kernel, set()).add(launch.template_values)
    for i, kind in enumerate(kinds):
        if kind is FunctionKind.HOST:
            continue
        binding: tuple[str, ...] = ()
        if functions[i][1] is not None:
            name = _declarator_name(functions[i][0].child_by_field_name("declarator"), src)
            seen = instantiations.get(name or "", set())
            if len(seen) == 1:
                binding = next(iter(seen))
        build(i, binding)
    doc.cache = new_cache
    return FileModel(
        path=doc.path,
        functions=tuple(f for f in results if f is not None),
        syntax_problems=tuple(_syntax_problems(root, src)),
        constants=dict(ctx.consts),
        macros=macros,
        source=source,
        budget_problems=tuple(budget),
    )


def analyze_text(text: str | bytes, path: str = "<memory>") -> FileModel:
    """Parse and analyse one text from scratch (one parse: the model holds the tree)."""
    return analyze_document(CudaDocument(path, text))


def line_index(text: bytes) -> LineIndex:
    """Return a line index for a text (re-exported for callers that hold only bytes)."""
    return LineIndex(text)
