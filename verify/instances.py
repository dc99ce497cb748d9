"""Template kernels instantiated through host templates: the instances a file makes, found by following its host code.

Real files seldom launch a template kernel with its arguments in sight. They launch it from a host template
whose own parameters are bound further up:

    template <int kNThreads, typename input_t> void fwd_launch(Params &p) {
      BOOL_SWITCH(p.n % 4 == 0, kIsVec, [&] {
        using Ktraits = Traits<kNThreads, kIsVec, input_t>;
        auto kernel = &fwd_kernel<Ktraits>;                       // or fwd_kernel<Ktraits><<<...>>>(...)
        ...
    template <typename input_t> void fwd(Params &p) { fwd_launch<128, input_t>(p); }
    template void fwd<float>(Params &p);                            // the explicit instantiation

or leave the arguments to deduction (`norm<<<g, b>>>(out, in, n)` inside `template <typename T, typename U>
void host_norm(U* out, const T* in, int n)`). `instantiations` follows such a chain: the reference's arguments (or
the ones deduced from the types of the arguments passed), then the names local to the reference (`using` aliases,
the constants and type aliases a switch or dispatch macro declares, `scalar_t` of an `AT_DISPATCH_*`), then the
host template's own parameters, bound by each of its callers' template arguments or its explicit instantiations,
up to a few levels. What it returns are instances the file itself makes, so NVRTC can build the same kernels nvcc
builds from the whole file; it gives up (returns nothing) when a name stays unknown.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from warpwise.analyzers.model import FileModel, Function
from warpwise.verify import torchext

_MAX_DEPTH = 4
_MAX_RESULTS = 8
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_TYPED_POINTER = re.compile(
    r"[\w\[\]]+\s*(?:\.|->)\s*\w*(?:data_ptr|DATA_PTR|data)\w*\s*<\s*([\w:\s<>,]+?)\s*>\s*\(\s*\)"
)
_TERNARY = re.compile(r"^[^?]*\?\s*(.+?)\s*:\s*(?:nullptr|NULL|0)$", re.S)
_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict|typename|struct|class)\b")


def _text(src: bytes, node: Any) -> str:
    """Return a node's source text."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def template_args_at(text: str, start: int) -> tuple[list[str], int] | None:
    """Return the comma-separated arguments of the `<...>` opening at `text[start]`, and the index after it."""
    if start >= len(text) or text[start] != "<" or text.startswith("<<", start):
        return None
    depth, i, parts, cur = 0, start, [], []
    while i < len(text):
        c = text[i]
        if c in "<([{":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c in ">)]}":
            depth -= 1
            if depth == 0:
                parts.append("".join(cur).strip())
                return [p for p in parts if p], i + 1
            cur.append(c)
        elif c == "," and depth == 1:
            parts.append("".join(cur).strip())
            cur = []
        elif c in ";":
            return None
        else:
            cur.append(c)
        i += 1
    return None


def _substitute(text: str, env: dict[str, str]) -> str:
    """Replace the names `env` binds (repeatedly, for aliases of aliases), leaving qualified names alone."""
    for _ in range(6):
        new = re.sub(
            r"(?<![\w:.])([A-Za-z_]\w*)\b(?!\s*::)",
            lambda m: env.get(m.group(1), m.group(1)),
            text,
        )
        if new == text:
            break
        text = new
    return " ".join(text.split())


def _substitute_once(text: str, env: dict[str, str]) -> str:
    """Replace each name `env` binds once (a macro's parameters by its arguments)."""
    return re.sub(r"\b\w+\b", lambda m: env.get(m.group(0), m.group(0)), text)


MAX_HEADERS = 2000
"""At most this many headers of a project are listed when a quoted include is looked up in its tree."""

_HEADER_SUFFIXES = frozenset({".h", ".cuh", ".hpp", ".hh", ".inl", ".cu"})


def _small(f: Path) -> bool:
    """Return whether a path is a readable file small enough to read as a header."""
    try:
        return f.is_file() and f.stat().st_size < 2_000_000
    except OSError:
        return False


def project_header(path: Path, name: str) -> Path | None:
    """Return the one header of the file's project whose path ends in the quoted include `name`, or None.

    A project's build names its include folders (`include_dirs` in setup.py, `include_directories` in CMake);
    without a configuration saying so, a quoted include that is neither next to the file nor in a configured
    folder is looked up in the project's tree (the folders `callers.project_root` finds): when exactly one
    header there has that path, it is the one the build's include folder gives. Two candidates are ambiguous
    and neither is read.
    """
    from warpwise.verify.callers import _SKIP_DIRS, project_root

    root = project_root(path)
    if root == path.resolve().parent:
        return None
    tail = "/" + name.replace("\\", "/").lstrip("./")
    matches: list[Path] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for f in files:
            if Path(f).suffix not in _HEADER_SUFFIXES:
                continue
            seen += 1
            full = Path(folder) / f
            if full.as_posix().endswith(tail) and _small(full):
                matches.append(full)
        if seen >= MAX_HEADERS or len(matches) > 1:
            break
    return matches[0] if len(matches) == 1 else None


