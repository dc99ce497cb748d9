"""What a deoptimizer works with and what it returns.

A deoptimizer is one small pure function `(source) -> list[Deopt]`: `source` is a `KernelSource` (the text, its
syntax tree and the analyzer's `FileModel`, and the name of the kernel being walked), and each `Deopt` is one
candidate rewrite that removes one optimization: exact text edits (the same `Edit` the card rewrites use), a
one-line description, the card whose forward rewrite undoes it (or None: an "unexplained" optimization, with the
card it proposes), and, when the simpler kernel must be launched differently, how its launch geometry changes.

A pass that cannot remove its optimization exactly (so that the result computes the same outputs, up to the
rounding of a reordered float sum) returns nothing; whether the simpler kernel is really correct and really
slower is for the gate to measure on a GPU.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FileModel, Function, FunctionKind
from warpwise.analyzers.parse import SourceFile
from warpwise.skills.rewrite import Edit, apply_edits
from warpwise.verify.launch import LaunchChange

Node = Any

HELPER_PREFIX = "ww_"
"""Names of the helpers the deoptimizers insert (`ww_ld16`, `ww_shfl_xor`, ...) start with this prefix."""


@dataclass(frozen=True, slots=True)
class ProposedCard:
    """A card a step proposes when no existing card explains it: an id naming the pattern found, and its intent."""

    skill_id: str
    title: str
    intent: str


@dataclass(frozen=True, slots=True)
class Deopt:
    """One candidate rewrite that removes one optimization from a kernel."""

    pass_id: str
    label: str
    description: str
    edits: tuple[Edit, ...]
    card: str | None
    proposed: ProposedCard | None = None
    launch: tuple[LaunchChange, ...] = ()

    @property
    def key(self) -> str:
        """Return the stable identity of this candidate across the steps of a walk (`devectorize:global`)."""
        return f"{self.pass_id}:{self.label}"

    def apply(self, text: str) -> str:
        """Return the simpler kernel's text."""
        return apply_edits(text.encode("utf-8", "surrogatepass"), list(self.edits)).decode("utf-8", "surrogatepass")


