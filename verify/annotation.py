"""The `// warpwise:` annotation: a one-line problem spec written above a kernel.

Syntax (one or more `// warpwise:` comment lines directly above the kernel or its `template` line; tokens are
separated by spaces, and spaces inside parentheses or brackets are allowed):

    // warpwise: n=1<<24 a=2.0 x:in[n] y:inout[n] grid=(n+255)/256 block=256

- `NAME=EXPR` binds a name. If NAME is a scalar parameter of the kernel, that is the value passed; if it is a
  template parameter, that is the template argument (`T=float BLOCK=256`); otherwise NAME is a size symbol
  that later expressions may use. Expressions are C arithmetic (`cexpr`): literals, names bound earlier,
  constants and `#define`s of the file, `sizeof(float)`, `+ - * / % << >>`, parentheses.
- `PARAM:ROLE[COUNT]` declares a pointer parameter: ROLE is `in` (read only; checked for mutation), `out`
  (poisoned before every run) or `inout` (starts from the same random values on both sides); COUNT is the
  number of elements of the pointer's type (a `float4*` with COUNT n holds 4n floats). Optional suffixes:
  `:DTYPE` overrides the element type (`f32`, `f16`, `bf16`, `f64`, `i8`..`u64`), `:LO..HI` the range of
  the random values (for example `idx:in[n]:0..1023`).
- `grid=X[,Y[,Z]]`, `block=X[,Y[,Z]]` and `smem=BYTES` give the launch geometry.
- `range=LO..HI` sets the default range of random values (floats default to -1..1).

Every parameter must be covered and grid and block given. Errors carry the line and column of the offending
token, so the editor can underline it; `?` marks a value still to be filled in (the server inserts annotations
with `?` where inference could not find a value).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.model import FileModel, Function
from warpwise.verify.spec import (
    AnnotationError,
    ProblemSpec,
    SpecMissing,
    element_type,
    index_buffers,
    scalar_ctype,
)
from warpwise.verify.types import DTYPE_BYTES, FLOAT_DTYPES, ArgSpec, BufferSpec, Geometry, Role, RunSpec

PREFIX = "warpwise:"
_COMMENT = re.compile(r"^(\s*)//\s?")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$")
_BUFFER = re.compile(r"^([A-Za-z_]\w*):(in|out|inout)\[(.*)\](.*)$")
_RANGE = re.compile(r"^(-?[\d.]+(?:[eE][-+]?\d+)?)\.\.(-?[\d.]+(?:[eE][-+]?\d+)?)$")


@dataclass(frozen=True, slots=True)
class Token:
    """One token of an annotation with its position in the file (zero-based line and column)."""

    text: str
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Annotation:
    """The tokens of the `// warpwise:` lines above one kernel."""

    first_line: int
    tokens: tuple[Token, ...]


def _lines(model: FileModel) -> list[str]:
    """Return the file's lines."""
    return model.text.decode("utf-8", "replace").split("\n")


def kernel_line(model: FileModel, fn: Function) -> int:
    """Return the zero-based line where the kernel's declaration (or its `template` line) starts."""
    lines = _lines(model)
    line = model.lines.position(fn.base).line
    while line > 0 and lines[line - 1].strip().startswith("template"):
        line -= 1
    return line


def find(model: FileModel, fn: Function) -> Annotation | None:
    """Return the annotation above a kernel, or None when there is none."""
    lines = _lines(model)
    start = kernel_line(model, fn)
    tokens: list[Token] = []
    first = -1
    i = start - 1
    block: list[int] = []
    while i >= 0 and _COMMENT.match(lines[i]):
        block.append(i)
        i -= 1
    for ln in reversed(block):
        text = lines[ln]
        m = _COMMENT.match(text)
        assert m is not None
        body_start = m.end()
        body = text[body_start:]
        if not body.lstrip().startswith(PREFIX):
            continue
        offset = body_start + (len(body) - len(body.lstrip())) + len(PREFIX)
        if first < 0:
            first = ln
        tokens.extend(_tokenize(text, offset, ln))
    if first < 0:
        return None
    return Annotation(first, tuple(tokens))


def _tokenize(text: str, start: int, line: int) -> list[Token]:
    """Split an annotation line into tokens at spaces outside parentheses and brackets."""
    tokens: list[Token] = []
    depth = 0
    cur_start = -1
    for i in range(start, len(text) + 1):
        ch = text[i] if i < len(text) else " "
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        if ch.isspace() and depth == 0:
            if cur_start >= 0:
                tokens.append(Token(text[cur_start:i], line, cur_start))
                cur_start = -1
        elif cur_start < 0:
            cur_start = i
    return tokens


