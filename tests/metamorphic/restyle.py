"""A restyler for CUDA sources: semantics-preserving rewrites that change how code is spelled, not what it computes.

Each variant is a pure function `(source) -> restyled source | None` (None: nothing in the source to restyle). The
variants find what they change with tree-sitter (syntax nodes, never regular expressions over code) and edit byte
ranges, so a restyled file differs from the original only where the variant meant it to. They are what the
metamorphic tests feed every card's positive and near-miss fixtures: a matcher that reads semantics gives the same
answer on every variant.

The variants keep C semantics under the conditions they check: operands are swapped only for `+` and `*` between
side-effect-free operands, `/ 2^k` becomes `>> k` only for operands that cannot be negative (the built-in index
vectors, variables declared unsigned), `for` becomes `while` only without `continue` in the body, an index is
hoisted only out of expression statements that do not change what it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from warpwise.analyzers.parse import parse_tree

Node = Any
Edit = tuple[int, int, bytes]

_BUILTINS = (b"threadIdx", b"blockIdx", b"blockDim", b"gridDim")
_OP_CHARS = b"+-*/%&|^<>=!~"


def _nodes(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _in_body(node: Node) -> bool:
    """Return whether a node sits inside a function body (not in a directive)."""
    p = node.parent
    while p is not None:
        if p.type.startswith("preproc") and p.type not in ("preproc_if", "preproc_ifdef", "preproc_else"):
            return False
        if p.type == "compound_statement" and p.parent is not None and p.parent.type == "function_definition":
            return True
        p = p.parent
    return False


def _function_of(node: Node) -> Node | None:
    p = node.parent
    while p is not None and p.type != "function_definition":
        p = p.parent
    return p


def _apply(src: bytes, edits: list[Edit]) -> bytes | None:
    """Apply non-overlapping edits (later ones first); None when there are none."""
    if not edits:
        return None
    out = src
    last = len(src) + 1
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            continue
        out = out[:start] + text + out[end:]
        last = start
    return out if out != src else None


def _pick(edits: list[Edit]) -> list[Edit]:
    """Keep the first of overlapping edits (in order of start), so that they can all be applied."""
    kept: list[Edit] = []
    end = -1
    for e in sorted(edits, key=lambda e: (e[0], -e[1])):
        if e[0] >= end:
            kept.append(e)
            end = max(e[1], e[0] + 1)
    return kept


def _text(src: bytes, node: Node) -> bytes:
    return src[node.start_byte : node.end_byte]


def _pure(node: Node) -> bool:
    """Return whether an expression has no calls, assignments or increments."""
    return not any(
        n.type in ("call_expression", "assignment_expression", "update_expression", "comma_expression")
        for n in _nodes(node)
    )


def _top(src: bytes) -> int:
    """Return the offset after the last top-level `#include` (where declarations may be added)."""
    tree = parse_tree(src)
    at = 0
    for child in tree.root_node.children:
        if child.type == "preproc_include":
            at = child.end_byte
    return at


def _prepend(src: bytes, text: bytes) -> bytes:
    at = _top(src)
    sep = b"" if at == 0 or src[at - 1 : at] == b"\n" else b"\n"
    return src[:at] + sep + text + src[at:]


# -- variants -------------------------------------------------------------------------------------------------------


def tight_operators(src: bytes) -> bytes | None:
    """Remove the spaces around binary operators (`blockDim.x / 2` -> `blockDim.x/2`)."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type != "binary_expression" or not _in_body(n):
            continue
        left, op, right = (
            n.child_by_field_name("left"),
            n.child_by_field_name("operator"),
            n.child_by_field_name("right"),
        )
        if left is None or op is None or right is None:
            continue
        gap = src[left.end_byte : right.start_byte]
        if gap.strip() != _text(src, op):
            continue
        r, lft = _text(src, right), _text(src, left)
        if (r and r[:1] in _OP_CHARS) or (lft and lft[-1:] in _OP_CHARS):
            continue
        edits.append((left.end_byte, right.start_byte, _text(src, op)))
    return _apply(src, edits)


