"""Run specs through a launcher's callers: the sizes a launcher takes as parameters come from who calls it.

Real projects split a launch in two: a launcher in the `.cu` file takes raw pointers and sizes and launches the
kernel,

    void array_scale_cuda(const half* in, half* out, int rows, int cols) {
      dim3 grid(DIVIDE(cols, THREADS), rows);
      scale_kernel<<<grid, THREADS>>>(in, out, rows, cols);
    }

and a binding in another file of the project (or the same one) calls it with a tensor's pointers and sizes:

    void scale(torch::Tensor x, torch::Tensor y) {
      array_scale_cuda((const half*) x.data_ptr(), (half*) y.data_ptr(), x.size(0), x.size(1));
    }

The launcher alone cannot tell how big anything is. `through_callers` finds the functions of the project that
call the launcher (files under the project's root: the nearest folder up from the file with a `setup.py`,
`pyproject.toml`, `CMakeLists.txt`, `warpwise.toml` or `.git`), writes each call's arguments in place of the
launcher's parameters (the launcher's body inlined into the caller, function-like macros of the file and its
quoted includes expanded in that host code), and infers the spec from that combined host function as from any
other (`infer.infer_launch`: plain host code, or a torch binding's tensors given representative shapes). The
caller's own integer parameters that nothing gives take a representative value, said in the provenance.

Only straight calls are followed (`launcher(args);` as a statement, non-template launchers), one level up, at
most `MAX_CALLERS` calls, over at most `MAX_FILES` files of at most `MAX_BYTES` each, so a large tree costs a
bounded read.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.model import FileModel, Function
from warpwise.verify.spec import ProblemSpec, SpecMissing, kernel_function

MAX_FILES = 400
MAX_BYTES = 1_000_000
MAX_CALLERS = 4
REPRESENTATIVE_INT = 1
"""The value given to a caller's integer parameter that nothing in the project gives: the smallest positive size,
so every index it scales stays inside tensors of the representative shapes."""
REPRESENTATIVE_RETRIES: tuple[tuple[int, ...], ...] = ((1, 2, 3, 4, 5, 6, 7, 8), (8,), (64,))
"""Representative integers tried, in order, when `REPRESENTATIVE_INT` leaves the launch empty or past CUDA's limits
(`head_dim / 2` blocks of a `head_dim` of 1; a loop `for (c = a; c < b; c++)` that runs no iteration when `a == b`):
distinct ascending values (the i-th integer parameter takes i + 1), then larger uniform ones. The first that gives
a complete spec is used, and its notes say which value each parameter took."""
_GEOMETRY_ONLY = re.compile(r"exceeds CUDA's limits|an empty launch")

_SUFFIXES = frozenset({".cpp", ".cc", ".cxx", ".cu", ".c"})
_ROOT_MARKERS = ("setup.py", "pyproject.toml", "CMakeLists.txt", "warpwise.toml", ".git")
_SKIP_DIRS = frozenset({"build", "dist", "node_modules", "__pycache__", "third_party", "dependencies"})
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)]*\))?[ \t]*((?:[^\n\\]|\\\n|\\.)*)", re.M)
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def project_root(path: Path) -> Path:
    """Return the nearest folder up from a file that marks a project's root (the file's folder when none does)."""
    folder = path.resolve().parent
    for cand in [folder, *folder.parents][:8]:
        if any((cand / m).exists() for m in _ROOT_MARKERS):
            return cand
    return folder


def _project_files(root: Path) -> list[Path]:
    """Return the project's C/C++/CUDA sources (hidden and build folders skipped), at most `MAX_FILES`."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(files):
            if Path(name).suffix in _SUFFIXES:
                out.append(Path(folder) / name)
                if len(out) >= MAX_FILES:
                    return out
    return out


def _read(path: Path) -> bytes | None:
    """Return a file's bytes, or None when it cannot be read or is too big."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _text(src: bytes, node: Any) -> str:
    """Return a node's source text."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _definition(root: Any, offset: int) -> Any:
    """Return the function definition holding a byte offset."""
    node = root.descendant_for_byte_range(offset, offset + 1)
    while node is not None and node.type != "function_definition":
        node = node.parent
    return node


