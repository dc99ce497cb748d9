"""Questions about a function that many matchers and checks ask, answered from the kernel model.

Some facts need the syntax tree (literals, exact expression shapes); `tree_of` parses the file once per model
and caches the tree, so matchers that need nodes stay cheap after the first.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from warpwise.analyzers.model import Access, AccessKind, FileModel, Function, Loop, MemorySpace, Param, Span
from warpwise.analyzers.parse import captures, new_parser, parse_source, query

# The last few (model, tree) pairs, keyed by the model's identity; holding the model keeps its id unique.
_TREES: OrderedDict[int, tuple[FileModel, Any]] = OrderedDict()
_KEEP = 4
_LOCK = threading.Lock()


def set_tree(model: FileModel, tree: Any) -> None:
    """Attach the syntax tree the model was built from (callers that have it save a re-parse).

    The tree must not be edited afterwards: pass `tree.copy()` when the document keeps editing its own.
    """
    with _LOCK:
        _TREES[id(model)] = (model, tree)
        _TREES.move_to_end(id(model))
        while len(_TREES) > _KEEP:
            _TREES.popitem(last=False)


def tree_of(model: FileModel) -> Any:
    """Return a syntax tree for the model's text (the attached one, or a fresh parse cached per model)."""
    with _LOCK:
        hit = _TREES.get(id(model))
        if hit is not None and hit[0] is model:
            return hit[1]
    tree = new_parser().parse(parse_source(model.text))
    set_tree(model, tree)
    return tree


def function_node(model: FileModel, fn: Function) -> Any:
    """Return the syntax node of a function definition."""
    node = tree_of(model).root_node.descendant_for_byte_range(fn.base, fn.base + fn.length)
    while node is not None and node.type != "function_definition":
        node = node.parent
    return node


def nodes(model: FileModel, fn: Function, pattern: str, name: str) -> list[Any]:
    """Return the nodes a query captures under `name` inside one function, in source order."""
    node = function_node(model, fn)
    if node is None:
        return []
    return sorted(captures(query(pattern), node).get(name, []), key=lambda n: n.start_byte)


def rel(fn: Function, node: Any) -> Span:
    """Return a node's span relative to a function."""
    return (node.start_byte - fn.base, node.end_byte - fn.base)


def text(model: FileModel, node: Any) -> str:
    """Return a node's text."""
    return model.text[node.start_byte : node.end_byte].decode("utf-8", "replace")


def accesses_of(fn: Function, base: str, kinds: Iterable[AccessKind] | None = None) -> list[Access]:
    """Return the accesses of one array or pointer (optionally of some kinds)."""
    wanted = set(kinds) if kinds is not None else None
    return [a for a in fn.accesses if a.base == base and (wanted is None or a.kind in wanted)]


WRITES = (AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC)


def is_written(fn: Function, base: str, within: Span | None = None) -> bool:
    """Return whether the function (or a span of it) writes through `base`."""
    for a in fn.accesses:
        if a.base == base and a.kind in WRITES and (within is None or within[0] <= a.span[0] < within[1]):
            return True
    return False


def global_stores_in(fn: Function, span: Span) -> list[Access]:
    """Return the stores to global or unknown memory inside a span."""
    return [
        a
        for a in fn.accesses
        if span[0] <= a.span[0] < span[1] and a.kind in WRITES and a.space in (MemorySpace.GLOBAL, MemorySpace.UNKNOWN)
    ]


def pointer_params(fn: Function) -> list[Param]:
    """Return the pointer parameters (not references)."""
    return [p for p in fn.params if p.is_pointer and not p.is_reference]


def identifier_uses(model: FileModel, fn: Function, name: str) -> int:
    """Return how many times `name` appears as a whole word in the function's text (comments excluded)."""
    body = model.text[fn.base : fn.base + fn.length].decode("utf-8", "replace")
    body = re.sub(r"//[^\n]*|/\*.*?\*/", " ", body, flags=re.S)
    return len(re.findall(rf"(?<![\w.]){re.escape(name)}\b", body))


def innermost_loop(fn: Function, access: Access) -> Loop | None:
    """Return the innermost loop around an access."""
    return fn.loops[access.loops[-1]] if access.loops else None


def loop_label(loop: Loop) -> str:
    """Return a readable name for a loop (`the loop over \\`k\\``)."""
    return f"the loop over `{loop.var}`" if loop.var else f"the `{loop.kind}` loop"


def distinct_launch_args(model: FileModel, fn: Function, params: list[Param]) -> tuple[bool | None, str]:
    """Return whether every launch passes distinct plain names for these pointer parameters (None: no launch)."""
    launches = model.launches_of(fn.name)
    if not launches:
        return None, f"no launch of `{fn.name}` in this file"
    for host, launch in launches:
        if len(launch.args) != len(fn.params):
            return None, f"the launch in `{host.name}` passes {len(launch.args)} arguments"
        texts = [launch.args[p.index].strip() for p in params]
        plain = all(all(part.isidentifier() for part in t.replace("->", ".").split(".")) for t in texts)
        if not plain:
            return None, f"the launch in `{host.name}` passes computed pointers ({', '.join(texts)})"
        if len(set(texts)) != len(texts):
            return False, f"the launch in `{host.name}` passes the same buffer twice ({', '.join(texts)})"
    n = len(launches)
    return True, f"{'the launch' if n == 1 else f'all {n} launches'} in this file pass{'es' if n == 1 else ''} " + (
        "distinct buffers"
    )


def launch_args_for(model: FileModel, fn: Function, name: str) -> list[str] | None:
    """Return, per launch, the argument text passed for parameter `name` (None when a launch cannot be read)."""
    param = fn.param(name)
    launches = model.launches_of(fn.name)
    if param is None or not launches:
        return None
    out = []
    for _, launch in launches:
        if len(launch.args) != len(fn.params):
            return None
        out.append(launch.args[param.index].strip())
    return out