def split_arguments(src: bytes) -> bytes | None:
    """Put every argument and parameter after the first on its own line."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type == "," and n.parent is not None and n.parent.type in ("argument_list", "parameter_list"):
            if n.parent.parent is not None and n.parent.parent.type.startswith("preproc"):
                continue
            nxt = n.next_sibling
            if nxt is None:
                continue
            edits.append((n.end_byte, nxt.start_byte, b"\n        "))
    return _apply(src, edits)


def rename_locals(src: bytes) -> bytes | None:
    """Rename every parameter and local variable of every function (`i` -> `i_rn`)."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for fn in _nodes(tree.root_node):
        if fn.type != "function_definition":
            continue
        declared: set[bytes] = set()
        for n in _nodes(fn):
            if n.type in ("parameter_declaration", "declaration", "init_declarator", "for_range_loop"):
                decl = n.child_by_field_name("declarator")
                while decl is not None and decl.type not in ("identifier",):
                    nxt = decl.child_by_field_name("declarator")
                    if nxt is None:
                        named = [c for c in decl.named_children if c.type == "identifier"]
                        nxt = named[0] if named else None
                    decl = nxt
                if decl is not None and decl.type == "identifier":
                    declared.add(_text(src, decl))
        if not declared:
            continue
        for n in _nodes(fn):
            if n.type == "identifier" and _text(src, n) in declared and not _in_directive(n):
                edits.append((n.start_byte, n.end_byte, _text(src, n) + b"_rn"))
    return _apply(src, edits)


def _in_directive(node: Node) -> bool:
    p = node.parent
    while p is not None:
        if p.type.startswith("preproc") and p.type not in ("preproc_if", "preproc_ifdef", "preproc_else"):
            return True
        p = p.parent
    return False


def commute_operands(src: bytes) -> bytes | None:
    """Swap the operands of `+` and `*` (`a * b` -> `b * a`) where neither has side effects."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type != "binary_expression" or not _in_body(n):
            continue
        op = n.child_by_field_name("operator")
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if op is None or op.type not in ("+", "*") or left is None or right is None:
            continue
        if not (_pure(left) and _pure(right)):
            continue
        if any(c.type == "comment" for c in n.children):
            continue
        gap = src[left.end_byte : right.start_byte]
        edits.append((n.start_byte, n.end_byte, _text(src, right) + gap + _text(src, left)))
    return _apply(src, _pick(edits))


def _unsigned_names(src: bytes, fn: Node) -> set[bytes]:
    out: set[bytes] = set()
    for n in _nodes(fn):
        if n.type in ("declaration", "parameter_declaration"):
            ty = n.child_by_field_name("type")
            if ty is None:
                continue
            t = _text(src, ty)
            if not (t.startswith(b"unsigned") or t in (b"uint", b"size_t", b"uint32_t", b"uint64_t")):
                continue
            for d in n.children_by_field_name("declarator"):
                inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                if inner is not None and inner.type == "identifier":
                    out.add(_text(src, inner))
    return out


def _non_negative(src: bytes, node: Node, unsigned: set[bytes]) -> bool:
    """Return whether an operand cannot be negative: built-in index fields and unsigned variables."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type == "field_expression":
        arg = node.child_by_field_name("argument")
        return arg is not None and _text(src, arg) in _BUILTINS
    return node.type == "identifier" and _text(src, node) in unsigned