def _err(tok: Token, message: str, offset: int = 0, length: int | None = None) -> AnnotationError:
    """Return an error located at a token (or a piece of it)."""
    col = tok.column + offset
    end = col + (length if length is not None else max(len(tok.text) - offset, 1))
    return AnnotationError(message, tok.line, col, end)


def _dim3(
    tok: Token, expr: str, offset: int, names: dict[str, int | float], errors: list[AnnotationError]
) -> tuple[int, int, int] | None:
    """Evaluate `X[,Y[,Z]]` into a 3-tuple."""
    parts = cexpr.split_top(expr)
    if not 1 <= len(parts) <= 3:
        errors.append(_err(tok, "give one to three comma-separated sizes", offset))
        return None
    vals: list[int] = []
    pos = offset
    for part in parts:
        try:
            v = cexpr.evaluate_int(part, names)
        except cexpr.ExprError as exc:
            errors.append(_err(tok, str(exc), pos))
            return None
        if v <= 0:
            errors.append(_err(tok, f"`{part}` is {v}; launch sizes must be positive", pos))
            return None
        vals.append(v)
        pos += len(part) + 1
    return tuple(([*vals, 1, 1, 1])[:3])  # type: ignore[return-value]


def resolve(model: FileModel, fn: Function, ann: Annotation) -> ProblemSpec | SpecMissing:
    """Turn an annotation into a spec, or return its errors (each at a line and column)."""
    errors: list[AnnotationError] = []
    names: dict[str, int | float] = dict(model.constants)
    params = {p.name: p for p in fn.params}
    template_names = [t.name for t in fn.template_params]
    bindings: dict[str, str] = {}
    scalars: dict[str, int | float] = {}
    decls: dict[str, tuple[Token, str, str, str]] = {}
    geometry: dict[str, tuple[Token, str, int]] = {}
    default_range = (-1.0, 1.0)
    range_tok: dict[str, tuple[float, float]] = {}
    dtype_override: dict[str, str] = {}
    first = ann.tokens[0] if ann.tokens else Token("", ann.first_line, 0)
    for tok in ann.tokens:
        if "?" in tok.text:
            errors.append(_err(tok, "fill in the value marked `?`", tok.text.index("?"), 1))
            continue
        m = _BUFFER.match(tok.text)
        if m:
            name, role, count, rest = m.groups()
            if name not in params or not params[name].is_pointer:
                errors.append(_err(tok, f"`{name}` is not a pointer parameter of `{fn.name}`", 0, len(name)))
                continue
            decls[name] = (tok, role, count, rest)
            pos = tok.text.index("]") + 1
            for piece in [p for p in rest.split(":") if p] if rest else []:
                piece_pos = tok.text.index(piece, pos)
                rm = _RANGE.match(piece)
                if rm:
                    range_tok[name] = (float(rm.group(1)), float(rm.group(2)))
                elif piece in DTYPE_BYTES:
                    dtype_override[name] = piece
                else:
                    errors.append(
                        _err(tok, f"`{piece}` is neither an element type nor a range LO..HI", piece_pos, len(piece))
                    )
            continue
        m = _ASSIGN.match(tok.text)
        if not m:
            errors.append(_err(tok, f"`{tok.text}` is neither NAME=VALUE nor PARAM:ROLE[COUNT]"))
            continue
        name, expr = m.groups()
        offset = len(name) + 1
        if not expr:
            errors.append(_err(tok, f"`{name}=` needs a value", offset - 1, 1))
            continue
        if name in ("grid", "block", "smem"):
            geometry[name] = (tok, expr, offset)
            continue
        if name == "range":
            rm = _RANGE.match(expr)
            if not rm:
                errors.append(_err(tok, "write the range as LO..HI, e.g. range=-1..1", offset))
            else:
                default_range = (float(rm.group(1)), float(rm.group(2)))
            continue
        if name in template_names:
            bindings[name] = expr
            with contextlib.suppress(cexpr.ExprError):
                names[name] = cexpr.evaluate(expr, names)
            continue
        try:
            value = cexpr.evaluate(expr, names)
        except cexpr.ExprError as exc:
            errors.append(_err(tok, str(exc), offset + exc.offset))
            continue
        names[name] = value
        if name in params:
            if params[name].is_pointer:
                errors.append(_err(tok, f"`{name}` is a pointer: declare it as `{name}:in[COUNT]`", 0, len(name)))
                continue
            scalars[name] = value
    for t in fn.template_params:
        if t.name not in bindings and t.default is not None:
            bindings[t.name] = t.default
    args: list[ArgSpec] = []
    buffers: list[BufferSpec] = []
    missing: list[str] = []
    indexers = index_buffers(fn)
    for p in fn.params:
        if p.is_pointer:
            if p.name not in decls:
                missing.append(p.name)
                errors.append(_err(first, f"the annotation does not declare `{p.name}` (add `{p.name}:in[COUNT]`)"))
                continue
            tok, role, count, _ = decls[p.name]
            et = element_type(p.base_type, bindings)
            dtype = dtype_override.get(p.name) or (et[0] if et else None)
            lanes = et[1] if et else 1
            if dtype is None:
                errors.append(_err(tok, f"the element type `{p.base_type}` is unknown; add `:f32` (or another)"))
                continue
            cpos = tok.text.index("[") + 1
            try:
                n = cexpr.evaluate_int(count, names)
            except cexpr.ExprError as exc:
                errors.append(_err(tok, str(exc), cpos + exc.offset))
                continue
            if n < 0:
                errors.append(_err(tok, f"`{count}` is negative", cpos, len(count)))
                continue
            lo, hi = range_tok.get(p.name, _default_range(dtype, default_range))
            if p.name in indexers and p.name not in range_tok and dtype not in FLOAT_DTYPES:
                errors.append(_err(tok, f"`{p.name}` indexes other arrays: give its range, e.g. `:0..1023`"))
                continue
            buffers.append(BufferSpec(p.name, dtype, n * lanes, Role(role), lo, hi))
            args.append(ArgSpec(p.name, "pointer", buffer=p.name))
        else:
            ctype = scalar_ctype(p, bindings)
            if ctype is None:
                errors.append(_err(first, f"the gate cannot pass `{p.name}` of type `{p.type}`"))
                continue
            if p.name not in scalars:
                missing.append(p.name)
                errors.append(_err(first, f"the annotation gives no value for `{p.name}` (add `{p.name}=VALUE`)"))
                continue
            args.append(ArgSpec(p.name, ctype, value=scalars[p.name]))
    for t in fn.template_params:
        if t.name not in bindings:
            missing.append(t.name)
            errors.append(_err(first, f"the annotation gives no template argument `{t.name}` (add `{t.name}=...`)"))
    dims: dict[str, tuple[int, int, int]] = {}
    for key in ("grid", "block"):
        if key not in geometry:
            missing.append(key)
            errors.append(_err(first, f"the annotation gives no `{key}=`"))
            continue
        tok, expr, offset = geometry[key]
        d = _dim3(tok, expr, offset, names, errors)
        if d is not None:
            dims[key] = d
    smem = 0
    if "smem" in geometry:
        tok, expr, offset = geometry["smem"]
        try:
            smem = cexpr.evaluate_int(expr, names)
        except cexpr.ExprError as exc:
            errors.append(_err(tok, str(exc), offset + exc.offset))
    if errors:
        where = f"line {errors[0].line + 1}"
        return SpecMissing(
            fn.name,
            f"the warpwise annotation of `{fn.name}` ({where}) has {len(errors)} problem(s): {errors[0].message}",
            tuple(missing),
            insert_line=ann.first_line,
            errors=tuple(errors),
        )
    geom = Geometry(dims["grid"], dims["block"], smem)
    run = RunSpec(tuple(buffers), tuple(args), geom, geom)
    template_args = tuple(bindings[t.name] for t in fn.template_params)
    symbols = tuple(sorted((k, v) for k, v in names.items() if k not in model.constants))
    return ProblemSpec(
        fn.name, "annotation", f"annotation at line {ann.first_line + 1}", template_args, run, symbols=symbols
    )


