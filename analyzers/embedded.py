"""CUDA sources embedded in Python files: the strings passed to `torch.utils.cpp_extension.load_inline`.

KernelBench's `ModelNew` files and many PyTorch projects keep their kernels in a Python string:

    source = '''__global__ void add(const float* a, float* out, int n) { ... }'''
    ext = load_inline(name="add", cpp_sources=decl, cuda_sources=source, functions=["add_cuda"])

`mask_python` returns a text of the same length as the Python file in which every byte outside those strings is
a space (newlines are kept), and the strings' contents stay where they are. Analysing, diagnosing, fixing and
building that text is analysing the CUDA code, and every offset, line and column is already the Python file's:
a diagnostic or a quick fix lands on the right characters without any mapping. The string's characters are kept
as written (a Python escape such as `\\n` inside a C string literal is then C's escape too).

Which strings: the `cuda_sources` of every `load_inline(...)` call (a literal, a name bound to a literal at the
top level, or a list of those); without such a call, every top-level string assigned to a name that defines a
`__global__` function.
"""

from __future__ import annotations

import ast
import re

_OPENING = re.compile(r"""([rRuU]{0,2})("{3}|'{3}|"|')""")


def _line_starts(data: bytes) -> list[int]:
    """Return the byte offset at which each line (1-based index - 1) starts."""
    starts = [0]
    for i, b in enumerate(data):
        if b == 0x0A:
            starts.append(i + 1)
    return starts


def _bindings(tree: ast.Module) -> dict[str, list[ast.Constant]]:
    """Return the string literals bound to names at the top level of the module."""
    out: dict[str, list[ast.Constant]] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for t in targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(value)
    return out


def _literals(expr: ast.expr, names: dict[str, list[ast.Constant]]) -> list[ast.Constant]:
    """Return the string literals an argument expression stands for."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr]
    if isinstance(expr, ast.Name):
        return names.get(expr.id, [])
    if isinstance(expr, ast.List | ast.Tuple):
        return [c for e in expr.elts for c in _literals(e, names)]
    return []


def cuda_strings(text: bytes) -> list[ast.Constant]:
    """Return the string literals of a Python file that hold CUDA sources."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    names = _bindings(tree)
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        fname = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if fname != "load_inline":
            continue
        for kw in node.keywords:
            if kw.arg == "cuda_sources":
                found += _literals(kw.value, names)
        if len(node.args) >= 3:
            found += _literals(node.args[2], names)
    if not found:
        found = [c for consts in names.values() for c in consts if "__global__" in str(c.value)]
    unique: dict[tuple[int, int], ast.Constant] = {(c.lineno, c.col_offset): c for c in found}
    return [unique[k] for k in sorted(unique)]


def mask_python(text: bytes) -> bytes | None:
    """Return the file with everything but its CUDA strings blanked, or None when it embeds no CUDA."""
    literals = cuda_strings(text)
    if not literals:
        return None
    starts = _line_starts(text)
    out = bytearray(b if b in (0x0A, 0x0D) else 0x20 for b in text)
    kept = 0
    for c in literals:
        if c.end_lineno is None or c.end_col_offset is None:
            continue
        start = starts[c.lineno - 1] + c.col_offset
        end = starts[c.end_lineno - 1] + c.end_col_offset
        literal = text[start:end].decode("utf-8", "replace")
        m = _OPENING.match(literal)
        if m is None or not literal.endswith(m.group(2)) or len(literal) < 2 * len(m.group(2)):
            continue
        lo = start + len(m.group(0).encode())
        hi = end - len(m.group(2))
        out[lo:hi] = text[lo:hi]
        kept += 1
    return bytes(out) if kept else None