def division_shift(src: bytes) -> bytes | None:
    """Write `x / 2^k` as `x >> k` and `x >> k` as `x / 2^k` (also `/=` and `>>=`) for non-negative `x`."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type not in ("binary_expression", "assignment_expression") or not _in_body(n):
            continue
        fn = _function_of(n)
        if fn is None:
            continue
        op = n.child_by_field_name("operator")
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if op is None or left is None or right is None or right.type != "number_literal":
            continue
        if not _non_negative(src, left, _unsigned_names(src, fn)):
            continue
        try:
            value = int(_text(src, right).rstrip(b"uUlL"), 0)
        except ValueError:
            continue
        kind = op.type
        if kind in ("/", "/=") and value > 1 and value & (value - 1) == 0:
            new_op, new_val = (b">>" if kind == "/" else b">>="), str(value.bit_length() - 1).encode()
        elif kind in (">>", ">>=") and 0 < value < 31:
            new_op, new_val = (b"/" if kind == ">>" else b"/="), str(1 << value).encode()
        else:
            continue
        edits.append((op.start_byte, op.end_byte, new_op))
        edits.append((right.start_byte, right.end_byte, new_val))
    return _apply(src, edits)


def typedef_float(src: bytes) -> bytes | None:
    """Name the element type through a typedef (`typedef float ww_real;`, every `float` written `ww_real`)."""
    tree = parse_tree(src)
    edits = [
        (n.start_byte, n.end_byte, b"ww_real")
        for n in _nodes(tree.root_node)
        if n.type == "primitive_type" and _text(src, n) == b"float" and not _in_directive(n)
    ]
    out = _apply(src, edits)
    return _prepend(out, b"typedef float ww_real; // the element type\n") if out is not None else None


def macro_constants(src: bytes) -> bytes | None:
    """Name the integer constants of function bodies by macros with trailing comments (`#define WW_K1 256 // ...`)."""
    tree = parse_tree(src)
    values: dict[bytes, bytes] = {}
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type != "number_literal" or not _in_body(n) or _in_directive(n):
            continue
        text = _text(src, n)
        if any(c in text.lower() for c in (b".", b"e", b"f")) and not text.lower().startswith(b"0x"):
            continue
        try:
            if int(text.rstrip(b"uUlL"), 0) < 2:
                continue
        except ValueError:
            continue
        name = values.setdefault(text, b"WW_K%d" % (len(values) + 1))
        edits.append((n.start_byte, n.end_byte, name))
    out = _apply(src, edits)
    if out is None:
        return None
    defines = b"".join(b"#define %s %s // a named constant\n" % (name, text) for text, name in values.items())
    return _prepend(out, defines)


def for_to_while(src: bytes) -> bytes | None:
    """Write `for (init; cond; step) body` as `{ init; while (cond) { body step; } }` (no `continue` in body)."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type != "for_statement" or not _in_body(n):
            continue
        init, cond = n.child_by_field_name("initializer"), n.child_by_field_name("condition")
        step, body = n.child_by_field_name("update"), n.child_by_field_name("body")
        if init is None or cond is None or step is None or body is None:
            continue
        if any(c.type == "continue_statement" for c in _nodes(body)):
            continue
        prev = n.prev_sibling
        if prev is not None and prev.type.startswith("preproc"):
            continue
        init_text = _text(src, init)
        if not init_text.rstrip().endswith(b";"):
            init_text += b";"
        line_start = src.rfind(b"\n", 0, n.start_byte) + 1
        indent = src[line_start : n.start_byte]
        indent = indent if not indent.strip() else b""
        unit = indent + b"  "
        if body.type == "compound_statement":
            inner = src[body.start_byte + 1 : body.end_byte - 1].rstrip() + b"\n"
        else:
            inner = b"\n" + unit + b"  " + _text(src, body) + b"\n"
        text = (
            b"{\n"
            + unit
            + init_text
            + b"\n"
            + unit
            + b"while ("
            + _text(src, cond)
            + b") {"
            + inner
            + unit
            + b"  "
            + _text(src, step)
            + b";\n"
            + unit
            + b"}\n"
            + indent
            + b"}"
        )
        edits.append((n.start_byte, n.end_byte, text))
    return _apply(src, _pick(edits))


_BODY_FIELDS = {
    "if_statement": ("consequence", "alternative"),
    "for_statement": ("body",),
    "while_statement": ("body",),
}


def add_braces(src: bytes) -> bytes | None:
    """Put braces around every single-statement body of `if`, `else`, `for` and `while`."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        fields = _BODY_FIELDS.get(n.type)
        if fields is None or not _in_body(n):
            continue
        for f in fields:
            body = n.child_by_field_name(f)
            if body is not None and body.type == "else_clause":
                body = body.named_children[0] if body.named_child_count else None
            if body is None or body.type in ("compound_statement", "if_statement"):
                continue
            edits.append((body.start_byte, body.start_byte, b"{ "))
            edits.append((body.end_byte, body.end_byte, b" }"))
    return _apply(src, edits)


def remove_braces(src: bytes) -> bytes | None:
    """Drop the braces of bodies that hold one expression statement."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        fields = _BODY_FIELDS.get(n.type)
        if fields is None or not _in_body(n):
            continue
        for f in fields:
            body = n.child_by_field_name(f)
            if body is not None and body.type == "else_clause":
                body = body.named_children[0] if body.named_child_count else None
            if body is None or body.type != "compound_statement":
                continue
            inner = [c for c in body.named_children]
            if len(inner) != 1 or inner[0].type != "expression_statement":
                continue
            edits.append((body.start_byte, body.end_byte, _text(src, inner[0])))
    return _apply(src, _pick(edits))