@dataclass
class KernelSource:
    """A CUDA file being deoptimized: text, syntax tree, the analyzer's model, and the kernel being walked."""

    path: str
    text: str
    kernel: str
    model: FileModel
    tree: Any
    data: bytes = field(repr=False)

    @classmethod
    def parse(cls, text: str, kernel: str, path: str = "kernel.cu") -> KernelSource:
        """Analyse a text and return its source object."""
        data = text.encode("utf-8", "surrogatepass")
        model = analyze_text(data, path)
        return cls(path, text, kernel, model, model.tree, data)

    @property
    def kernel_fn(self) -> Function | None:
        """Return the kernel being walked."""
        return next((f for f in self.model.kernels if f.name == self.kernel), None)

    def device_functions(self) -> list[Function]:
        """Return every kernel and device function of the file, in source order."""
        return [f for f in self.model.functions if f.kind is not FunctionKind.HOST]

    def function_node(self, fn: Function) -> Node | None:
        """Return the `function_definition` node of a function."""
        node = self.tree.root_node.descendant_for_byte_range(fn.base, fn.base + max(fn.length - 1, 0))
        while node is not None and node.type != "function_definition":
            node = node.parent
        return node

    def text_of(self, node: Node) -> str:
        """Return a node's text."""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def span_text(self, start: int, end: int) -> str:
        """Return the text of a byte span."""
        return self.data[start:end].decode("utf-8", "surrogatepass")

    @functools.cached_property
    def comments(self) -> list[tuple[int, int]]:
        """Return the byte spans of every comment."""
        return [(n.start_byte, n.end_byte) for n in walk(self.tree.root_node) if n.type == "comment"]

    @functools.cached_property
    def literal_spans(self) -> list[tuple[int, int]]:
        """Return the byte spans of comments, string and character literals (text that is not code)."""
        kinds = ("comment", "string_literal", "char_literal", "raw_string_literal")
        return [(n.start_byte, n.end_byte) for n in walk(self.tree.root_node) if n.type in kinds]

    def in_code(self, offset: int) -> bool:
        """Return whether a byte offset lies in code (not in a comment or a literal)."""
        return not any(a <= offset < b for a, b in self.literal_spans)

    def code_matches(self, pattern: str | re.Pattern[str]) -> list[re.Match[str]]:
        """Return the matches of a regular expression that start in code, over the whole text (str offsets)."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        out = []
        for m in rx.finditer(self.text):
            if self.in_code(len(self.text[: m.start()].encode("utf-8", "surrogatepass"))):
                out.append(m)
        return out

    def byte_offset(self, char_offset: int) -> int:
        """Return the byte offset of a character offset of `text`."""
        return len(self.text[:char_offset].encode("utf-8", "surrogatepass"))

    def nodes(self, node: Node | None = None, types: tuple[str, ...] = ()) -> list[Node]:
        """Return the descendants of a node (the whole file by default) of the given types, in source order."""
        root = node if node is not None else self.tree.root_node
        return [n for n in walk(root) if not types or n.type in types]

    def calls(self, node: Node | None, names: tuple[str, ...]) -> list[Node]:
        """Return the `call_expression` nodes below a node whose callee is a plain name in `names`."""
        out = []
        for n in self.nodes(node, ("call_expression",)):
            callee = n.child_by_field_name("function")
            if callee is not None and callee.type == "identifier" and self.text_of(callee) in names:
                out.append(n)
        return out

    def macro_value(self, name: str) -> int | None:
        """Return the integer value of a `#define` constant."""
        v = self.model.constants.get(name)
        return v if isinstance(v, int) else None

    def macro_definitions(self) -> dict[str, Node]:
        """Return the `#define NAME value` nodes by name (the last one wins)."""
        out = {}
        for n in self.nodes(None, ("preproc_def",)):
            name = n.child_by_field_name("name")
            if name is not None:
                out[self.text_of(name)] = n
        return out

    def first_function_offset(self) -> int:
        """Return where helpers go: the start of the first function definition, above its leading comments."""
        root = self.tree.root_node
        first = next(
            (c for c in root.named_children if c.type in ("function_definition", "template_declaration")), None
        )
        if first is None:
            return len(self.data)
        start = first.start_byte
        prev = first.prev_sibling
        while prev is not None and prev.type == "comment" and self._adjacent(prev.end_byte, start):
            start = prev.start_byte
            prev = prev.prev_sibling
        return self.data.rfind(b"\n", 0, start) + 1

    def _adjacent(self, end: int, start: int) -> bool:
        """Return whether only white space with at most one line break lies between two offsets."""
        gap = self.data[end:start]
        return gap.strip() == b"" and gap.count(b"\n") <= 1

    def defines(self, name: str) -> bool:
        """Return whether the file already defines a function called `name`."""
        return any(
            self.text_of(d) == name
            for n in self.nodes(None, ("function_declarator",))
            if (d := n.child_by_field_name("declarator")) is not None
        )

    def insert_helpers(self, comment: str, parts: list[str]) -> list[Edit]:
        """Return the edit that inserts the helper definitions the file lacks above its first function."""
        missing = [p for p in parts if p.split("{", 1)[0].strip() not in self.text]
        if not missing:
            return []
        at = self.first_function_offset()
        before = "" if at == 0 or self.data[max(0, at - 2) : at] == b"\n\n" else "\n"
        return [Edit(at, at, before + "\n".join([comment, *missing]) + "\n\n")]


def walk(node: Node) -> Iterator[Node]:
    """Yield a node and all its named descendants, in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def unparen(node: Node) -> Node:
    """Return the expression inside any number of parentheses."""
    while node is not None and node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def enclosing(node: Node, *types: str) -> Node | None:
    """Return the nearest ancestor of one of the given types."""
    n = node.parent
    while n is not None and n.type not in types:
        n = n.parent
    return n


