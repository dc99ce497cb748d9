"""Where a launch argument held in a class or struct member comes from, for `spec_missing` to name it.

A launch inside a method (`void QMatrix::reconstruct() { k<<<...>>>(cuda_q_weight, height); }`) passes members
that its constructor set from the constructor's own parameters, whose sizes only the code that builds the object
knows; a launch passing `b->cuda_bias` or `r.n` reads a member of another object. Neither is resolved into a
spec yet: this module finds the member and where the file sets it (a constructor's initializer list or an
assignment in a constructor's body, read from the syntax tree), so the missing piece names the member, its
class and its origin instead of "no cudaMalloc". A local declared once from a member and never assigned again
(`half* dest = b->cuda_bias;`, also what `callers.py` writes when it inlines a launcher into its caller) names that
member.
"""

from __future__ import annotations

from typing import Any

from warpwise.analyzers.model import FileModel, Function

_ACCESS = ("field_expression",)


def _text(src: bytes, node: Any) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _definition(model: FileModel, fn: Function) -> Any:
    node = model.tree.root_node.descendant_for_byte_range(fn.base, fn.base + fn.length)
    while node is not None and node.type != "function_definition":
        node = node.parent
    return node


def _qualified(src: bytes, definition: Any) -> tuple[str, str] | None:
    """Return (class, method) of a definition written `Class::method(...)`, else None."""
    decl = definition.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    name = decl.child_by_field_name("declarator") if decl is not None else None
    if name is None or name.type != "qualified_identifier":
        return None
    scope, leaf = name.child_by_field_name("scope"), name.child_by_field_name("name")
    if scope is None or leaf is None:
        return None
    return _text(src, scope), _text(src, leaf)


def _walk(node: Any) -> Any:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _is_member_ref(src: bytes, node: Any, member: str) -> bool:
    """Whether `node` names `member` (bare, or `this->member`)."""
    if node.type == "identifier":
        return _text(src, node) == member
    if node.type == "field_expression":
        arg, field = node.child_by_field_name("argument"), node.child_by_field_name("field")
        return arg is not None and field is not None and _text(src, arg) == "this" and _text(src, field) == member
    return False


def _set_in_constructors(model: FileModel, cls: str, member: str) -> list[str]:
    """Return how each constructor of `cls` in this file sets `member`: `` `Holder()` from `d` `` for one plain
    assignment, else every assignment with its operator (`` `QMatrix()` (`= 0`, `+= rows`) ``)."""
    src = model.text
    found: list[str] = []
    for fn in model.functions:
        if fn.name != cls:
            continue
        definition = _definition(model, fn)
        if definition is None:
            continue
        sets: list[tuple[str, str]] = []
        for node in _walk(definition):
            if node.type == "field_initializer":
                ident = next((c for c in node.named_children if c.type == "field_identifier"), None)
                args = next((c for c in node.named_children if c.type in ("argument_list", "initializer_list")), None)
                if ident is not None and _text(src, ident) == member and args is not None:
                    sets.append(("=", _text(src, args)[1:-1].strip()))
            elif node.type == "assignment_expression":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                op = node.child_by_field_name("operator")
                if left is not None and right is not None and _is_member_ref(src, left, member):
                    sets.append((_text(src, op) if op is not None else "=", _text(src, right).strip()))
        sets = list(dict.fromkeys(sets))
        if len(sets) == 1 and sets[0][0] == "=":
            found.append(f"`{cls}()` from `{sets[0][1]}`")
        elif sets:
            found.append(f"`{cls}()` (" + ", ".join(f"`{op} {value}`" for op, value in sets) + ")")
    return found


def _declares_field(model: FileModel, cls: str, member: str) -> bool:
    """Whether this file's `class cls` / `struct cls` declares a field `member`."""
    src = model.text
    for node in _walk(model.tree.root_node):
        if node.type not in ("class_specifier", "struct_specifier"):
            continue
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is None or body is None or _text(src, name) != cls:
            continue
        for decl in _walk(body):
            if decl.type == "field_identifier" and _text(src, decl) == member:
                return True
    return False


def _initializer(model: FileModel, caller: Function, name: str) -> Any:
    """Return the initializer of the one declaration of local `name` in `caller` (`half* dest = b->bias;`)."""
    definition = _definition(model, caller)
    if definition is None:
        return None
    src = model.text
    inits = []
    for node in _walk(definition):
        if node.type == "assignment_expression":
            left = node.child_by_field_name("left")
            if left is not None and left.type == "identifier" and _text(src, left) == name:
                return None  # set again after its declaration: which value reaches the launch is not read here
        if node.type != "init_declarator":
            continue
        decl = node.child_by_field_name("declarator")
        while decl is not None and decl.type in ("pointer_declarator", "reference_declarator"):
            decl = decl.child_by_field_name("declarator") or (decl.named_children[-1] if decl.named_children else None)
        if decl is not None and decl.type == "identifier" and _text(src, decl) == name:
            inits.append(node.child_by_field_name("value"))
    return inits[0] if len(inits) == 1 else None


def member_origin(model: FileModel, caller: Function, arg: Any, depth: int = 0) -> str | None:
    """Return a phrase naming the member a launch argument reads and where it is set, or None if it is no member.

    `arg` is the argument's syntax node (from `infer._launch_args`).
    """
    src = model.text
    node = arg
    while node is not None and node.type in ("cast_expression", "parenthesized_expression"):
        node = node.child_by_field_name("value") or (node.named_children[-1] if node.named_children else None)
    if node is None:
        return None
    if node.type in _ACCESS:
        obj, field = node.child_by_field_name("argument"), node.child_by_field_name("field")
        if obj is None or field is None:
            return None
        obj_text, member = _text(src, obj), _text(src, field)
        if obj_text != "this":
            kind = caller.param(obj_text)
            of = (
                f"`{obj_text}` (a `{kind.type}` parameter of `{caller.name}()`)"
                if kind is not None
                else f"`{obj_text}`"
            )
            return f"member `{member}` of {of}, which the host code here does not size"
    elif node.type == "identifier":
        member = _text(src, node)
        if member in caller.locals and depth == 0:
            init = _initializer(model, caller, member)
            found = member_origin(model, caller, init, depth + 1) if init is not None else None
            return f"`{member}` is initialized from {found}" if found else None
        if caller.param(member) is not None or member in caller.locals:
            return None
    else:
        return None
    definition = _definition(model, caller)
    qual = _qualified(src, definition) if definition is not None else None
    if qual is None:
        return None
    cls = qual[0]
    if member in model.constants:
        return None
    sets = _set_in_constructors(model, cls, member)
    if sets:
        where = f"set in {' and '.join(sets)}"
    elif _declares_field(model, cls, member):
        where = "that no constructor in this file sets"
    else:
        return None  # a global or a member declared elsewhere: claim nothing
    return f"member `{member}` of `{cls}`, {where}; only the code that builds the `{cls}` knows its value"
