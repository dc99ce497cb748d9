"""Host code as real projects write it, for spec inference: launches inside macros, loops over block sizes.

Real files seldom launch a kernel in the plain form `k<<<grid, block>>>(args)` with constants in sight. Two
shapes are common enough to read:

- a function-like macro whose body launches (`#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)`), called
  from host code: `expand_launch_macros` writes each call's expansion in its place, on the call's own line, so
  the kernel model sees an ordinary launch and every line number stays the same;
- a launch inside a loop over block sizes (`for (int bs : {128, 256})`, `for (int b = 32; b <= 1024; b *= 2)`):
  `loop_first_values` gives each loop variable around the launch its first value, and inference says it took it.

Both work on the tree-sitter tree; macro arguments are split at top-level commas by `cexpr.split_top`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.parse import SourceFile

_CONTAINERS = frozenset(
    {"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "namespace_definition", "declaration_list"}
)


@dataclass(frozen=True, slots=True)
class LaunchMacro:
    """A function-like macro whose body launches a kernel."""

    name: str
    params: tuple[str, ...]
    variadic: bool
    body: str


def _text(src: bytes, node: Any) -> str:
    """Return a node's source text."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def launch_macros(root: Any, src: bytes) -> dict[str, LaunchMacro]:
    """Return the file's function-like macros whose body contains a `<<<...>>>` launch."""
    out: dict[str, LaunchMacro] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if child.type == "preproc_function_def":
                name = child.child_by_field_name("name")
                params = child.child_by_field_name("parameters")
                value = child.child_by_field_name("value")
                if name is None or params is None or value is None:
                    continue
                body = _text(src, value).replace("\\\r\n", " ").replace("\\\n", " ")
                if "<<<" not in body:
                    continue
                names = [p.strip() for p in _text(src, params).strip("()").split(",") if p.strip()]
                variadic = bool(names) and names[-1] == "..."
                fixed = tuple(n for n in names if n != "...")
                out[_text(src, name)] = LaunchMacro(_text(src, name), fixed, variadic, body.strip())
            elif child.type in _CONTAINERS:
                stack.append(child)
    return out


def _expand(macro: LaunchMacro, args: list[str]) -> str | None:
    """Return a macro's body with its parameters replaced by `args`, or None when the counts disagree."""
    if len(args) < len(macro.params) or (len(args) > len(macro.params) and not macro.variadic):
        return None
    values = dict(zip(macro.params, args, strict=False))
    rest = ", ".join(args[len(macro.params) :])
    body = re.sub(r"#\s*(\w+)", lambda m: f'"{values.get(m.group(1), m.group(1))}"', macro.body)
    body = body.replace("##", "")
    body = re.sub(r"\b__VA_ARGS__\b", rest, body)
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: values.get(m.group(0), m.group(0)), body)


def expand_launch_macros(text: bytes, tree: Any = None) -> tuple[bytes, tuple[str, ...]]:
    """Return the text with every call of a launching macro replaced by its expansion, and the macros expanded.

    `tree` is the text's syntax tree when the caller has it (the model's); the text is parsed otherwise.
    """
    tree = tree if tree is not None else SourceFile.parse(text).tree
    macros = launch_macros(tree.root_node, text)
    if not macros:
        return text, ()
    edits: list[tuple[int, int, str]] = []
    used: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "preproc_function_def":
            continue
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            name = _text(text, fn) if fn is not None else ""
            if name in macros and args is not None:
                inner = _text(text, args)[1:-1]
                parts = [p.strip() for p in cexpr.split_top(inner)] if inner.strip() else []
                expansion = _expand(macros[name], parts)
                if expansion is not None:
                    # One line, so the lines after the call keep their numbers.
                    edits.append((node.start_byte, node.end_byte, " ".join(expansion.split())))
                    used.append(name)
                    continue
        stack.extend(node.children)
    if not edits:
        return text, ()
    out = bytearray()
    pos = 0
    for start, end, repl in sorted(edits):
        if start < pos:
            continue
        segment = text[start:end]
        out += text[pos:start] + repl.encode() + b"\n" * segment.count(b"\n")
        pos = end
    out += text[pos:]
    return bytes(out), tuple(dict.fromkeys(used))


def loop_first_values(
    src: bytes, offset: int, names: dict[str, int | float], tree: Any = None
) -> dict[str, tuple[int | float, str]]:
    """Return, for each loop variable around the byte `offset`, its first value and a description of the loop."""
    tree = tree if tree is not None else SourceFile.parse(src).tree
    node = tree.root_node.descendant_for_byte_range(offset, offset)
    fn = node
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    out: dict[str, tuple[int | float, str]] = {}
    while node is not None and node.type != "function_definition":
        if node.type == "for_range_loop":
            var = node.child_by_field_name("declarator")
            rng = node.child_by_field_name("right")
            if var is not None and rng is not None and var.type == "identifier":
                first = _first_of_range(src, rng, fn, names)
                if first is not None:
                    out.setdefault(_text(src, var), (first, _text(src, rng)))
        elif node.type == "for_statement":
            init = node.child_by_field_name("initializer")
            if init is not None:
                for d in init.children_by_field_name("declarator") if init.type == "declaration" else [init]:
                    target = d.child_by_field_name("declarator") or d.child_by_field_name("left")
                    value = d.child_by_field_name("value") or d.child_by_field_name("right")
                    if target is None or value is None or target.type != "identifier":
                        continue
                    try:
                        v = cexpr.evaluate(_text(src, value), names)
                    except cexpr.ExprError:
                        continue
                    out.setdefault(_text(src, target), (v, _text(src, init).strip().rstrip(";")))
        node = node.parent
    return out


def _first_of_range(src: bytes, rng: Any, fn: Any, names: dict[str, int | float]) -> int | float | None:
    """Return the first element of a range-for's range: a braced list, or an array initialised with one."""
    lists = [rng] if rng.type == "initializer_list" else []
    if rng.type == "identifier" and fn is not None:
        wanted = _text(src, rng)
        stack = [fn]
        while stack and not lists:
            n = stack.pop()
            if n.type == "init_declarator":
                d = n.child_by_field_name("declarator")
                while d is not None and d.type in ("array_declarator", "pointer_declarator"):
                    d = d.child_by_field_name("declarator")
                value = n.child_by_field_name("value")
                if d is not None and _text(src, d) == wanted and value is not None and value.type == "initializer_list":
                    lists.append(value)
            stack.extend(n.named_children)
    for lst in lists:
        items = lst.named_children
        if items:
            try:
                return cexpr.evaluate(_text(src, items[0]), names)
            except cexpr.ExprError:
                return None
    return None