def is_assignment_target(node: Node) -> bool:
    """Return whether a node is the left side of a plain `=` assignment."""
    parent = node.parent
    if parent is None or parent.type != "assignment_expression":
        return False
    left = parent.child_by_field_name("left")
    op = parent.child_by_field_name("operator")
    return left is not None and left.id == node.id and op is not None and op.type == "="


def reparses(text: str) -> bool:
    """Return whether a text parses without syntax errors (a deoptimized kernel must)."""
    return not SourceFile.parse(text).tree.root_node.has_error


class PythonExpr:
    """Translate a C integer expression (a syntax node) into Python over the problem's inputs.

    Names resolve, in order, to `#define` constants, scalar kernel parameters (`int(inputs["n"])`), and local
    constants of the kernel declared once with an initializer (translated in turn). Division truncates as in C
    (`_ww_tdiv`, defined by the launch code). Anything else (calls, members, pointers) gives None.
    """

    def __init__(self, src: KernelSource, fn: Function) -> None:
        self.src = src
        self.fn = fn
        self.node = src.function_node(fn)
        self.scalars = {p.name for p in fn.params if not p.is_pointer}
        self._depth = 0

    def translate(self, node: Node) -> str | None:
        """Return the Python text of an expression node, or None."""
        self._depth += 1
        try:
            if self._depth > 12:
                return None
            return self._translate(node)
        finally:
            self._depth -= 1

    def _translate(self, node: Node) -> str | None:
        t = node.type
        if t == "number_literal":
            text = self.src.text_of(node).rstrip("uUlL")
            try:
                return str(int(text, 0))
            except ValueError:
                return None
        if t == "identifier":
            return self._name(self.src.text_of(node))
        if t == "parenthesized_expression" and node.named_child_count == 1:
            inner = self.translate(node.named_children[0])
            return f"({inner})" if inner is not None else None
        if t == "cast_expression":
            value = node.child_by_field_name("value")
            return self.translate(value) if value is not None else None
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            arg = node.child_by_field_name("argument")
            if op is None or arg is None or op.type not in ("-", "+", "~"):
                return None
            inner = self.translate(arg)
            return f"({op.type}{inner})" if inner is not None else None
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if op is None or left is None or right is None:
                return None
            a, b = self.translate(left), self.translate(right)
            if a is None or b is None:
                return None
            if op.type == "/":
                return f"_ww_tdiv({a}, {b})"
            if op.type in ("+", "-", "*", "%", "<<", ">>", "&", "|", "^"):
                return f"({a} {op.type} {b})"
        return None

    def _name(self, name: str) -> str | None:
        value = self.src.macro_value(name)
        if value is not None:
            return str(value)
        if name in self.scalars:
            return f'int(inputs["{name}"])'
        init = local_constant(self.src, self.fn, name)
        if init is None:
            return None
        inner = self.translate(init)
        return f"({inner})" if inner is not None else None


def local_constant(src: KernelSource, fn: Function, name: str) -> Node | None:
    """Return the initializer of a local declared once and never assigned again, else None."""
    node = src.function_node(fn)
    if node is None:
        return None
    inits = []
    for decl in src.nodes(node, ("init_declarator",)):
        target = decl.child_by_field_name("declarator")
        if target is not None and target.type == "identifier" and src.text_of(target) == name:
            value = decl.child_by_field_name("value")
            if value is not None:
                inits.append(value)
    if len(inits) != 1:
        return None
    for a in src.nodes(node, ("assignment_expression", "update_expression")):
        target = a.child_by_field_name("left") or a.child_by_field_name("argument")
        if target is not None and target.type == "identifier" and src.text_of(target) == name:
            return None
    return inits[0]
