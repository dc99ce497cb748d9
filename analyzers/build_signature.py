"""The model builder's reading of a function's signature: template parameters, parameters, launch bounds."""

from __future__ import annotations

from warpwise.analyzers.build_file import eval_numeric_text
from warpwise.analyzers.build_state import _BuilderState
from warpwise.analyzers.build_syntax import (
    _F_DECLARATOR,
    _F_DEFAULT_TYPE,
    _F_DEFAULT_VALUE,
    _F_NAME,
    _F_PARAMETERS,
    _F_TYPE,
    _RESTRICT_WORDS,
    Node,
    _declarator_name,
    _named,
)
from warpwise.analyzers.model import FunctionKind, Param, TemplateParam


class _SignatureAnalysis(_BuilderState):
    """Read the function's header; template parameters bound by the file's launches become constants."""

    def kind(self) -> FunctionKind:
        return self.fkind

    def template_params(self) -> tuple[TemplateParam, ...]:
        if self.template is None:
            return ()
        plist = self.template.child_by_field_id(_F_PARAMETERS)
        out: list[TemplateParam] = []
        for p in _named(plist) if plist is not None else []:
            t = p.type
            if t in (
                "type_parameter_declaration",
                "optional_type_parameter_declaration",
                "variadic_type_parameter_declaration",
            ):
                names = [c for c in p.named_children if c.type == "type_identifier"]
                name = self.text(p.child_by_field_id(_F_NAME) or (names[0] if names else None))
                default = p.child_by_field_id(_F_DEFAULT_TYPE)
                out.append(TemplateParam(name, "type", self.text(default) if default is not None else None, None))
            elif t in ("parameter_declaration", "optional_parameter_declaration"):
                name = _declarator_name(p.child_by_field_id(_F_DECLARATOR), self.src) or ""
                default = p.child_by_field_id(_F_DEFAULT_VALUE)
                value = self.ev.const_int(default) if default is not None else None
                out.append(TemplateParam(name, "value", self.text(default) if default is not None else None, value))
        for i, tp in enumerate(out):
            bound = self.binding[i] if i < len(self.binding) else None
            if tp.kind == "type":
                # A template parameter shadows a file-level alias of the same name.
                self.type_binding.pop(tp.name, None)
                self.file_types.pop(tp.name, None)
                if bound:
                    self.type_binding[tp.name] = bound
                continue
            value = eval_numeric_text(bound, self.consts) if bound else None
            if value is None:
                value = tp.value
            if value is not None:
                self.consts[tp.name] = value
            else:
                self.scalars.add(tp.name)
        return tuple(out)

    def binding_items(self) -> tuple[tuple[str, str], ...]:
        """Return the template arguments this analysis assumed (from the file's launch sites)."""
        if not self.binding:
            return ()
        names = [tp.name for tp in self._tparams]
        return tuple((names[i], arg) for i, arg in enumerate(self.binding) if i < len(names))

    def params(self, declarator: Node | None) -> tuple[Param, ...]:
        plist = declarator.child_by_field_id(_F_PARAMETERS) if declarator is not None else None
        if plist is None:
            return ()
        t = self.t
        base = self.base
        type_binding = self.type_binding
        scalars = self.scalars
        by_name = self._param_by_name
        out: list[Param] = []
        for p in plist.named_children:
            pt = p.type
            if pt != "parameter_declaration" and pt != "optional_parameter_declaration":
                continue
            type_node = p.child_by_field_id(_F_TYPE)
            base_type = t(type_node) if type_node is not None else ""
            if type_binding:
                base_type = type_binding.get(base_type, base_type)
            pointee_const = False
            for c in p.children:
                if c.type == "type_qualifier" and t(c) == "const":
                    pointee_const = True
                    break
            depth = 0
            restrict = False
            reference = False
            node = p.child_by_field_id(_F_DECLARATOR)
            name = ""
            while node is not None:
                nt = node.type
                if nt == "identifier":
                    name = t(node)
                    break
                if nt == "pointer_declarator":
                    depth += 1
                    for c in node.children:
                        if c.type == "type_qualifier" and t(c) in _RESTRICT_WORDS:
                            restrict = True
                elif nt == "reference_declarator":
                    reference = True
                elif nt == "array_declarator" or nt == "abstract_array_declarator":
                    depth += 1
                nxt = node.child_by_field_id(_F_DECLARATOR)
                if nxt is None:
                    named = [c for c in node.named_children if c.type != "type_qualifier"]
                    nxt = named[-1] if named else None
                node = nxt
            type_text = " ".join(t(p).split())
            if name:
                type_text = type_text.rsplit(name, 1)[0].strip() or type_text
            param = Param(
                len(out),
                name,
                type_text,
                base_type,
                depth,
                pointee_const,
                restrict,
                reference,
                (p.start_byte - base, p.end_byte - base),
            )
            out.append(param)
            by_name.setdefault(name, param)
            if name:
                scalars.add(name)
        return tuple(out)

    def launch_bounds(self) -> tuple[str, ...] | None:
        for c in self.fn.children:
            if c.type == "launch_bounds":
                return tuple(self.text(a) for a in _named(c))
        return None