def _function_name(src: bytes, fn_node: Any) -> str:
    """Return a function definition's name."""
    decl = fn_node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    name = decl.child_by_field_name("declarator") if decl is not None else None
    return _text(src, name).split("::")[-1] if name is not None else ""


def _param_decls(src: bytes, fn_node: Any) -> list[tuple[str, str]] | None:
    """Return a function's parameters as (declaration text without a default, name), or None when one is odd."""
    decl = fn_node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    if plist is None:
        return None
    out: list[tuple[str, str]] = []
    for p in plist.named_children:
        if p.type == "comment":
            continue
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            return None
        d = p.child_by_field_name("declarator")
        if d is None:
            return None
        end = d.end_byte
        name = None
        while d is not None:
            if d.type == "identifier":
                name = _text(src, d)
                break
            d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
        if not name:
            return None
        out.append((src[p.start_byte : end].decode("utf-8", "replace"), name))
    return out


def _callee(src: bytes, fn: Any) -> str:
    """Return the unqualified name a call calls (`ns::f<A, B>` is `f`)."""
    if fn.type == "template_function":
        fn = fn.child_by_field_name("name") or fn
    return _text(src, fn).split("::")[-1].strip()


def _calls(src: bytes, root: Any, name: str) -> list[tuple[Any, Any]]:
    """Return (enclosing function definition, call) for each call of `name` in a tree.

    A call counts as a statement `name(args);`, or as an argument of a macro call (a dispatch macro's body:
    `DISPATCH(t, "op", f<scalar_t>(args);)`), which runs once the macro has chosen its types.
    """
    out: list[tuple[Any, Any]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            if fn is not None and _callee(src, fn) == name:
                stmt = node.parent
                outer = _definition(root, node.start_byte)
                if stmt is not None and stmt.type == "init_declarator" and stmt.parent is not None:
                    # `auto result = launcher(args);`: the launcher runs where the declaration stands.
                    stmt = stmt.parent if stmt.parent.type == "declaration" else None
                if (
                    stmt is not None
                    and stmt.type in ("expression_statement", "argument_list", "declaration")
                    and outer is not None
                ):
                    out.append((outer, node))
                continue
        stack.extend(reversed(node.children))
    return out


def _macros(path: Path, text: bytes, depth: int = 3) -> tuple[dict[str, tuple[list[str], str]], dict[str, str]]:
    """Return the function-like and object-like macros of a file and the local headers it includes (quoted)."""
    funcs: dict[str, tuple[list[str], str]] = {}
    objects: dict[str, str] = {}
    seen: set[Path] = set()

    def visit(p: Path, data: bytes, level: int) -> None:
        if p in seen:
            return
        seen.add(p)
        for m in _INCLUDE.finditer(data):
            if level <= 0:
                break
            inc = (p.parent / m.group(1).decode("utf-8", "replace")).resolve()
            body = _read(inc) if inc.is_file() else None
            if body is not None:
                visit(inc, body, level - 1)
        for m in _DEFINE.finditer(data):
            name = m.group(1).decode()
            value = re.sub(r"\\\r?\n", " ", m.group(3).decode("utf-8", "replace"))
            value = re.sub(r"//.*$|/\*.*?\*/", "", value).strip()
            if m.group(2) is not None:
                params = [a.strip() for a in m.group(2).decode()[1:-1].split(",") if a.strip()]
                funcs.setdefault(name, (params, value))
            elif value:
                objects.setdefault(name, value)

    visit(path.resolve(), text, depth)
    return funcs, objects


def _expand(text: str, funcs: dict[str, tuple[list[str], str]], passes: int = 4) -> str:
    """Expand calls of function-like macros in host code text (nested calls by repeated passes)."""
    if not funcs:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(funcs, key=len, reverse=True)) + r")\s*\(")
    for _ in range(passes):
        out: list[str] = []
        pos = 0
        changed = False
        for m in pattern.finditer(text):
            if m.start() < pos:
                continue
            depth, i = 1, m.end()
            while i < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            if depth:
                break
            params, body = funcs[m.group(1)]
            args = [a.strip() for a in cexpr.split_top(text[m.end() : i - 1])] if text[m.end() : i - 1].strip() else []
            if len(args) != len(params) or "..." in params:
                continue
            values = dict(zip(params, args, strict=True))
            expanded = re.sub(r"\b[A-Za-z_]\w*\b", lambda w, v=values: _arg(v, w.group(0)), body)  # type: ignore[misc]
            out.append(text[pos : m.start()] + f"({expanded})")
            pos = i
            changed = True
        out.append(text[pos:])
        text = "".join(out)
        if not changed:
            break
    return text