def template_template_inner(param: Any) -> Any:
    """Return the declaration that names a template template parameter (`template <class> class Op`: `class
    Op`), or the parameter itself when it is another kind."""
    if param.type != "template_template_parameter_declaration":
        return param
    inner = [c for c in param.named_children if c.type != "template_parameter_list"]
    return inner[-1] if inner else param


class _File:
    """A file's text and tree, with the macros of the file and of the local headers it includes."""

    def __init__(self, model: FileModel, include_dirs: tuple[str, ...] = ()) -> None:
        self.model = model
        self.src = model.text
        self.text = model.text.decode("utf-8", "replace")
        self.macros: dict[str, tuple[list[str], str]] = {}
        texts = [self.text, *self._local_headers(include_dirs)]
        for t in texts:
            for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", t, re.M):
                params = [p.strip() for p in m.group(2).split(",") if p.strip()]
                self.macros.setdefault(m.group(1), (params, m.group(3).replace("\\\n", " ")))

    def _local_headers(self, include_dirs: tuple[str, ...]) -> list[str]:
        """Return the texts of the quoted includes found next to the file or in the include folders (else the
        project's one header of that path: see `project_header`)."""
        path = Path(self.model.path)
        out: list[str] = []
        for name in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', self.text, re.M)[:32]:
            found = next((f for f in (d / name for d in (path.parent, *map(Path, include_dirs))) if _small(f)), None)
            if found is None and self.model.path:
                found = project_header(path, name)
            if found is not None:
                try:
                    out.append(found.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
        return out

    def definition(self, fn: Function) -> Any:
        """Return a function's definition node."""
        node = self.model.tree.root_node.descendant_for_byte_range(fn.base, fn.base + 1)
        while node is not None and node.type != "function_definition":
            node = node.parent
        return node

    def template_params(self, fn: Function) -> list[tuple[str, str | None]]:
        """Return a host function's template parameters (name, default) in order."""
        node = self.definition(fn)
        tmpl = node.parent if node is not None else None
        if tmpl is None or tmpl.type != "template_declaration":
            return []
        params = tmpl.child_by_field_name("parameters")
        out: list[tuple[str, str | None]] = []
        for p in params.named_children if params is not None else []:
            p = template_template_inner(p)
            named = p.child_by_field_name("name") or p.child_by_field_name("declarator")
            ident = (
                [named]
                if named is not None
                else [c for c in p.named_children if c.type in ("type_identifier", "identifier")]
            )
            default = p.child_by_field_name("default_type") or p.child_by_field_name("default_value")
            if ident:
                out.append((_text(self.src, ident[-1]), _text(self.src, default) if default is not None else None))
        return out

    def local_env(self, fn: Function, offset: int, macros_only: bool = False) -> dict[str, str]:
        """Return the names bound around `offset` in a host function: aliases, macro-declared names, `scalar_t`."""
        env: dict[str, str] = {}
        node = self.definition(fn)
        if node is None:
            return env
        if macros_only:
            return self._macro_env(node, offset)
        before = self.src[node.start_byte : offset].decode("utf-8", "replace")
        for m in re.finditer(r"\busing\s+(\w+)\s*=\s*([^;]+);", before):
            env[m.group(1)] = " ".join(m.group(2).split())
        for m in re.finditer(
            r"\b(?:static\s+)?(?:constexpr|const(?=\s+(?:int|unsigned|size_t|int64_t|int32_t|uint32_t)\b))"
            r"\s+(?:static\s+|const\s+)*[\w:]+\s+(\w+)\s*=\s*([^;]+);",
            before,
        ):
            env[m.group(1)] = " ".join(m.group(2).split())
        found = torchext.dispatched_types(self.src, offset, self.model.tree)
        if found is not None:
            env["scalar_t"] = "float" if "float" in found[1] else found[1][0]
        for key, value in self._macro_env(node, offset).items():
            env.setdefault(key, value)
        return env

    def _macro_env(self, node: Any, offset: int) -> dict[str, str]:
        """Return the names the macro calls around `offset` declare, each with the first value the body gives it."""
        # A macro call around the offset that declares names (`BOOL_SWITCH(c, kIsVec, ...)`, a dispatch switch's
        # `using scalar_t_##LEVEL = float;`): each name takes the first value the macro's body gives it.
        env: dict[str, str] = {}
        calls: list[tuple[str, str]] = []
        n = self.model.tree.root_node.descendant_for_byte_range(offset, offset)
        while n is not None and n is not node:
            if n.type == "call_expression":
                f = n.child_by_field_name("function")
                args = n.child_by_field_name("arguments")
                name = _text(self.src, f) if f is not None else ""
                if name in self.macros and args is not None:
                    calls.append((name, _text(self.src, args)[1:-1]))
            n = n.parent
        # A macro argument holding statements (`DISPATCH(t, 0, "op", using acc_t = ...; k<<<...>>>(...);)`) is
        # no expression: the parser leaves an error node where the call is, so the calls around the offset are
        # also read from the text (innermost first, like the walk up the tree).
        calls += [c for c in self._calls_around(node, offset) if c not in calls]
        for name, inner in calls:
            from warpwise.analyzers.expr import cexpr

            params, body = self.macros[name]
            values = [a.strip() for a in cexpr.split_top(inner)]
            bound = dict(zip([p for p in params if p != "..."], values, strict=False))
            body = re.sub(r"\s*##\s*", "##", body)
            body = _substitute_once(body, bound).replace("##", "")
            for m in re.finditer(
                r"\busing\s+(\w+)\s*=\s*([^;]+);|\bconstexpr\s+(?:static\s+|const\s+)*[\w:]+\s+(\w+)\s*=\s*([^;]+);",
                body,
            ):
                key, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                env.setdefault(key, " ".join(value.split()))
        return env

    def _calls_around(self, node: Any, offset: int) -> list[tuple[str, str]]:
        """Return the calls of the file's function-like macros in `node` whose parentheses hold `offset`, as
        (name, argument text), innermost first."""
        names = [n for n, (params, _) in self.macros.items() if params]
        if not names:
            return []
        src = self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")
        at = len(self.src[node.start_byte : offset].decode("utf-8", "replace"))
        pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\s*\(")
        out: list[tuple[str, int, str]] = []
        for m in pattern.finditer(src, 0, at):
            depth, i = 1, m.end()
            while i < len(src) and depth:
                depth += {"(": 1, ")": -1}.get(src[i], 0)
                i += 1
            if not depth and m.end() <= at < i:
                out.append((m.group(1), m.start(), src[m.end() : i - 1]))
        return [(name, inner) for name, _, inner in sorted(out, key=lambda c: -c[1])]

    def declared_types(self, fn: Function) -> dict[str, str]:
        """Return the declared types of a host function's parameters (`T*`, `const V*`)."""
        return {p.name: p.base_type + "*" * p.pointer_depth for p in fn.params}


def _deduce(
    kernel: Function, args: tuple[str, ...], types: dict[str, str], names: set[str] | None = None
) -> dict[str, str]:
    """Return template arguments deduced from the declared types of the names a launch or call passes."""
    names = names if names is not None else {t.name for t in kernel.template_params}
    out: dict[str, str] = {}
    for p, a in zip(kernel.params, args, strict=False):
        base = _QUALIFIERS.sub("", p.base_type).strip()
        a = _TERNARY.sub(r"\1", a.strip())
        typed = _TYPED_POINTER.fullmatch(a)
        if base not in names or (a.strip() not in types and typed is None):
            continue
        declared = _QUALIFIERS.sub("", types[a.strip()] if typed is None else typed.group(1) + "*").strip()
        stars = len(declared) - len(declared.rstrip("*"))
        if stars != p.pointer_depth:
            continue
        out.setdefault(base, " ".join(declared.rstrip("*").split()))
    return out


def _references(f: _File, kernel: Function) -> list[tuple[Function, int, list[str] | None, tuple[str, ...]]]:
    """Return the host references to a kernel: (host function, offset, explicit arguments or None, call args)."""
    out: list[tuple[Function, int, list[str] | None, tuple[str, ...]]] = []
    launches = [(c.span(la.span), la) for c, la in f.model.launches_of(kernel.name)]
    for m in re.finditer(rf"\b{re.escape(kernel.name)}\b", f.text):
        pos = m.start()
        byte = len(f.text[:pos].encode())
        host = f.model.function_at(byte)
        if host is None or host.is_kernel or host.name == kernel.name:
            continue
        rest = f.text[m.end() :]
        skip = len(rest) - len(rest.lstrip())
        targs = template_args_at(f.text, m.end() + skip)
        explicit = targs[0] if targs is not None else None
        launch = next((la for (lo, hi), la in launches if lo <= byte < hi), None)
        call_args = launch.args if launch is not None else ()
        if explicit is None and launch is None:
            continue
        out.append((host, byte, explicit, call_args))
    return out


def instantiations(model: FileModel, kernel: str, include_dirs: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Return the template arguments of the instances of `kernel` the file's host code makes (none if unknown)."""
    fn = next((k for k in model.kernels if k.name == kernel), None)
    if fn is None or not fn.template_params:
        return []
    f = _File(model, include_dirs)
    results: list[tuple[str, ...]] = []
    for host, offset, explicit, call_args in _references(f, fn):
        env = f.local_env(host, offset)
        if explicit is not None:
            args = [_substitute(a, env) for a in explicit]
        else:
            deduced = _deduce(fn, call_args, {**f.declared_types(host)})
            args = [_substitute(deduced[t.name], env) if t.name in deduced else "?" for t in fn.template_params]
        args += [t.default or "?" for t in fn.template_params[len(args) :]]
        for done in _bind_host(f, host, args, 0):
            if "?" not in done and not any(_free(a, f, host) for a in done):
                results.append(done)
            if len(results) >= _MAX_RESULTS:
                break
    return list(dict.fromkeys(results))


def _free(arg: str, f: _File, host: Function) -> bool:
    """Return whether an argument still names a template parameter of a host function."""
    names = {n for n, _ in f.template_params(host)}
    return bool(names & set(_IDENT.findall(arg)))


def _bind_host(f: _File, host: Function, args: list[str], depth: int) -> list[tuple[str, ...]]:
    """Return `args` with the host template's parameters bound by each instantiation of it the file makes."""
    params = f.template_params(host)
    names = [n for n, _ in params]
    if not params or not any(set(names) & set(_IDENT.findall(a)) for a in args):
        return [tuple(args)]
    if "?" in args or depth >= _MAX_DEPTH:
        return []
    out: list[tuple[str, ...]] = []
    for binding in _host_instances(f, host, params, depth):
        out.append(tuple(_substitute(a, binding) for a in args))
        if len(out) >= _MAX_RESULTS:
            break
    return out


def _host_instances(f: _File, host: Function, params: list[tuple[str, str | None]], depth: int) -> list[dict[str, str]]:
    """Return the bindings of a host template's parameters: its explicit instantiations and its callers' arguments."""
    out: list[dict[str, str]] = []
    names = [n for n, _ in params]
    for m in re.finditer(rf"\b{re.escape(host.name)}\s*[<(]", f.text):
        byte = len(f.text[: m.start()].encode())
        caller = f.model.function_at(byte)
        if caller is not None and caller.name == host.name:
            continue
        if f.text[m.end() - 1] == "<":
            targs = template_args_at(f.text, m.end() - 1)
            if targs is None:
                continue
            values = targs[0]
        elif caller is not None:
            # A call that leaves the arguments to deduction: from the declared types of what it passes.
            deduced = _deduce(host, _call_args(f, byte), f.declared_types(caller), set(names))
            values = [deduced.get(n, "?") for n in names]
            values = [v if v != "?" or d is None else d for v, (_, d) in zip(values, params, strict=True)]
        else:
            continue
        values += [d or "?" for _, d in params[len(values) :]]
        values = [_substitute(v, dict(zip(names, values, strict=False))) if v in names else v for v in values]
        if caller is None:
            # An explicit instantiation (`template void fwd<float, float>(...);`) at file or namespace scope.
            prefix = f.text[max(0, m.start() - 200) : m.start()]
            if re.search(r"\btemplate\b[^;{}]*$", prefix):
                out.append(dict(zip(names, values, strict=False)))
            continue
        env = f.local_env(caller, byte)
        values = [_substitute(v, env) for v in values]
        for bound in _bind_host(f, caller, values, depth + 1):
            out.append(dict(zip(names, bound, strict=False)))
        if len(out) >= _MAX_RESULTS:
            break
    return out


def _call_args(f: _File, byte: int) -> tuple[str, ...]:
    """Return the argument texts of the call whose callee's name starts at `byte`."""
    node = f.model.tree.root_node.descendant_for_byte_range(byte, byte)
    while node is not None and node.type != "call_expression":
        node = node.parent
    args = node.child_by_field_name("arguments") if node is not None else None
    if args is None:
        return ()
    return tuple(_text(f.src, a).strip() for a in args.named_children if a.type != "comment")


def macro_names(model: FileModel, host: Function, offset: int) -> dict[str, str]:
    """Return the names the macro calls around `offset` in a host function declare (first value of each)."""
    f = _File(model)
    return {k: v for k, v in f.local_env(host, offset, macros_only=True).items()}
