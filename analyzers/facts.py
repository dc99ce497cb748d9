"""Questions about a function that many matchers and checks ask, answered from the kernel model.

Some facts need the syntax tree (literals, exact expression shapes); they read the tree the model was built from
(`tree_of`, which is `model.tree`), so no fact parses the file again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from warpwise.analyzers.model import Access, AccessKind, FileModel, Function, Launch, Loop, Param, Span
from warpwise.analyzers.parse import captures, query


def tree_of(model: FileModel) -> Any:
    """Return the syntax tree the model was built from."""
    return model.tree


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


SPEC_CALLER = "<run spec>"
"""The `caller` of a launch built from a run spec (never a function name): `warpwise.skills.spec_launch`."""

_spec_launches: Callable[[FileModel, str], tuple[Function, Launch] | None] | None = None


def provide_spec_launches(provider: Callable[[FileModel, str], tuple[Function, Launch] | None]) -> None:
    """Install the source of run-spec launches (`warpwise.skills.spec_launch`, which reads problem files and
    annotations through the gate's spec layer, above this one)."""
    global _spec_launches
    _spec_launches = provider


def is_spec_launch(launch: Launch) -> bool:
    """Return whether a launch was built from a run spec rather than read from the file."""
    return launch.caller == SPEC_CALLER


def launches_of(model: FileModel, kernel: str) -> list[tuple[Function, Launch]]:
    """Return a kernel's launches in its file, else the one its annotation or problem file gives (if any)."""
    found = model.launches_of(kernel)
    if found or _spec_launches is None:
        return found
    extra = _spec_launches(model, kernel)
    return [extra] if extra is not None else []


def distinct_launch_args(model: FileModel, fn: Function, params: list[Param]) -> tuple[bool | None, str]:
    """Return whether every launch passes distinct plain names for these pointer parameters (None: no launch)."""
    launches = launches_of(model, fn.name)
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