def _arg(values: dict[str, str], word: str) -> str:
    """Return a macro parameter's argument (parenthesised unless it is one name or number), or the word itself."""
    if word not in values:
        return word
    v = values[word]
    return v if re.fullmatch(r"[\w.]+", v) else f"({v})"


def _numeric_objects(objects: dict[str, str], known: dict[str, int]) -> dict[str, int]:
    """Return the object-like macros whose value evaluates to an integer (through each other)."""
    out: dict[str, int] = {}
    for _ in range(4):
        grew = False
        for name, value in objects.items():
            if name in out or name in known:
                continue
            try:
                out[name] = cexpr.evaluate_int(value, {**known, **out})
                grew = True
            except cexpr.ExprError:
                continue
        if not grew:
            break
    return out


def through_callers(
    model: FileModel, fn: Function, launcher: Function, first: SpecMissing
) -> ProblemSpec | SpecMissing | None:
    """Return the spec of `fn`'s launch in `launcher` read through the launcher's callers, or None.

    When no call gives a complete spec, the first call's `SpecMissing` (what is still missing there) is returned.
    """
    from warpwise.analyzers.build import analyze_text

    if not model.path:
        return None
    src = model.text
    root = model.tree.root_node
    lnode = _definition(root, launcher.base)
    body = lnode.child_by_field_name("body") if lnode is not None else None
    params = _param_decls(src, lnode) if lnode is not None else None
    if body is None or params is None:
        return None
    path = Path(model.path)
    funcs, objects = _macros(path, src)
    numeric = _numeric_objects(objects, dict(model.constants))
    pattern = re.compile(rb"\b" + re.escape(launcher.name.encode()) + rb"\s*[(<]")
    tried = 0
    missing: SpecMissing | None = None
    own = path.resolve()
    files = [own, *[f for f in _project_files(project_root(path)) if f.resolve() != own]]
    for file in files:
        data = src if file == own else _read(file)
        if data is None or not pattern.search(data):
            continue
        cmodel = model if file == own else analyze_text(data, str(file))
        for outer, call in _calls(data, cmodel.tree.root_node, launcher.name):
            if tried >= MAX_CALLERS:
                return missing
            if file == own and outer.start_byte <= launcher.base < outer.end_byte:
                continue
            tried += 1
            result = _through_call(model, fn, launcher, body, params, file, data, outer, call, funcs, numeric)
            if isinstance(result, ProblemSpec):
                return result
            if isinstance(result, SpecMissing) and missing is None:
                missing = result
    del first
    return missing


def _template_params(src: bytes, fn_node: Any) -> list[tuple[str, str | None]] | None:
    """Return a template function's type parameters as (name, default), [] for a plain function, None when a
    parameter is not a type (a value parameter the call would have to give)."""
    tpl = fn_node.parent
    if tpl is None or tpl.type != "template_declaration":
        return []
    plist = tpl.child_by_field_name("parameters")
    out: list[tuple[str, str | None]] = []
    for p in plist.named_children if plist is not None else []:
        if p.type == "type_parameter_declaration":
            name = next((c for c in p.named_children if c.type == "type_identifier"), None)
            default = None
        elif p.type == "optional_type_parameter_declaration":
            name, default = p.child_by_field_name("name"), p.child_by_field_name("default_type")
        else:
            return None
        if name is None:
            return None
        out.append((_text(src, name), _text(src, default) if default is not None else None))
    return out