def unsigned_spelling(src: bytes) -> bytes | None:
    """Spell `unsigned int` as `unsigned` and `unsigned` as `unsigned int`."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type != "sized_type_specifier" or _in_directive(n):
            continue
        words = _text(src, n).split()
        if words == [b"unsigned", b"int"]:
            edits.append((n.start_byte, n.end_byte, b"unsigned"))
        elif words == [b"unsigned"]:
            edits.append((n.start_byte, n.end_byte, b"unsigned int"))
    return _apply(src, edits)


def uint_alias(src: bytes) -> bytes | None:
    """Spell `unsigned int` and `unsigned` as `uint`, declared by a typedef."""
    tree = parse_tree(src)
    edits = [
        (n.start_byte, n.end_byte, b"uint")
        for n in _nodes(tree.root_node)
        if n.type == "sized_type_specifier"
        and _text(src, n).split() in ([b"unsigned", b"int"], [b"unsigned"])
        and not _in_directive(n)
    ]
    out = _apply(src, edits)
    return _prepend(out, b"typedef unsigned int uint;\n") if out is not None else None


def east_const(src: bytes) -> bytes | None:
    """Move a leading `const` after the type of parameters and locals (`const float* x` -> `float const* x`)."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    for n in _nodes(tree.root_node):
        if n.type not in ("parameter_declaration", "declaration") or _in_directive(n):
            continue
        ty = n.child_by_field_name("type")
        first = n.children[0] if n.children else None
        if ty is None or first is None or first.type != "type_qualifier" or _text(src, first) != b"const":
            continue
        if first.end_byte > ty.start_byte:
            continue
        edits.append((first.start_byte, ty.start_byte, b""))
        edits.append((ty.end_byte, ty.end_byte, b" const"))
    return _apply(src, edits)


def hoist_index(src: bytes) -> bytes | None:
    """Compute the first compound index of each expression statement into a local just before it."""
    tree = parse_tree(src)
    edits: list[Edit] = []
    count = 0
    for stmt in _nodes(tree.root_node):
        if stmt.type != "expression_statement" or not _in_body(stmt):
            continue
        if stmt.parent is None or stmt.parent.type != "compound_statement":
            continue
        inner = stmt.named_children[0] if stmt.named_child_count == 1 else None
        if inner is None or (inner.type == "assignment_expression" and not _pure(inner.child_by_field_name("right"))):
            continue
        if inner.type not in ("assignment_expression",) or any(n.type == "update_expression" for n in _nodes(inner)):
            continue
        for n in _nodes(inner):
            if n.type != "subscript_expression":
                continue
            idx = n.child_by_field_name("indices") or n.child_by_field_name("index")
            if idx is not None and idx.type == "subscript_argument_list":
                idx = idx.named_children[0] if idx.named_child_count == 1 else None
            if idx is None or idx.type != "binary_expression" or not _pure(idx):
                continue
            count += 1
            name = b"ww_i%d" % count
            edits.append((stmt.start_byte, stmt.start_byte, b"const auto " + name + b" = " + _text(src, idx) + b";\n"))
            edits.append((idx.start_byte, idx.end_byte, name))
            break
    return _apply(src, edits)


def comment_statements(src: bytes) -> bytes | None:
    """Put a comment after every `;` of function bodies."""
    tree = parse_tree(src)
    edits = [
        (n.end_byte, n.end_byte, b" /* ; */")
        for n in _nodes(tree.root_node)
        if n.type == ";" and _in_body(n) and not _in_directive(n)
    ]
    return _apply(src, edits)


VARIANTS: dict[str, Callable[[bytes], bytes | None]] = {
    "tight-operators": tight_operators,
    "split-arguments": split_arguments,
    "rename-locals": rename_locals,
    "commute-operands": commute_operands,
    "division-shift": division_shift,
    "typedef-float": typedef_float,
    "macro-constants": macro_constants,
    "for-to-while": for_to_while,
    "add-braces": add_braces,
    "remove-braces": remove_braces,
    "unsigned-spelling": unsigned_spelling,
    "uint-alias": uint_alias,
    "east-const": east_const,
    "hoist-index": hoist_index,
    "comment-statements": comment_statements,
}
"""Every variant by name (the names card files use to list the variants they refuse)."""
