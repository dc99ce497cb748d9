"""PyTorch extensions: the dtypes an `AT_DISPATCH_*` launch instantiates, and torch's build flags for nvcc.

A torch extension's kernel is a template over `scalar_t`, launched inside a dispatch macro's lambda:

    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "op", [&] { k<scalar_t><<<g, b>>>(...); });

`dispatched_types` reads which C++ types the macro binds `scalar_t` to (double, float, at::Half, ...), so each
dispatched instantiation can be built. NVRTC builds them against warpwise's small torch shim (`c10::Half` and
`c10::BFloat16` with torch's float-converting arithmetic, `at::acc_type`, the `C10_*` macros; see
`warpwise.verify.extract`), and nvcc, the fallback, against torch's own headers: `torch_flags` returns the include
folders `torch.utils.cpp_extension.include_paths()` gives (plus Python's) and the flags BuildExtension adds, or
a message saying why there are none.
"""

from __future__ import annotations

import functools
import sysconfig
from typing import Any

from warpwise.analyzers.parse import SourceFile
from warpwise.verify.project import BuildFlags

_FLOATING = ("double", "float")
_INTEGRAL = ("uint8_t", "int8_t", "int16_t", "int", "int64_t")
_BASE: dict[str, tuple[str, ...]] = {
    "AT_DISPATCH_FLOATING_TYPES": _FLOATING,
    "AT_DISPATCH_FLOATING_TYPES_AND_HALF": (*_FLOATING, "at::Half"),
    "AT_DISPATCH_REDUCED_FLOATING_TYPES": ("at::Half", "at::BFloat16"),
    "AT_DISPATCH_INTEGRAL_TYPES": _INTEGRAL,
    "AT_DISPATCH_ALL_TYPES": (*_FLOATING, *_INTEGRAL),
}
_SCALAR_TYPES = {
    "Half": "at::Half",
    "BFloat16": "at::BFloat16",
    "Float": "float",
    "Double": "double",
    "Int": "int",
    "Long": "int64_t",
    "Short": "int16_t",
    "Char": "int8_t",
    "Byte": "uint8_t",
    "Bool": "bool",
}

TORCH_NVCC_FLAGS = (
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
)
"""The flags `torch.utils.cpp_extension.BuildExtension` adds to every nvcc command."""


def _text(src: bytes, node: Any) -> str:
    """Return a node's source text."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _scalar_type(arg: str) -> str | None:
    """Return the C++ type of a ScalarType argument (`at::ScalarType::Half`, `at::kHalf`, `kBFloat16`)."""
    name = arg.strip().rsplit("::", 1)[-1]
    if name.startswith("k") and name[1:] in _SCALAR_TYPES:
        name = name[1:]
    return _SCALAR_TYPES.get(name)


def dispatch_of(macro: str, args: list[str]) -> tuple[str, ...] | None:
    """Return the types a dispatch macro call binds `scalar_t` to, or None for a macro this does not know."""
    base = macro
    extra: list[str] = []
    if "_AND" in macro and macro not in _BASE:
        head, _, tail = macro.rpartition("_AND")
        count = int(tail) if tail.isdigit() else 1 if tail == "" else 0
        if head not in _BASE or count == 0:
            return None
        base = head
        for a in args[:count]:
            t = _scalar_type(a)
            if t is None:
                return None
            extra.append(t)
    if base not in _BASE:
        return None
    return tuple(dict.fromkeys((*_BASE[base], *extra)))


def dispatched_types(text: bytes, offset: int, tree: Any = None) -> tuple[str, tuple[str, ...]] | None:
    """Return the dispatch macro around byte `offset` and the types it binds `scalar_t` to, if there is one.

    `tree` is the text's syntax tree when the caller has it (the model's); the text is parsed otherwise.
    """
    from warpwise.analyzers.expr import cexpr

    tree = tree if tree is not None else SourceFile.parse(text).tree
    node = tree.root_node.descendant_for_byte_range(offset, offset)
    while node is not None and node.type != "function_definition":
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            name = _text(text, fn) if fn is not None else ""
            if name.startswith("AT_DISPATCH_"):
                args = node.child_by_field_name("arguments")
                inner = _text(text, args)[1:-1] if args is not None else ""
                types = dispatch_of(name, [a.strip() for a in cexpr.split_top(inner)])
                if types is not None:
                    return name, types
        node = node.parent
    return None


def includes_torch(includes: tuple[str, ...] | list[str]) -> bool:
    """Return whether a file includes torch's headers (`torch/extension.h`, ATen, c10)."""
    return any(i.startswith(("torch/", "ATen/", "c10/")) for i in includes)


@functools.cache
def torch_flags() -> BuildFlags | str:
    """Return torch's include folders and BuildExtension's nvcc flags, or why torch cannot give them."""
    try:
        from torch.utils.cpp_extension import include_paths
    except Exception as exc:
        return f"torch is not importable here ({type(exc).__name__}: {exc}); install torch to build it with nvcc"
    try:
        dirs = (*include_paths(), sysconfig.get_paths()["include"])
    except Exception as exc:
        return f"torch.utils.cpp_extension.include_paths() failed: {exc}"
    return BuildFlags(
        include_dirs=tuple(dirs),
        nvcc_flags=TORCH_NVCC_FLAGS,
        origins=("torch.utils.cpp_extension.include_paths()",),
    )