_READ_AS = re.compile(
    r"(?:\.|->)\s*(?:data_ptr|mutable_data_ptr|const_data_ptr|data)\s*<\s*([\w:]+)\s*>\s*\(\s*\)\s*$"
    r"|^\(\s*(?:const\s+)?([\w:]+)\s*\*\s*\)"
    r"|^(?:static|reinterpret)_cast\s*<\s*(?:const\s+)?([\w:]+)\s*\*\s*>"
)


def _deduced(name: str, decls: list[tuple[str, str]] | None, args: list[str], explicit: dict[str, str]) -> str | None:
    """Return the type a call's arguments give a template parameter, as C++ deduces it from a `T*` parameter.

    `f(x.data_ptr<float>(), ...)` for `template <typename V> void f(const V* x, ...)` gives `V` = float; a
    conditional argument (`p ? t->data_ptr<X>() : nullptr`) gives the type of its pointer branch. Every argument
    of a `name*` parameter must agree, else there is no deduction.
    """
    seen: set[str] = set()
    for (decl, _), arg in zip(decls or [], args, strict=False):
        if not re.match(rf"\s*(?:const\s+)?{re.escape(name)}\s*\*", decl):
            continue
        branch = arg
        cond = re.match(r"^[^?]+\?\s*(.+?)\s*:\s*(?:nullptr|NULL|0)\s*$", arg, re.S)
        if cond:
            branch = cond.group(1)
        m = _READ_AS.search(branch.strip())
        if m is None:
            continue
        ty = m.group(1) or m.group(2) or m.group(3)
        seen.add(explicit.get(ty, ty))
    return seen.pop() if len(seen) == 1 else None


def _template_usings(
    data: bytes,
    call: Any,
    params: list[tuple[str, str | None]],
    decls: list[tuple[str, str]] | None = None,
    args: list[str] | None = None,
) -> str | None:
    """Return `using T = A;` for each type parameter of a template launcher (the call's explicit arguments, else
    the type its arguments deduce, else the parameter's default), or None when one has none of them. A plain
    launcher needs none."""
    if not params:
        return ""
    fn = call.child_by_field_name("function")
    targs_text: list[str] = []
    if fn is not None and fn.type == "template_function":
        targs = fn.child_by_field_name("arguments")
        targs_text = [_text(data, a) for a in targs.named_children] if targs is not None else []
    out = []
    for i, (name, default) in enumerate(params):
        value = targs_text[i] if i < len(targs_text) else _deduced(name, decls, args or [], {})
        if value is None and default is not None:
            # A default naming an earlier parameter (`typename V = T`) is that parameter's type.
            value = default
        if value is None:
            return None
        out.append(f"using {name} = {value};")
    return " ".join(out) + " "


