"""The CUDA kernel model: plain, immutable facts about the functions, memory accesses and launches of one file.

Every later part of warpwise (findings, skill cards, problem-spec inference, the gate, the server) reads this
model. A `FileModel` holds the `SourceFile` it was built from (`analyzers.parse`: text, syntax tree, line index of
one version, parsed once), so a fact that needs exact syntax reads `model.tree` and never parses the text again;
memos computed from one model live on it (`FileModel.memo`), not in process-wide caches.

Positions inside a function are byte offsets *relative to the function's first byte* (`Function.base`), so a
function whose text did not change can be reused after an edit elsewhere in the file by moving its base alone;
`Function.span(...)` turns a relative span into absolute byte offsets, and a `LineIndex` turns those into LSP
positions (line, UTF-16 column).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from itertools import accumulate
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from warpwise.analyzers.parse import SourceFile

_T = TypeVar("_T")
_NO_VALUE: Any = object()


def _fast_init(cls: type[_T]) -> type[_T]:
    """Give a frozen, slotted dataclass an `__init__` that stores each field through its slot directly.

    The `__init__` that `dataclass(frozen=True)` writes calls `object.__setattr__(self, name, value)` once per
    field, which costs about a microsecond per object on CPython 3.11; the analyzers build thousands of model
    objects per file. This `__init__` takes the same parameters (names, order and defaults) and stores the same
    values, so instances, equality, hashing, `replace()` and immutability are exactly those of the dataclass.
    """
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    ns: dict[str, Any] = {"_NO_VALUE": _NO_VALUE}
    params: list[str] = []
    body: list[str] = []
    for f in fields:
        ns[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if not f.init:
            # A field outside `__init__` (a memo) starts from its factory, in `replace()` copies too.
            ns[f"_factory_{f.name}"] = f.default_factory
            body.append(f"    _set_{f.name}(self, _factory_{f.name}())")
            continue
        if f.default_factory is not dataclasses.MISSING:
            ns[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NO_VALUE")
            body.append(f"    _set_{f.name}(self, _factory_{f.name}() if {f.name} is _NO_VALUE else {f.name})")
            continue
        if f.default is not dataclasses.MISSING:
            ns[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        else:
            params.append(f.name)
        body.append(f"    _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n", ns)
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(cls.__init__.__annotations__)
    # Through `setattr`, as type checkers reject assigning to a method.
    setattr(cls, "__init__", init)  # noqa: B010
    return cls


@_fast_init
@dataclass(frozen=True, slots=True)
class Position:
    """A zero-based line and UTF-16 column, as LSP counts them."""

    line: int
    character: int


@_fast_init
@dataclass(frozen=True, slots=True)
class Range:
    """A half-open range of LSP positions."""

    start: Position
    end: Position

    def contains(self, pos: Position) -> bool:
        """Return whether `pos` lies inside this range (end inclusive, as a cursor can sit there)."""
        return (
            (self.start.line, self.start.character)
            <= (pos.line, pos.character)
            <= (
                self.end.line,
                self.end.character,
            )
        )


Span = tuple[int, int]
"""Byte offsets (start, end); relative to `Function.base` inside the model, absolute elsewhere."""


_EOL = re.compile(rb"\r\n|\r|\n")


class LineIndex:
    """Convert between absolute byte offsets and LSP positions for one version of a text.

    Lines end as LSP defines it: at `\n`, `\r\n` or a lone `\r` (old Mac files, some generators); the terminator
    is not part of the line's columns.
    """

    __slots__ = ("_ascii", "_data", "_starts")

    def __init__(self, data: bytes) -> None:
        if b"\r" in data:
            starts = [0, *(m.end() for m in _EOL.finditer(data))]
        else:
            # Line k starts one byte after the end of line k - 1; the last entry would be the end of the text.
            starts = [0, *accumulate([len(line) + 1 for line in data.split(b"\n")])]
            starts.pop()
        self._starts = starts
        self._data = data
        self._ascii = data.isascii()

    @property
    def line_count(self) -> int:
        """Return the number of lines (a final line without a newline counts)."""
        return len(self._starts)

    def line_start(self, line: int) -> int:
        """Return the byte offset at which `line` starts (clamped to the text)."""
        if line < 0:
            return 0
        if line >= len(self._starts):
            return len(self._data)
        return self._starts[line]

    def position(self, offset: int) -> Position:
        """Return the LSP position of a byte offset (clamped to the text)."""
        offset = max(0, min(offset, len(self._data)))
        line = bisect.bisect_right(self._starts, offset) - 1
        start = self._starts[line]
        if self._ascii:
            return Position(line, offset - start)
        chunk = self._data[start:offset]
        if chunk.isascii():
            return Position(line, offset - start)
        return Position(line, len(chunk.decode("utf-8", "replace").encode("utf-16-le")) // 2)

    def range(self, start: int, end: int) -> Range:
        """Return the LSP range of absolute byte offsets."""
        return Range(self.position(start), self.position(end))

    def offset(self, pos: Position) -> int:
        """Return the byte offset of an LSP position (clamped to its line)."""
        if pos.line >= len(self._starts):
            return len(self._data)
        start = self._starts[max(pos.line, 0)]
        end = self._starts[pos.line + 1] - 1 if pos.line + 1 < len(self._starts) else len(self._data)
        if pos.line + 1 < len(self._starts) and end > start and self._data[end - 1 : end + 1] == b"\r\n":
            end -= 1
        line_bytes = self._data[start:end]
        if self._ascii or line_bytes.isascii():
            return start + min(max(pos.character, 0), len(line_bytes))
        text = line_bytes.decode("utf-8", "replace")
        units = 0
        for idx, ch in enumerate(text):
            if units >= pos.character:
                return start + len(text[:idx].encode("utf-8"))
            units += 2 if ord(ch) > 0xFFFF else 1
        return end


class FunctionKind(StrEnum):
    """Where a function runs."""

    KERNEL = "kernel"
    DEVICE = "device"
    HOST_DEVICE = "host_device"
    HOST = "host"


class MemorySpace(StrEnum):
    """The memory an array or pointer lives in, as far as the source shows."""

    GLOBAL = "global"
    SHARED = "shared"
    LOCAL = "local"
    CONSTANT = "constant"
    UNKNOWN = "unknown"


class AccessKind(StrEnum):
    """How an access touches memory."""

    READ = "read"
    WRITE = "write"
    READ_WRITE = "read_write"
    ATOMIC = "atomic"
    ADDRESS = "address"


class AccessPattern(StrEnum):
    """How an index varies across the 32 lanes of a warp (lanes differ in `threadIdx.x`)."""

    CONTIGUOUS = "contiguous"
    STRIDED = "strided"
    UNIFORM = "uniform"
    INDIRECT = "indirect"
    UNKNOWN = "unknown"


@_fast_init
@dataclass(frozen=True, slots=True)
class Param:
    """A function parameter."""

    index: int
    name: str
    type: str
    base_type: str
    pointer_depth: int
    is_const: bool
    is_restrict: bool
    is_reference: bool
    span: Span

    @property
    def is_pointer(self) -> bool:
        """Return whether the parameter is a pointer (or array)."""
        return self.pointer_depth > 0


@_fast_init
@dataclass(frozen=True, slots=True)
class TemplateParam:
    """A template parameter of a function, with its default when written."""

    name: str
    kind: str
    default: str | None
    value: int | None


@_fast_init
@dataclass(frozen=True, slots=True)
class SharedArray:
    """A `__shared__` declaration (static or `extern` dynamic)."""

    name: str
    element_type: str
    element_bytes: int | None
    dims: tuple[str, ...]
    dim_values: tuple[int | None, ...]
    is_extern: bool
    span: Span
    name_span: Span

    @property
    def size_bytes(self) -> int | None:
        """Return the static size in bytes when every dimension is known."""
        if self.is_extern or self.element_bytes is None or any(v is None for v in self.dim_values):
            return None
        total = self.element_bytes
        for v in self.dim_values:
            total *= v or 0
        return total


@_fast_init
@dataclass(frozen=True, slots=True)
class Loop:
    """A `for`, `while` or `do` loop, with what could be read of its header."""

    id: int
    kind: str
    var: str | None
    init: str | None
    init_value: int | None
    bound: str | None
    bound_value: int | None
    compare: str | None
    condition: str | None
    step: str | None
    step_value: int | None
    trip_count: int | None
    unroll: str | None
    span: Span
    header_span: Span
    body_span: Span
    parent: int | None
    depth: int
    assigned: frozenset[str]
    bound_uniform: bool
    thread_dependent: bool


@_fast_init
@dataclass(frozen=True, slots=True)
class Access:
    """One read or write of an array or pointer element."""

    array: str
    base: str
    space: MemorySpace
    kind: AccessKind
    index: str
    indices: tuple[str, ...]
    pattern: AccessPattern
    stride: Fraction | None
    stride_text: str | None
    width: int | None
    element_type: str | None
    vector_cast: bool
    loops: tuple[int, ...]
    index_names: frozenset[str]
    span: Span
    index_span: Span
    in_thread_branch: bool
    via_ldg: bool
    view_macro: str | None = None
    """The file's function-like macro the element is accessed through (`HALF2(c[i])`), when it is a view macro
    (`analyzers.macros`): `kind` is then what the expansion does, `vector_cast` whether the view is wider."""
    view_type: str | None = None
    """The pointee type of that view (`half2`, `const float4`); its size is the bytes one access moves."""


@_fast_init
@dataclass(frozen=True, slots=True)
class Call:
    """A call inside a function: synchronization, atomics, warp intrinsics, math, or another function."""

    name: str
    category: str
    args: tuple[str, ...]
    span: Span
    loops: tuple[int, ...]
    thread_dependent_guard: str | None


@_fast_init
@dataclass(frozen=True, slots=True)
class Branch:
    """An `if` (or `?:`) whose condition was classified across the threads of a block."""

    condition: str
    thread_dependent: bool
    lane_pattern: str | None
    span: Span
    condition_span: Span
    has_return: bool


@_fast_init
@dataclass(frozen=True, slots=True)
class Launch:
    """A host launch site `kernel<<<grid, block, smem, stream>>>(args)`."""

    kernel: str
    template_args: tuple[str, ...]
    template_values: tuple[str, ...]
    grid: str
    block: str
    smem: str | None
    stream: str | None
    grid_value: tuple[int, ...] | None
    block_value: tuple[int, ...] | None
    smem_value: int | None
    args: tuple[str, ...]
    span: Span
    name_span: Span
    caller: str | None


@_fast_init
@dataclass(frozen=True, slots=True)
class Function:
    """One function definition: a kernel, a device helper, or host code (which can hold launches)."""

    name: str
    kind: FunctionKind
    base: int
    length: int
    name_span: Span
    body_span: Span | None
    signature: str
    template_params: tuple[TemplateParam, ...]
    template_binding: tuple[tuple[str, str], ...]
    launch_bounds: tuple[str, ...] | None
    params: tuple[Param, ...]
    shared: tuple[SharedArray, ...]
    loops: tuple[Loop, ...]
    accesses: tuple[Access, ...]
    calls: tuple[Call, ...]
    branches: tuple[Branch, ...]
    launches: tuple[Launch, ...]
    locals: dict[str, str] = field(default_factory=dict, compare=False)
    pointer_aliases: dict[str, str] = field(default_factory=dict, compare=False)
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    """Answers computed from this function alone (its text and the file context it was analysed in, which is what
    the analysis reuses a function object for): they live as long as the object, across the versions that reuse it.
    Keyed by the module that computes them; never anything that reads another function or a launch."""

    def span(self, rel: Span) -> Span:
        """Return the absolute byte span of a span relative to this function."""
        return (self.base + rel[0], self.base + rel[1])

    @property
    def extent(self) -> Span:
        """Return the absolute byte span of the whole definition."""
        return (self.base, self.base + self.length)

    @property
    def is_kernel(self) -> bool:
        """Return whether this is a `__global__` function."""
        return self.kind is FunctionKind.KERNEL

    def param(self, name: str) -> Param | None:
        """Return the parameter called `name`, if any."""
        for p in self.params:
            if p.name == name:
                return p
        return None

    def loop(self, loop_id: int) -> Loop:
        """Return the loop with the given id."""
        return self.loops[loop_id]

    def calls_of(self, category: str) -> list[Call]:
        """Return the calls of one category (`sync`, `atomic`, `warp`, `math`, `device`)."""
        return [c for c in self.calls if c.category == category]


@_fast_init
@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """A place the parser could not read: an ERROR node or a missing token."""

    message: str
    span: Span


@_fast_init
@dataclass(frozen=True, slots=True, weakref_slot=True)
class FileModel:
    """Everything the analyzers know about one version of one file, with the `SourceFile` it was built from."""

    path: str
    functions: tuple[Function, ...]
    syntax_problems: tuple[SyntaxProblem, ...]
    constants: dict[str, int]
    macros: frozenset[str]
    source: SourceFile
    budget_problems: tuple[SyntaxProblem, ...] = ()
    """Functions left partly unanalysed because they exceed an analysis budget (on their names)."""
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    """Values computed once per model by the layers above (keyed by the module that computes them)."""

    @property
    def text(self) -> bytes:
        """Return the text the model was built from (bytes)."""
        return self.source.text

    @property
    def lines(self) -> LineIndex:
        """Return the line index of the text."""
        return self.source.lines

    @property
    def tree(self) -> Any:
        """Return the syntax tree the model was built from (read it, never edit it)."""
        return self.source.tree

    @property
    def kernels(self) -> list[Function]:
        """Return the `__global__` functions."""
        return [f for f in self.functions if f.kind is FunctionKind.KERNEL]

    @property
    def launches(self) -> list[tuple[Function, Launch]]:
        """Return every launch site with the function that holds it."""
        return [(f, launch) for f in self.functions for launch in f.launches]

    def function(self, name: str) -> Function | None:
        """Return the first function called `name` (kernels first)."""
        for f in self.functions:
            if f.name == name and f.kind is FunctionKind.KERNEL:
                return f
        for f in self.functions:
            if f.name == name:
                return f
        return None

    def launches_of(self, kernel: str) -> list[tuple[Function, Launch]]:
        """Return the launch sites of one kernel (the file's launches are indexed once per model)."""
        index: dict[str, list[tuple[Function, Launch]]] | None = self.memo.get("launches_by_kernel")
        if index is None:
            index = {}
            for f, launch in self.launches:
                index.setdefault(launch.kernel, []).append((f, launch))
            self.memo["launches_by_kernel"] = index
        return list(index.get(kernel, ()))

    def function_at(self, offset: int) -> Function | None:
        """Return the innermost function whose definition holds an absolute byte offset."""
        best: Function | None = None
        for f in self.functions:
            if f.base <= offset <= f.base + f.length and (best is None or f.length < best.length):
                best = f
        return best

    def range(self, fn: Function | None, rel: Span) -> Range:
        """Return the LSP range of a span (relative to `fn`, or absolute when `fn` is None)."""
        start, end = fn.span(rel) if fn is not None else rel
        return self.lines.range(start, end)

    def slice(self, fn: Function | None, rel: Span) -> str:
        """Return the source text of a span (relative to `fn`, or absolute when `fn` is None)."""
        start, end = fn.span(rel) if fn is not None else rel
        return self.text[start:end].decode("utf-8", "replace")