def _default_range(dtype: str, default: tuple[float, float]) -> tuple[float, float]:
    """Return the random-value range of a buffer without its own range."""
    if dtype in FLOAT_DTYPES:
        return default
    if dtype.startswith("u"):
        return (0.0, 255.0) if dtype == "u8" else (0.0, 1000.0)
    return (-128.0, 127.0) if dtype == "i8" else (-1000.0, 1000.0)


def format_annotation(
    fn: Function,
    symbols: dict[str, str],
    scalars: dict[str, str],
    buffers: dict[str, tuple[str, str]],
    grid: str,
    block: str,
    smem: str | None = None,
    template_args: dict[str, str] | None = None,
    indent: str = "",
) -> str:
    """Write an annotation line; values not known are written as `?` for the user to fill in."""
    parts: list[str] = [f"{k}={v}" for k, v in symbols.items()]
    for t, v in (template_args or {}).items():
        parts.append(f"{t}={v}")
    for p in fn.params:
        if p.is_pointer:
            role, count = buffers.get(p.name, ("?", "?"))
            parts.append(f"{p.name}:{role}[{count}]")
        elif p.name not in symbols:
            parts.append(f"{p.name}={scalars.get(p.name, '?')}")
    parts.append(f"grid={grid}")
    parts.append(f"block={block}")
    if smem and smem != "0":
        parts.append(f"smem={smem}")
    return f"{indent}// {PREFIX} " + " ".join(parts)