def _through_call(
    model: FileModel,
    fn: Function,
    launcher: Function,
    body: Any,
    params: list[tuple[str, str]],
    file: Path,
    data: bytes,
    outer: Any,
    call: Any,
    funcs: dict[str, tuple[list[str], str]],
    numeric: dict[str, int],
) -> ProblemSpec | SpecMissing | None:
    """Return the spec read through one call of the launcher (its body inlined into the calling function)."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.verify import infer

    args_node = call.child_by_field_name("arguments")
    nodes = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
    if args_node is not None and args_node.type == "argument_list" and not any(n.type == "ERROR" for n in nodes):
        # The argument nodes, not the text split at commas: a comment between arguments may hold commas.
        args = [_text(data, a).strip() for a in nodes]
    else:
        inner = _text(data, args_node)[1:-1] if args_node is not None else ""
        args = [a.strip() for a in cexpr.split_top(inner)] if inner.strip() else []
    if len(args) > len(params):
        return None
    src = model.text
    # A parameter passed a variable of its own name (`batch_size` for `int batch_size`) needs no declaration: the
    # caller's variable is in scope with that value, and `int n = n;` would read as changing it.
    decls = " ".join(f"{decl} = {arg};" for (decl, name), arg in zip(params, args, strict=False) if arg != name)
    # Trailing parameters the call leaves to defaults its header declares: declared without a value (what the
    # launch needs of them is then named as missing, never guessed).
    decls += "".join(f" {decl};" for decl, _ in params[len(args) :])
    lnode = body.parent
    tparams = _template_params(src, lnode) if lnode is not None else None
    usings = _template_usings(data, call, tparams, params, args) if tparams is not None else None
    if usings is None:
        return None
    block = "{ " + usings + decls + " " + _text(src, body)[1:-1] + " }"
    # A statement is replaced whole; a call inside a macro's arguments is replaced where it stands.
    stmt = call.parent if call.parent is not None and call.parent.type == "expression_statement" else call
    if call.parent is not None and call.parent.type == "init_declarator" and call.parent.parent is not None:
        # The declaration the call initialises is replaced whole (its result is no value the launch needs).
        stmt = call.parent.parent
    outer_text = (
        data[outer.start_byte : stmt.start_byte].decode("utf-8", "replace")
        + block
        + data[stmt.end_byte : outer.end_byte].decode("utf-8", "replace")
    )
    more_funcs, _ = _macros(file, data)
    funcs = {**more_funcs, **funcs}
    name = _function_name(data, outer)
    if not name:
        return None
    new_name = name
    if re.search(rb"\b" + re.escape(name.encode()) + rb"\s*\(", src):
        new_name = f"{name}__caller"
        outer_text = re.sub(r"\b" + re.escape(name) + r"(\s*\()", new_name + r"\1", outer_text, count=1)
    outer_text = _expand(outer_text, funcs)
    defines = "".join(f"\n#define {k} {v}" for k, v in numeric.items())
    composed = src + defines.encode() + b"\n" + outer_text.encode("utf-8", "surrogatepass") + b"\n"
    model2 = analyze_text(composed, model.path)
    fn2 = kernel_function(model2, fn.name)
    pairs = [(c, la) for c, la in model2.launches_of(fn.name) if c.name == new_name]
    if fn2 is None or not pairs:
        return None
    caller2, launch2 = pairs[0]
    result = infer.infer_launch(model2, fn2, caller2, launch2, "", len(pairs), REPRESENTATIVE_INT)
    if isinstance(result, SpecMissing) and result.missing and all(_GEOMETRY_ONLY.search(m) for m in result.missing):
        for values in REPRESENTATIVE_RETRIES:
            retried = infer.infer_launch(model2, fn2, caller2, launch2, "", len(pairs), values)
            if isinstance(retried, ProblemSpec):
                shown = ", ".join(map(str, values))
                note = (
                    f"the representative integer {REPRESENTATIVE_INT} left the launch empty or past CUDA's limits "
                    f"({'; '.join(result.missing)}); the caller's integer parameters take {shown} instead"
                )
                result = replace(retried, notes=(note, *retried.notes))
                break
    line = data[: call.start_byte].count(b"\n") + 1
    where = file.name if file.resolve() != Path(model.path).resolve() else "this file"
    if not isinstance(result, ProblemSpec):
        through = f"through the call of `{launcher.name}()` in `{name}()` ({where}, line {line})"
        # The combined function's lines lie past the file's end: name the launcher instead.
        message = re.sub(
            rf"`{re.escape(new_name)}\(\)` at line \d+", f"`{launcher.name}()` inlined into `{name}()`", result.message
        )
        return replace(result, message=f"{message} ({through})")
    origin = (
        f"inferred through the call of `{launcher.name}()` in `{name}()` ({where}, line {line}), its arguments in "
        f"place of the launcher's parameters ({result.origin.removeprefix('inferred from ')})"
    )
    return replace(result, origin=origin)
