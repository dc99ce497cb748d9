"""The model builder's reading of local declarations: local names and arrays, `dim3`s, shared-memory arrays
(their sizes are evaluated once every definition is known) and pointers into other arrays."""

from __future__ import annotations

from warpwise.analyzers.build_state import _BuilderState
from warpwise.analyzers.build_syntax import (
    _DECLARATOR_WRAPPERS,
    _F_ARGUMENT,
    _F_DECLARATOR,
    _F_INDICES,
    _F_LEFT,
    _F_OPERATOR,
    _F_PARAMETERS,
    _F_RIGHT,
    _F_SIZE,
    _F_TYPE,
    _F_VALUE,
    _QUALIFIER_TYPES,
    Node,
    _named,
)


class _DeclarationAnalysis(_BuilderState):
    """Record the function's local declarations as definitions, types, arrays and pointer aliases."""

    def _declaration(self, d: Node) -> None:
        t = self.t
        is_shared = False
        is_extern = False
        for c in d.children:
            ct = c.type
            if ct == "__shared__":
                is_shared = True
            elif ct in _QUALIFIER_TYPES:
                for g in c.children:
                    if g.type == "__shared__":
                        is_shared = True
                        break
                if ct == "storage_class_specifier" and t(c) == "extern":
                    is_extern = True
        type_node = d.child_by_field_id(_F_TYPE)
        type_text = t(type_node) if type_node is not None else ""
        if type_text in self.file_types:
            # File-level aliases are resolved; template parameters keep their names (code is generated from them).
            type_text = self.file_types[type_text]
        for decl in d.children_by_field_id(_F_DECLARATOR):
            node = decl
            value: Node | None = None
            if node.type == "init_declarator":
                value = node.child_by_field_id(_F_VALUE)
                node = node.child_by_field_id(_F_DECLARATOR)
            dims: list[Node | None] = []
            depth = 0
            while node is not None:
                nt = node.type
                if nt not in _DECLARATOR_WRAPPERS:
                    break
                if nt == "array_declarator":
                    dims.append(node.child_by_field_id(_F_SIZE))
                elif nt == "pointer_declarator":
                    depth += 1
                nxt = node.child_by_field_id(_F_DECLARATOR)
                if nxt is None:
                    named = _named(node)
                    nxt = named[-1] if named else None
                node = nxt
            if node is None:
                continue
            nt = node.type
            if nt == "function_declarator" and (type_text == "dim3" or type_text == "uint3"):
                # `dim3 block(TILE, ROWS);` parses as a function declaration; read it as the constructor call.
                inner = node.child_by_field_id(_F_DECLARATOR)
                plist = node.child_by_field_id(_F_PARAMETERS)
                if inner is not None and plist is not None:
                    self.dim3[t(inner)] = _named(plist)
                    self.locals[t(inner)] = type_text
                continue
            if nt != "identifier":
                continue
            name = t(node)
            if dims:
                dims.reverse()
            if is_shared:
                self._pending_shared.append((name, type_text, dims, is_extern, d, node))
                continue
            if dims:
                self.locals[name] = type_text + "*" * depth + "".join(f"[{t(x)}]" for x in dims if x is not None)
                self.local_arrays[name] = type_text
                continue
            self.locals[name] = type_text + "*" * depth if depth else type_text
            if value is not None:
                vt = value.type
                if vt == "argument_list" or vt == "initializer_list":
                    if type_text == "dim3" or type_text == "uint3":
                        self.dim3[name] = _named(value)
                        continue
                    args = _named(value)
                    value = args[0] if len(args) == 1 else None
                    if vt == "argument_list" and value is not None and value.type == "initializer_list":
                        args = _named(value)
                        value = args[0] if len(args) == 1 else None
                self._define(name, "=", value, d.start_byte)
                if depth:
                    self._maybe_alias(name, value, type_text)
            else:
                self._define(name, "decl", None, d.start_byte)

    def _maybe_alias(self, name: str, value: Node | None, elem_type: str | None) -> None:
        """Record `name` as a pointer into another array when its value is `base`, `base + off` or `&base[off]`."""
        node = value
        offset: Node | None = None
        cast_type: str | None = None
        for _ in range(6):
            if node is None:
                return
            t = node.type
            if t == "identifier":
                base = self.t(node)
                if base == name:
                    return
                ptype = elem_type or cast_type
                if cast_type is not None:
                    ptype = cast_type
                self.aliases[name] = (
                    base,
                    offset,
                    " ".join(ptype.replace("const", " ").split()) if ptype else None,
                )
                return
            if t == "parenthesized_expression":
                inner = _named(node)
                node = inner[0] if inner else None
            elif t == "cast_expression" or t == "call_expression":
                cast = self._cast(node)
                if cast is None:
                    return
                cast_type, node = cast
            elif t == "binary_expression":
                op = node.child_by_field_id(_F_OPERATOR)
                if op is None or op.type not in ("+", "-"):
                    return
                offset = node.child_by_field_id(_F_RIGHT)
                node = node.child_by_field_id(_F_LEFT)
            elif t == "pointer_expression" and node.child_by_field_id(_F_OPERATOR).type == "&":
                arg = node.child_by_field_id(_F_ARGUMENT)
                if arg is not None and arg.type == "subscript_expression":
                    idx = _named(arg.child_by_field_id(_F_INDICES))
                    offset = idx[0] if len(idx) == 1 else None
                    node = arg.child_by_field_id(_F_ARGUMENT)
                else:
                    return
            else:
                return
