"""Inferring a problem spec from the host code of the same file, for common 1-D and 2-D kernels.

The kernel model gives the launch site (`saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y)`) and what the kernel
does with each pointer (reads, writes, both). The model does not keep host-side facts such as allocation
sizes, so this module runs its own small pass over the function that holds the launch: integer and float
locals with constant initialisers, `dim3` declarations, and `cudaMalloc(&x, n * sizeof(float))` calls. A name
that is assigned again before the launch is not trusted.

Inference is all or nothing: when a size, a scalar or the geometry cannot be read, the result is a
`SpecMissing` listing exactly what is missing, with an annotation (values filled in where known, `?` elsewhere)
that the editor can offer to insert. It never guesses.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.model import FileModel, Function, Launch
from warpwise.verify import enums, hostcode, hosteval, members, torchspec
from warpwise.verify.annotation import _default_range, format_annotation, kernel_line
from warpwise.verify.spec import (
    ProblemSpec,
    SpecMissing,
    element_type,
    index_buffers,
    kernel_function,
    normalise_type,
    param_role,
    scalar_ctype,
)
from warpwise.verify.types import DTYPE_BYTES, FLOAT_DTYPES, SCALAR_CTYPES, ArgSpec, BufferSpec, Geometry, Role, RunSpec

_LOG = logging.getLogger(__name__)
_ALLOCATORS = frozenset({"cudaMalloc", "cudaMallocManaged", "cudaMallocAsync"})
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


@dataclass
class HostFacts:
    """What the host function holding a launch establishes before it."""

    names: dict[str, int | float] = field(default_factory=dict)
    dims: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    allocs: dict[str, int] = field(default_factory=dict)
    alloc_texts: dict[str, str] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    vectors: dict[str, int] = field(default_factory=dict)
    alloc_origin: dict[str, str] = field(default_factory=dict)
    tensors: dict[str, tuple[int, ...]] = field(default_factory=dict)
    functions: dict[str, Any] = field(default_factory=dict)
    evaluated: list[str] = field(default_factory=list)
    objects: dict[str, Any] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    """References to a plain variable (`const unsigned& w = feats;`): they read its value at the launch."""
    pointed: set[str] = field(default_factory=set)
    """Pointers whose buffer comes from an assignment or initialiser read by the host evaluator (`p = c ? a : b`)."""
    constants: dict[str, int | float] = field(default_factory=dict)
    """The file's named constants, which its host helpers see too."""
    elems: dict[str, int] = field(default_factory=dict)
    """The element size of a known pointer's type (`float* p`: 4), which pointer arithmetic on it steps by."""
    offsets: dict[str, int] = field(default_factory=dict)
    """The byte offset of a pointer into its allocation, where it is not the start."""
    tensor_origins: dict[str, str] = field(default_factory=dict)
    """What each tensor of a torch binding is (its representative shape and why), for the notes."""

    def env(self) -> dict[str, Any]:
        """Return the names the host evaluator sees: values, dim3s and tensors of representative shapes."""
        out: dict[str, Any] = {"true": 1, "false": 0, **self.names}
        out.update({k: hosteval.Dim3(*v) for k, v in self.dims.items()})
        out.update(
            {
                k: hosteval.Tensor(
                    v,
                    k,
                    self.allocs.get(k, 0),
                    self.elems.get(k, 0),
                    self.alloc_origin.get(k) or self.tensor_origins.get(k, ""),
                )
                for k, v in self.tensors.items()
                if k not in out
            }
        )
        # An allocated pointer is not null: a condition on it (`v ? 2 : 1`) takes the path where it is present.
        out.update(
            {
                k: hosteval.Buffer(k, v, self.elems.get(k, 0), self.offsets.get(k, 0), self.alloc_origin.get(k, ""))
                for k, v in self.allocs.items()
                if k not in out
            }
        )
        out.update({k: v for k, v in self.objects.items() if k not in out})
        return out


def _text(src: bytes, node: Any) -> str:
    """Return a node's source text."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def host_facts(
    model: FileModel,
    caller: Function,
    before: int,
    seed: dict[str, int | float] | None = None,
    tensors: dict[str, tuple[int, ...]] | None = None,
    allocs: dict[str, tuple[int, str]] | None = None,
    tensor_origins: dict[str, str] | None = None,
) -> HostFacts:
    """Read constants, dim3s and allocation sizes of a host function up to an absolute byte offset.

    `seed` gives values known before the function's first statement (a binding's representative parameters);
    `tensors` the representative shapes of a torch binding's tensors (which the file's host helpers may query);
    `allocs` the buffers known from the start (a tensor's data: bytes and where they come from);
    `tensor_origins` what each tensor is, for the notes of a pointer that the host code takes from one.
    """
    src = model.text
    tree = model.tree
    node = tree.root_node.descendant_for_byte_range(caller.base, caller.base + 1)
    while node is not None and node.type != "function_definition":
        node = node.parent
    facts = HostFacts(
        names={**model.constants, **(seed or {})},
        tensors=dict(tensors or {}),
        constants=dict(model.constants),
        tensor_origins=dict(tensor_origins or {}),
    )
    for name, (nbytes, origin) in (allocs or {}).items():
        facts.allocs[name] = nbytes
        facts.alloc_texts[name] = origin
        facts.alloc_origin[name] = origin
    facts.functions = hosteval.host_functions(src, tree.root_node)
    if node is None:
        return facts
    body = node.child_by_field_name("body")
    if body is None:
        return facts
    stack = [body]
    ordered: list[Any] = []
    while stack:
        n = stack.pop()
        if n.start_byte >= before:
            continue
        ordered.append(n)
        stack.extend(reversed(n.named_children))
    path = _Path(before)
    for n in ordered:
        if any(start <= n.start_byte < end for start, end in path.dead):
            continue
        if n.type == "if_statement":
            _branch(src, n, facts, path)
        elif n.type in _LOOPS and not n.start_byte < before < n.end_byte and _on_path(n, body, path):
            _run_loop(src, n, facts, path)
        elif n.type == "declaration":
            _declaration(src, n, facts)
        elif n.type in ("assignment_expression", "update_expression"):
            if _loop_update(n, path):
                # The update of a loop holding the launch runs after the first iteration's launch: not yet.
                continue
            if _straight_line(n, body, src, path) and _assign(src, n, facts):
                continue
            left = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if left is not None and left.type == "field_expression":
                left = left.child_by_field_name("argument")
            if left is not None and left.type == "identifier":
                # Assigned where the value depends on the path taken: not trusted from here on.
                name = _text(src, left)
                facts.changed.add(name)
                facts.names.pop(name, None)
                facts.dims.pop(name, None)
                if name in facts.pointed:
                    # A pointer set on a path that may not run: its buffer is no longer known.
                    facts.allocs.pop(name, None)
        elif n.type == "call_expression":
            _allocation(src, n, facts)
            if n.parent is not None and n.parent.type == "expression_statement" and _on_path(n.parent, body, path):
                _helper_call(src, n, facts)
    for name in facts.changed:
        facts.names.pop(name, None)
        facts.dims.pop(name, None)
    for ref, target in facts.refs.items():
        # A reference reads its variable as it is at the launch (or has no value when the variable has none).
        if target in facts.names:
            facts.names[ref] = facts.names[target]
        else:
            facts.names.pop(ref, None)
    return facts


_COMPOUND = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "<<=": "<<", ">>=": ">>", "|=": "|", "&=": "&"}


@dataclass
class _Path:
    """The path through a host function to the launch at byte `before`: branches decided, code that does not run."""

    before: int
    decided: set[int] = field(default_factory=set)
    dead: list[tuple[int, int]] = field(default_factory=list)


_LOOPS = frozenset({"for_statement", "for_range_loop", "while_statement", "do_statement"})


def _branch(src: bytes, node: Any, facts: HostFacts, path: _Path) -> None:
    """Decide an `if` on the way to the launch: the branch holding the launch, else the one its condition takes.

    The branch not taken is dead code for what follows (its assignments do not run); an `if` whose condition has
    no value and that does not hold the launch stays undecided (what it assigns is not trusted).
    """
    cons, alt = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
    cond = node.child_by_field_name("condition")
    cond_text = " ".join(_text(src, cond).split()) if cond is not None else "?"
    if node.start_byte < path.before < node.end_byte:
        taken = cons is not None and cons.start_byte <= path.before < cons.end_byte
        facts.evaluated.append(
            f"the launch is in the {'then' if taken else 'else'} branch of `if {cond_text}`: taking that path"
        )
    else:
        inner = hosteval.condition_value(cond)
        value = _evaluate(src, inner, facts) if inner is not None else None
        if value is None:
            return
        taken = bool(value)
    path.decided.add(node.start_byte)
    other = alt if taken else cons
    if other is not None:
        path.dead.append((other.start_byte, other.end_byte))


def _run_loop(src: bytes, node: Any, facts: HostFacts, path: _Path) -> None:
    """Run a loop that ends before the launch on the host values (`while (n / t > 65535) t *= 2;`), if it can.

    When it runs, the names it changes take their values after it and its code is skipped; otherwise what it
    assigns stays untrusted.
    """
    env = facts.env()
    ev = hosteval.HostEval(src, facts.functions, hosteval.Frame(dict(env)), facts.constants)
    try:
        ev.run(node)
    except Exception:
        return
    for name, value in ev.frame.names.items():
        if env.get(name) is value or env.get(name) == value:
            continue
        if isinstance(value, hosteval.Dim3) and name in facts.dims:
            facts.dims[name] = value.as_tuple()
        elif isinstance(value, int | float) and name in facts.names:
            facts.names[name] = value
        elif name in facts.allocs or isinstance(value, hosteval.Buffer | hosteval.Tensor):
            # A pointer the loop sets: the buffer it holds after the loop, or no buffer when that is not one.
            found = _pointer_bytes(value, facts)
            facts.allocs.pop(name, None)
            if found is not None:
                facts.allocs[name] = found[0]
                base = facts.alloc_origin.get(found[1], f"`{found[1]}`")
                loop_text = " ".join(_text(src, node).split())[:60]
                facts.alloc_origin[name] = f"{base}, the buffer `{name}` holds after the loop `{loop_text}`"
                facts.alloc_texts.setdefault(name, facts.alloc_texts.get(found[1], found[1]))
                facts.pointed.add(name)
            continue
        else:
            continue
        loop = " ".join(_text(src, node).split())
        facts.evaluated.append(
            f"`{name}` = {_fmt(value) if not isinstance(value, hosteval.Dim3) else value.as_tuple()} "
            f"after the loop `{loop[:60]}` ran on these values"
        )
    path.dead.append((node.start_byte, node.end_byte))


def _loop_update(node: Any, path: _Path) -> bool:
    """Return whether a node is (part of) the update clause of a `for` loop that holds the launch."""
    p = node
    while p is not None and p.type in ("comma_expression", "parenthesized_expression", *_UPDATES):
        parent = p.parent
        if parent is not None and parent.type == "for_statement":
            update = parent.child_by_field_name("update")
            return update is not None and update == p and parent.start_byte < path.before < parent.end_byte
        p = parent
    return False


_UPDATES = ("assignment_expression", "update_expression")


def _on_path(stmt: Any, body: Any, path: _Path, until: Any = None) -> bool:
    """Return whether a statement runs on the way to the launch.

    Only blocks, decided branches and loops holding the launch may lie between it and the function's body (or
    `until`, a block that declares the variable).
    """
    p = stmt.parent
    while p is not None:
        if p == body or (until is not None and until(p)):
            return True
        if not _passes(p, path):
            return False
        p = p.parent
    return False


def _passes(node: Any, path: _Path) -> bool:
    """Return whether code inside `node` runs whenever `node` is reached on the way to the launch."""
    if node.type == "compound_statement":
        return True
    if node.type == "if_statement":
        return node.start_byte in path.decided
    if node.type == "else_clause":
        return node.parent is not None and node.parent.start_byte in path.decided
    if node.type in _HOLDERS:
        # A dispatch macro's lambda holding the launch (`AT_DISPATCH_...(t, "op", [&] { ... launch ... })`) runs.
        return node.start_byte < path.before < node.end_byte
    return node.type in _LOOPS and node.start_byte < path.before < node.end_byte


_HOLDERS = frozenset({"lambda_expression", "argument_list", "call_expression", "expression_statement"})


def _straight_line(node: Any, body: Any, src: bytes, path: _Path) -> bool:
    """Return whether an assignment runs on the way to the launch, in its variable's scope (`_on_path`).

    A local of an inner block counts from the block that declares it (assigned in that block's own code).
    """
    stmt = node.parent
    if stmt is None or stmt.type != "expression_statement":
        return False
    left = node.child_by_field_name("left") or node.child_by_field_name("argument")
    while left is not None and left.type == "field_expression":
        left = left.child_by_field_name("argument")
    name = _text(src, left) if left is not None and left.type == "identifier" else None

    def declares(block: Any) -> bool:
        return block.type == "compound_statement" and name is not None and _declares(src, block, name, node.start_byte)

    return _on_path(stmt, body, path, declares)


_DEVICE_QUERIES = frozenset({"cudaGetDeviceProperties", "cudaGetDeviceProperties_v2"})


def _device_query(src: bytes, call: Any, facts: HostFacts) -> bool:
    """Record `cudaGetDeviceProperties(&props, dev)`: `props` is the representative device's (`hosteval.H200`)."""
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    if fn is None or args is None or _text(src, fn).split("::")[-1] not in _DEVICE_QUERIES:
        return False
    first = args.named_children[0] if args.named_children else None
    if first is None or first.type != "pointer_expression":
        return False
    target = first.child_by_field_name("argument")
    if target is None or target.type != "identifier":
        return False
    facts.objects[_text(src, target)] = hosteval.DEVICE
    return True


_OCCUPANCY = frozenset({"cudaOccupancyMaxActiveBlocksPerMultiprocessor"})


def _occupancy(src: bytes, call: Any, facts: HostFacts) -> bool:
    """Record `cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem)` on the representative device.

    The answer depends on the kernel's registers and static shared memory, which host inference does not read; `n`
    takes the bound the block size (and the dynamic shared memory) alone sets on the H200, an upper bound of the
    real occupancy. A grid sized from it is a grid-stride launch (the count of resident blocks changes per device),
    so the kernel's buffers do not depend on it; the notes say what was taken.
    """
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    if fn is None or args is None or _text(src, fn).split("::")[-1] not in _OCCUPANCY:
        return False
    parts = [a for a in args.named_children if a.type != "comment"]
    if len(parts) < 3 or parts[0].type != "pointer_expression":
        return True
    target = parts[0].child_by_field_name("argument")
    threads = _evaluate(src, parts[2], facts)
    smem = _evaluate(src, parts[3], facts) if len(parts) > 3 else 0
    if target is None or target.type != "identifier" or not isinstance(threads, int) or not isinstance(smem, int):
        return True
    if not 0 < threads <= hosteval.H200["maxThreadsPerBlock"] or smem < 0:
        return True
    blocks = min(hosteval.H200["maxBlocksPerMultiProcessor"], hosteval.H200["maxThreadsPerMultiProcessor"] // threads)
    if smem > 0:
        blocks = min(blocks, hosteval.H200["sharedMemPerMultiprocessor"] // smem)
    name = _text(src, target)
    facts.names[name] = blocks
    facts.changed.discard(name)
    facts.evaluated.append(
        f"`{name}` = {blocks} from `{_text(src, fn)}` with {threads} threads per block"
        + (f" and {smem} bytes of dynamic shared memory" if smem else "")
        + f": the most blocks of that size an SM of the {hosteval.DEVICE.name} holds (the kernel's registers and "
        "static shared memory are not read, so the real occupancy may be lower)"
    )
    return True


def _helper_call(src: bytes, call: Any, facts: HostFacts) -> None:
    """Apply a call of the file's own host helper that sets the caller's dim3s or integers through references."""
    if _device_query(src, call, facts) or _occupancy(src, call, facts):
        return
    if hosteval.vector_call(src, call):
        # `v.push_back(x)`: the vector (shared with the facts) changes in place; a value the evaluator cannot
        # give leaves the vector unknown from here on.
        fn = call.child_by_field_name("function")
        target = fn.child_by_field_name("argument") if fn is not None else None
        name = _text(src, target) if target is not None else ""
        if isinstance(facts.objects.get(name), hosteval.Vector) and not hosteval.run_call(
            src, facts.functions, call, facts.env(), facts.constants
        ):
            del facts.objects[name]
        return
    changed = hosteval.call_effects(src, facts.functions, call, facts.env(), facts.constants)
    if changed is None:
        _forget_outputs(src, call, facts)
        return
    if not changed:
        return
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    # The variables passed by address (`f(&grid_x, &base)`): the helper may set them even when they had no value.
    addressed = {
        _text(src, a.child_by_field_name("argument"))
        for a in (args.named_children if args is not None else [])
        if a.type == "pointer_expression" and _text(src, a).startswith("&") and a.child_by_field_name("argument")
    }
    helper = " ".join(_text(src, fn).split())
    for name, value in changed.items():
        if isinstance(value, hosteval.Dim3):
            facts.dims[name] = value.as_tuple()
        elif isinstance(value, int | float) and (name in facts.names or name in addressed):
            facts.names[name] = value
            facts.changed.discard(name)
            if name in addressed:
                facts.evaluated.append(
                    f"`{name}` = {_fmt(value)}, set through `&{name}` by the host helper `{helper}()` of this file"
                )
                continue
        elif isinstance(value, hosteval.Buffer) and name in addressed:
            _bind_buffer(name, value, facts, f"set through `&{name}` by the host helper `{helper}()`")
            continue
        else:
            continue
        shown = value.as_tuple() if isinstance(value, hosteval.Dim3) else _fmt(value)
        facts.evaluated.append(f"`{name}` = {shown}, set by the host helper `{helper}()` of this file")


def _forget_outputs(src: bytes, call: Any, facts: HostFacts) -> None:
    """Forget what a helper of the file that did not evaluate may have set: its reference parameters' variables
    (`configure(n, block, grid)` with `dim3& block`) and the variables passed by address (`f(&gx)`).

    Their values before the call (an uninitialised `dim3` is (1, 1, 1)) are not what the launch sees.
    """
    fn = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    definition = facts.functions.get(hosteval.callee_name(src, fn)) if fn is not None else None
    if definition is None or args is None:
        return
    parts = [a for a in args.named_children if a.type != "comment"]
    try:
        refs = [ref for _, ref, _ in hosteval.parameters(src, definition)]
    except hosteval.Unknown:
        refs = [True] * len(parts)
    for arg, ref in zip(parts, refs, strict=False):
        if arg.type == "pointer_expression" and _text(src, arg).startswith("&"):
            arg = arg.child_by_field_name("argument")
        elif not ref:
            continue
        if arg is None or arg.type != "identifier":
            continue
        name = _text(src, arg)
        if name in facts.dims or name in facts.names or name in facts.allocs:
            facts.evaluated.append(
                f"`{name}` may be set by the host helper `{_text(src, fn)}()`, which does not evaluate here: "
                "not known after it"
            )
        facts.dims.pop(name, None)
        facts.names.pop(name, None)
        facts.changed.add(name)
        if name in facts.pointed or name not in facts.tensors:
            facts.allocs.pop(name, None)


def _evaluate(src: bytes, node: Any, facts: HostFacts, name: str = "") -> int | float | None:
    """Return a host expression's value: C arithmetic first, then the file's host helpers (`hosteval`).

    A value only the host evaluator gives is noted (with `name`, the variable it initialises) for the provenance.
    """
    try:
        return cexpr.evaluate(_text(src, node), facts.names)
    except cexpr.ExprError:
        pass
    fields: set[str] = set()
    v = hosteval.value_of(src, facts.functions, node, facts.env(), fields, facts.constants)
    if isinstance(v, hosteval.Device) and name:
        facts.objects[name] = v
        return None
    if not isinstance(v, int | float):
        return None
    for f in sorted(fields):
        facts.evaluated.append(
            f"`{f}` is {hosteval.DEVICE.get(f)}, the {hosteval.DEVICE.name}'s (a representative device: the GPU the "
            "gate runs on may differ)"
        )
    if name:
        text = " ".join(_text(src, node).split())
        facts.evaluated.append(f"`{name}` = {_fmt(v)}, evaluated from `{text[:80]}` through the file's host code")
    return v


def _declares(src: bytes, block: Any, name: str, before: int) -> bool:
    """Return whether a block declares `name` in one of its own statements before a byte offset."""
    for child in block.named_children:
        if child.start_byte >= before:
            return False
        if child.type != "declaration":
            continue
        for d in child.children_by_field_name("declarator"):
            ident = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if ident is not None and ident.type == "identifier" and _text(src, ident) == name:
                return True
    return False


def _assign(src: bytes, node: Any, facts: HostFacts) -> bool:
    """Apply one straight-line assignment (`x = e`, `x *= e`, `x++`, `grid.y = e`) to the facts, if it evaluates."""
    if node.type == "update_expression":
        arg = node.child_by_field_name("argument")
        text = _text(src, node)
        if arg is None or arg.type != "identifier" or _text(src, arg) not in facts.names:
            return False
        name = _text(src, arg)
        value = facts.names[name]
        facts.names[name] = value + (1 if "++" in text else -1)
        return True
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    op = node.child_by_field_name("operator")
    op_text = _text(src, op) if op is not None else "="
    if left is None or right is None:
        return False
    expr = _text(src, right)
    if left.type == "field_expression":
        arg, field_node = left.child_by_field_name("argument"), left.child_by_field_name("field")
        if arg is None or field_node is None or arg.type != "identifier":
            return False
        name, axis = _text(src, arg), "xyz".find(_text(src, field_node))
        if name not in facts.dims or axis < 0:
            return False
        dims = list(facts.dims[name])
        if op_text != "=":
            if op_text not in _COMPOUND:
                return False
            expr = f"({dims[axis]}) {_COMPOUND[op_text]} ({expr})"
        try:
            dims[axis] = cexpr.evaluate_int(expr, facts.names)
        except cexpr.ExprError:
            found = _evaluate(src, right, facts, f"{name}.{'xyz'[axis]}") if op_text == "=" else None
            if not isinstance(found, int):
                return False
            dims[axis] = found
        facts.dims[name] = (dims[0], dims[1], dims[2])
        return True
    if left.type != "identifier":
        return False
    name = _text(src, left)
    if op_text != "=":
        if op_text not in _COMPOUND or name not in facts.names:
            return False
        expr = f"({facts.names[name]}) {_COMPOUND[op_text]} ({expr})"
    try:
        value = cexpr.evaluate(expr, facts.names)
    except cexpr.ExprError:
        if op_text != "=":
            return False
        if name not in facts.names and _point(src, name, right, facts, "is set to"):
            return True
        found = _evaluate(src, right, facts, name)
        if found is None:
            return False
        value = found
    old = facts.names.get(name, value)
    facts.names[name] = float(value) if isinstance(old, float) else int(value) if isinstance(old, int) else value
    facts.changed.discard(name)
    return True


def _declaration(src: bytes, decl: Any, facts: HostFacts) -> None:
    """Record the constant initialisers of one declaration."""
    ty = decl.child_by_field_name("type")
    type_text = _text(src, ty) if ty is not None else ""
    for d in decl.children_by_field_name("declarator"):
        if hosteval.is_vector_type(type_text) and d.type == "identifier":
            # `std::vector<int> v;`: an empty vector that `push_back` fills.
            facts.objects[_text(src, d)] = hosteval.Vector()
            continue
        if "vector" in type_text:
            _vector(src, d, facts)
            continue
        if d.type == "init_declarator" and (d.child_by_field_name("declarator") or d).type in (
            "pointer_declarator",
            "reference_declarator",
        ):
            _pointer_declaration(src, d, facts)
            continue
        if type_text == "dim3" and d.type == "identifier":
            facts.dims[_text(src, d)] = (1, 1, 1)
            continue
        if type_text == "dim3" and d.type == "function_declarator":
            # `dim3 block(bx, by);` with plain names parses as a function declaration: its "parameters" are the sizes.
            _dim3_declarator(src, d, facts)
            continue
        if d.type != "init_declarator":
            continue
        name_node = d.child_by_field_name("declarator")
        value = d.child_by_field_name("value")
        if name_node is None or value is None or name_node.type != "identifier":
            continue
        name = _text(src, name_node)
        if type_text == "dim3":
            args = value
            if value.type == "call_expression":
                args = value.child_by_field_name("arguments")
            if args is not None and args.type in ("argument_list", "initializer_list"):
                vals = []
                for a in args.named_children:
                    v = _evaluate(src, a, facts, f"{name} (a dimension)")
                    if not isinstance(v, int) and not (isinstance(v, float) and v.is_integer()):
                        break
                    vals.append(int(v))
                else:
                    x, y, z = [*vals, 1, 1, 1][:3]
                    facts.dims[name] = (x, y, z)
            elif args is not None:
                v = _evaluate(src, args, facts, name)
                if isinstance(v, int):
                    facts.dims[name] = (v, 1, 1)
            continue
        if value.type in ("argument_list", "initializer_list"):
            inner = value.named_children
            if len(inner) != 1:
                continue
            value = inner[0]
        v = _evaluate(src, value, facts, name)
        if v is None:
            continue
        if type_text in ("float", "double"):
            facts.names[name] = float(v)
        elif isinstance(v, int) or float(v).is_integer():
            facts.names[name] = int(v)


def _pointer_bytes(value: Any, facts: HostFacts) -> tuple[int, str] | None:
    """Return the bytes a pointer value reaches and the allocation it points into, if it is a known buffer."""
    if isinstance(value, hosteval.Buffer):
        return value.nbytes, value.name
    if isinstance(value, hosteval.Tensor) and value.name in facts.allocs:
        return facts.allocs[value.name], value.name
    return None


def _point(src: bytes, name: str, value_node: Any, facts: HostFacts, how: str, pointee: str = "") -> bool:
    """Bind pointer `name` to the buffer an expression gives (`c ? a : b`, `ptrs[i]`); return whether it did.

    `pointee`: the element type the pointer is declared with (`float* p = t;` sees the tensor's data as floats).
    """
    value = hosteval.value_of(src, facts.functions, value_node, facts.env(), None, facts.constants)
    if isinstance(value, hosteval.Vector):
        facts.objects[name] = value
        return True
    if pointee and isinstance(value, hosteval.Buffer | hosteval.Tensor):
        ev = hosteval.HostEval(src, facts.functions, hosteval.Frame(), facts.constants)
        size = ev.type_bytes(pointee)
        if isinstance(value, hosteval.Tensor) and value.name not in facts.allocs and size:
            # A binding's tensor passed where the launcher takes `T*` (`t.data_ptr<T>()` reads as `t`): its
            # elements are of that type.
            n = 1
            for s in value.shape:
                n *= s
            origin = value.origin or facts.tensor_origins.get(value.name, f"tensor `{value.name}`")
            value = hosteval.Buffer(value.name, n * size, size, 0, f"{origin}, its data seen as `{pointee}`")
        elif isinstance(value, hosteval.Buffer) and not value.elem and size:
            value = hosteval.Buffer(value.name, value.nbytes, size, value.offset, value.origin)
    text = " ".join(_text(src, value_node).split())
    if isinstance(value, hosteval.Buffer) and (value.origin or value.name not in facts.allocs):
        return _bind_buffer(name, value, facts, f"{how} `{text[:80]}` (read by the host evaluator)")
    found = _pointer_bytes(value, facts)
    if found is None:
        return False
    nbytes, target = found
    facts.allocs[name] = nbytes
    if isinstance(value, hosteval.Buffer) and value.elem:
        facts.elems[name] = value.elem
    if isinstance(value, hosteval.Buffer) and value.offset:
        facts.offsets[name] = value.offset
    base = facts.alloc_origin.get(target) or (
        f"`cudaMalloc({facts.alloc_texts[target]})`" if target in facts.alloc_texts else f"`{target}`"
    )
    facts.alloc_origin[name] = f"{base}, the buffer `{name}` {how} `{text[:80]}` (read by the host evaluator)"
    facts.alloc_texts.setdefault(name, facts.alloc_texts.get(target, target))
    facts.pointed.add(name)
    return True


def _bind_buffer(name: str, value: hosteval.Buffer, facts: HostFacts, how: str) -> bool:
    """Bind pointer `name` to a buffer the host evaluator made or moved into (its origin, offset and element size
    said in the notes)."""
    base = (
        facts.alloc_origin.get(value.name)
        or value.origin
        or (f"`cudaMalloc({facts.alloc_texts[value.name]})`" if value.name in facts.alloc_texts else f"`{value.name}`")
    )
    if value.name in facts.alloc_origin and value.origin and value.name != name:
        base = value.origin
    where = f" (its bytes from {value.offset} on)" if value.offset else ""
    facts.allocs[name] = value.nbytes
    if value.elem:
        facts.elems[name] = value.elem
    facts.offsets[name] = value.offset
    facts.alloc_origin[name] = f"{base}, the buffer `{name}` {how}{where}"
    facts.alloc_texts.setdefault(name, facts.alloc_texts.get(value.name, value.name))
    facts.pointed.add(name)
    return True


def _pointer_declaration(src: bytes, d: Any, facts: HostFacts) -> None:
    """Record `T* p = e;` (a buffer, a vector's data) or `const int& r = e;` (the value it refers to)."""
    name = hosteval.declared_name(src, d.child_by_field_name("declarator"))
    value = d.child_by_field_name("value")
    if name is None or value is None:
        return
    if (d.child_by_field_name("declarator")).type == "reference_declarator":
        v = _evaluate(src, value, facts, name)
        if isinstance(v, int | float):
            facts.names[name] = v
            if value.type == "identifier":
                facts.refs[name] = _text(src, value)
            return
    if name in facts.allocs and name not in facts.pointed:
        # Already known (a tensor's data pointer the binding declares): kept.
        return
    decl = d.parent
    ty = decl.child_by_field_name("type") if decl is not None else None
    stars = _text(src, d.child_by_field_name("declarator")).split(name)[0].count("*")
    pointee = (_text(src, ty) + "*" * (stars - 1)) if ty is not None and stars >= 1 else ""
    _point(src, name, value, facts, "is initialised to", pointee)


def _dim3_declarator(src: bytes, d: Any, facts: HostFacts) -> None:
    """Record `dim3 name(a, b)` that tree-sitter reads as a function declarator (names as parameter types)."""
    name = d.child_by_field_name("declarator")
    params = d.child_by_field_name("parameters")
    if name is None or params is None or name.type != "identifier":
        return
    vals = []
    for p in params.named_children:
        try:
            vals.append(cexpr.evaluate_int(_text(src, p), facts.names))
        except cexpr.ExprError:
            return
    if 1 <= len(vals) <= 3:
        x, y, z = [*vals, 1, 1, 1][:3]
        facts.dims[_text(src, name)] = (x, y, z)


def _vector(src: bytes, d: Any, facts: HostFacts) -> None:
    """Record the element count of `std::vector<T> v(COUNT)` (parsed as a function declarator or an init)."""
    name = d.child_by_field_name("declarator")
    if name is None or name.type != "identifier":
        return
    args = d.child_by_field_name("parameters") if d.type == "function_declarator" else d.child_by_field_name("value")
    if args is None or not args.named_children:
        return
    with contextlib.suppress(cexpr.ExprError):
        facts.vectors[_text(src, name)] = cexpr.evaluate_int(_text(src, args.named_children[0]), facts.names)


_SIZE_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\.\s*size\s*\(\s*\)")


def _allocation(src: bytes, call: Any, facts: HostFacts) -> None:
    """Record `cudaMalloc(&x, BYTES)`."""
    fn = call.child_by_field_name("function")
    if fn is None or _text(src, fn) not in _ALLOCATORS:
        return
    args = call.child_by_field_name("arguments")
    if args is None or len(args.named_children) < 2:
        return
    target, size = args.named_children[0], args.named_children[1]
    while target.type in ("cast_expression", "parenthesized_expression"):
        target = target.child_by_field_name("value") or target.named_children[-1]
    if target.type != "pointer_expression":
        return
    arg = target.child_by_field_name("argument")
    if arg is None or arg.type != "identifier":
        return
    name = _text(src, arg)
    facts.alloc_texts[name] = _text(src, size)
    size_text = _SIZE_CALL.sub(lambda m: str(facts.vectors.get(m.group(1), m.group(0))), _text(src, size))
    try:
        facts.allocs[name] = cexpr.evaluate_int(size_text, facts.names)
    except cexpr.ExprError:
        return


def _strip_cast(text: str) -> str:
    """Return an argument without a leading C cast or parentheses."""
    t = text.strip()
    t = re.sub(r"^\(\s*[\w\s:<>]+\*+\s*\)\s*", "", t)
    t = re.sub(r"^(?:static_cast|reinterpret_cast)\s*<[^>]*>\s*\((.*)\)$", r"\1", t)
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    return t


def _dim(text: str | None, value: tuple[int, ...] | None, facts: HostFacts) -> tuple[int, int, int] | None:
    """Evaluate a grid or block argument of a launch."""
    if value is not None:
        return tuple(([*list(value), 1, 1, 1])[:3])  # type: ignore[return-value]
    if text is None:
        return None
    t = text.strip()
    if t in facts.dims:
        return facts.dims[t]
    m = re.fullmatch(r"dim3\s*\((.*)\)|\{(.*)\}", t, re.S)
    if m and m.group(2) is not None:
        parts = cexpr.split_top(m.group(2))
        try:
            vals = [cexpr.evaluate_int(p, facts.names) for p in parts]
        except cexpr.ExprError:
            return None
        x, y, z = [*vals, 1, 1, 1][:3]
        return (x, y, z)
    parts = cexpr.split_top(m.group(1)) if m else [t]
    try:
        vals = [cexpr.evaluate_int(p, facts.names) for p in parts]
    except cexpr.ExprError:
        return None
    return tuple(([*vals, 1, 1, 1])[:3])


def infer(model: FileModel, fn: Function) -> ProblemSpec | SpecMissing:
    """Return the spec the file's host code implies for a kernel, or what is missing for one."""
    launches = model.launches_of(fn.name)
    if not launches:
        through = _through_macros(model, fn)
        if through is not None:
            return through
    indent = re.match(r"\s*", model.text.decode("utf-8", "replace").split("\n")[kernel_line(model, fn)]).group(0)  # type: ignore[union-attr]
    if not launches:
        roles = {p.name: (param_role(fn, p).value, "?") for p in fn.params if p.is_pointer}
        text = format_annotation(fn, {}, {}, roles, "?", "?", indent=indent)
        return SpecMissing(
            fn.name,
            f"`{fn.name}` is not launched in this file, so its sizes and launch geometry are unknown; "
            f"annotate it or add a problem file",
            ("launch site", "sizes", "grid", "block"),
            annotation=text,
            insert_line=kernel_line(model, fn),
        )
    caller, launch = launches[0]
    result = infer_launch(model, fn, caller, launch, indent, len(launches))
    if isinstance(result, SpecMissing) and not getattr(_IN_CALLERS, "active", False):
        from warpwise.verify import callers

        # The launcher's own host code does not tell: read the functions that call it (another file of the
        # project, or this one), each call's arguments in place of the launcher's parameters.
        _IN_CALLERS.active = True
        try:
            through = callers.through_callers(model, fn, caller, result)
        except Exception:
            _LOG.exception("reading the callers of `%s()` of %s failed", caller.name, model.path)
            through = None
        finally:
            _IN_CALLERS.active = False
        if through is not None:
            return through
    return result


_IN_CALLERS = threading.local()
"""Whether this thread's inference is already reading a launcher's callers (not followed again from there)."""


def infer_launch(
    model: FileModel,
    fn: Function,
    caller: Function,
    launch: Launch,
    indent: str,
    n_launches: int,
    int_value: int | tuple[int, ...] | None = None,
) -> ProblemSpec | SpecMissing:
    """Return the spec one launch site of `fn` implies (its host function's code, then its torch tensors).

    With `int_value`, a torch binding's integer parameters that nothing gives take that representative value.
    """
    offset = caller.span(launch.span)[0]
    facts = host_facts(model, caller, offset)
    loop_notes = []
    for var, (value, where) in hostcode.loop_first_values(model.text, offset, facts.names, model.tree).items():
        if var in facts.names and facts.names[var] != value:
            continue
        # Also noted when the loop's own declaration already gave the first value (`for (int l = 0; ...)`).
        facts.names[var] = value
        loop_notes.append(f"the launch runs in a loop over `{var}` ({where}); using its first value {_fmt(value)}")
    result = _from_launch(model, fn, caller, launch, facts, indent, n_launches, tuple(loop_notes))
    if isinstance(result, SpecMissing) and torchspec.applies(model, caller):
        through = _through_tensors(model, fn, caller, offset, indent, n_launches, launch, int_value)
        if through is not None:
            return through
    return result


def _through_tensors(
    model: FileModel,
    fn: Function,
    caller: Function,
    offset: int,
    indent: str,
    n_launches: int,
    launch: Launch | None = None,
    int_value: int | tuple[int, ...] | None = None,
    shapes: dict[int, tuple[int, ...]] | None = None,
    float_value: float | None = None,
) -> ProblemSpec | SpecMissing | None:
    """Return the spec of a launch in a torch binding, its tensors given representative shapes (`torchspec`).

    When those shapes make the launch too big (more memory than `MAX_SPEC_BYTES`, a grid past CUDA's limits), it
    is read again with `torchspec.SMALL_SHAPES`, and the notes say so. When the binding's float parameters at
    `torchspec.BINDING_FLOAT` leave a scalar of the launch unknown (`1 - pow(beta1, step)` is 0 at 1.0 and a
    division by it has no value), it is read again with `torchspec.FLOAT_RETRY`, and the notes say so.
    """
    from dataclasses import replace

    from warpwise.analyzers.build import analyze_text

    if shapes is None:
        first = _through_tensors(
            model, fn, caller, offset, indent, n_launches, launch, int_value, torchspec.DEFAULT_SHAPES, float_value
        )
        if isinstance(first, SpecMissing) and first.missing and all(_TOO_BIG.search(m) for m in first.missing):
            small = _through_tensors(
                model, fn, caller, offset, indent, n_launches, launch, int_value, torchspec.SMALL_SHAPES, float_value
            )
            if isinstance(small, ProblemSpec):
                note = f"the default representative shapes were too big ({'; '.join(first.missing)}): smaller ones used"
                return replace(small, notes=(note, *small.notes))
        if (
            float_value is None
            and isinstance(first, SpecMissing)
            and any(m.startswith("value of `") for m in first.missing)
        ):
            again = _through_tensors(
                model, fn, caller, offset, indent, n_launches, launch, int_value, None, torchspec.FLOAT_RETRY
            )
            if isinstance(again, ProblemSpec):
                values = [m for m in first.missing if m.startswith("value of `")]
                note = (
                    f"the representative float {torchspec.BINDING_FLOAT} left {'; '.join(values)} without a value "
                    f"(a division by zero or an undefined math call): the binding's floats take "
                    f"{torchspec.FLOAT_RETRY} instead"
                )
                return replace(again, notes=(note, *again.notes))
        return first
    try:
        bound = torchspec.bind(model, caller, offset, int_value=int_value, shapes=shapes, float_value=float_value)
    except Exception:
        # Inference reads arbitrary host code: a case it does not handle leaves the plain result, never a crash.
        _LOG.exception("reading the torch binding `%s()` of %s failed", caller.name, model.path)
        return None
    if isinstance(bound, str):
        return None
    model2 = analyze_text(bound.text, model.path)
    fn2 = kernel_function(model2, fn.name)
    pairs = [(c, la) for c, la in model2.launches_of(fn.name) if c.name == caller.name]
    if fn2 is None or not pairs:
        return None
    caller2, launch2 = pairs[0]
    if launch is not None:
        # The same launch in the rewritten text: the binding's text before it is rewritten, the rest kept.
        same = [la for c, la in model.launches_of(fn.name) if c.name == caller.name]
        index = next((i for i, la in enumerate(same) if la is launch), 0)
        caller2, launch2 = pairs[min(index, len(pairs) - 1)]
    offset2 = caller2.span(launch2.span)[0]
    seed = {k: v for k, v in bound.scalars.items() if k not in model2.constants}
    numel = dict(bound.numel)
    for at in _made_at(model2, caller2, bound).values():
        # Made with sizes only the host code before it gives (`{batch, features.back()}`): read there.
        numel.update(at)
        for name in at:
            bound.origin[name] = f"{bound.origin.get(name, name)}, evaluated through the host code before it is made"
    facts = host_facts(
        model2,
        caller2,
        offset2,
        seed,
        tensors=bound.shapes,
        allocs=_tensor_buffers(bound, numel),
    )
    for t, parts in bound.deferred.items():
        if t in numel:
            continue
        # Made from a local the binding changes before the launch: its sizes with the values the launch sees.
        try:
            sizes = [cexpr.evaluate_int(q, facts.names) for q in parts]
        except cexpr.ExprError:
            continue
        if sizes and all(v > 0 for v in sizes):
            n = 1
            for v in sizes:
                n *= v
            numel[t] = n
            bound.origin[t] = f"{bound.origin[t]} = {sizes} at the launch"
    for p, raw in zip(fn2.params, launch2.args, strict=False):
        host = _strip_cast(raw)
        if not p.is_pointer or host not in numel or host in facts.allocs:
            continue
        ty = bound.elem_types.get(host)
        et = element_type(ty) if ty else None
        if et is None:
            et = element_type(
                p.base_type,
                dict(
                    zip(
                        [t.name for t in fn2.template_params],
                        launch2.template_values or launch2.template_args,
                        strict=False,
                    )
                ),
            )
        if et is None:
            continue
        facts.allocs[host] = numel[host] * DTYPE_BYTES[et[0]] * et[1]
        facts.alloc_texts[host] = bound.origin[host]
        facts.alloc_origin[host] = bound.origin[host]
    notes = list(bound.notes)
    for var, (value, where) in hostcode.loop_first_values(model2.text, offset2, facts.names, model2.tree).items():
        if var not in facts.names or facts.names[var] == value:
            facts.names[var] = value
            notes.append(f"the launch runs in a loop over `{var}` ({where}); using its first value {_fmt(value)}")
    deduced = _deduce_templates(fn2, launch2, {**_pointer_types(model2, caller2), **bound.elem_types})
    result = _from_launch(model2, fn2, caller2, launch2, facts, indent, n_launches, tuple(notes), deduced)
    if isinstance(result, ProblemSpec):
        return replace(
            result,
            origin=f"inferred from the torch binding `{caller.name}()`, its tensors given "
            f"representative shapes ({result.origin.removeprefix('inferred from ')})",
        )
    return replace(result, message=f"{result.message} (its tensors given representative shapes)")


def _tensor_buffers(bound: torchspec.TorchBinding, numel: dict[str, int]) -> dict[str, tuple[int, str]]:
    """Return each tensor's data as a buffer (bytes, origin), for the tensors whose element type the binding reads."""
    out: dict[str, tuple[int, str]] = {}
    for name, n in numel.items():
        ty = bound.elem_types.get(name)
        et = element_type(ty) if ty else None
        if et is not None:
            out[name] = (n * DTYPE_BYTES[et[0]] * et[1], bound.origin.get(name, f"tensor `{name}`"))
    return out


def _made_at(model: FileModel, caller: Function, bound: torchspec.TorchBinding) -> dict[str, dict[str, int]]:
    """Return the element counts of the tensors `bound` left unsized, read with the host values where each is made.

    `auto out = at::empty({batch, feats.back()}, ...)` after `feats` is filled by `push_back` in a loop: the host
    evaluator reads the sizes at the declaration (the values there, not at the launch). Each tensor's aliases (the
    pointers declared from it) get the same count.
    """
    out: dict[str, dict[str, int]] = {}
    if not bound.made_at:
        return out
    node = model.tree.root_node.descendant_for_byte_range(caller.base, caller.base + 1)
    while node is not None and node.type != "function_definition":
        node = node.parent
    if node is None:
        return out
    src = model.text
    seed = {k: v for k, v in bound.scalars.items() if k not in model.constants}
    stack = [node]
    decls: dict[str, Any] = {}
    while stack:
        n = stack.pop()
        stack.extend(n.named_children)
        if n.type == "init_declarator":
            name, value = n.child_by_field_name("declarator"), n.child_by_field_name("value")
        elif n.type == "assignment_expression" and _text(src, n.child_by_field_name("operator")) == "=":
            # `at::Tensor t; if (...) { t = at::empty({...}); }`: made where it is assigned.
            name, value = n.child_by_field_name("left"), n.child_by_field_name("right")
        else:
            continue
        if name is None or value is None or name.type != "identifier" or _text(src, name) not in bound.made_at:
            continue
        args = value.child_by_field_name("arguments") if value.type == "call_expression" else None
        first = args.named_children[0] if args is not None and args.named_children else None
        if first is not None and first.type == "initializer_list":
            decls.setdefault(_text(src, name), (n, first))
    for t, (decl, sizes_node) in decls.items():
        facts = host_facts(model, caller, decl.start_byte, seed, tensors=bound.shapes)
        found = [_evaluate(src, part, facts) for part in sizes_node.named_children]
        shown = [v for v in found if isinstance(v, int) and v > 0]
        if not found or len(shown) != len(found):
            continue
        count = 1
        for v in shown:
            count *= v
        names = [a for a, r in bound.deferred_root.items() if r == t] + [t]
        out[t] = {a: count for a in names}
        for a in names:
            bound.shapes[a] = tuple(shown)
        bound.notes = [n for n in bound.notes if not (n.startswith("the size `") and f"of the tensor `{t}` made" in n)]
        bound.notes.append(f"the tensor `{t}` is made with sizes {shown}, read through the host code before it")
    return out


def _pointer_types(model: FileModel, caller: Function) -> dict[str, str]:
    """Return the element type of each pointer a host function declares with a scalar type (`float *a, *b;`)."""
    node = model.tree.root_node.descendant_for_byte_range(caller.base, caller.base + 1)
    while node is not None and node.type != "function_definition":
        node = node.parent
    if node is None:
        return {}
    src = model.text
    out: dict[str, str] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        stack.extend(n.named_children)
        if n.type != "declaration":
            continue
        ty = n.child_by_field_name("type")
        if ty is None:
            continue
        base = normalise_type(_text(src, ty))
        if base not in SCALAR_CTYPES and element_type(base) is None:
            continue
        for d in n.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                d = d.child_by_field_name("declarator")
            if d is None or d.type != "pointer_declarator":
                continue
            name = d.child_by_field_name("declarator")
            if name is not None and name.type == "identifier":
                out.setdefault(_text(src, name), base)
    return out


def _deduce_templates(fn: Function, launch: Launch, elem_types: dict[str, str]) -> dict[str, str]:
    """Return the template arguments a launch without them deduces from its tensors' element types.

    `k<<<g, b>>>(x.data_ptr<float>(), ...)` for `template <typename T> __global__ void k(const T* x, ...)` binds
    `T` to float, as C++'s deduction from the argument's type does.
    """
    if launch.template_values or launch.template_args:
        return {}
    names = {t.name for t in fn.template_params}
    out: dict[str, str] = {}
    for p, raw in zip(fn.params, launch.args, strict=False):
        base = normalise_type(p.base_type)
        host = _strip_cast(raw)
        if p.is_pointer and base in names and host in elem_types and base not in out:
            out[base] = elem_types[host]
        cast = re.match(r"\s*(?:\(\s*([\w:]+)\s*\)|([\w:]+)\s*\()", raw)
        ty = (cast.group(1) or cast.group(2)) if cast else None
        if not p.is_pointer and base in names and base not in out and ty is not None and ty in SCALAR_CTYPES:
            # `k<<<g, b>>>(float(alpha))` for a parameter `A alpha`: the cast's type is `A`.
            out[base] = ty
    return out


def _through_macros(model: FileModel, fn: Function) -> ProblemSpec | SpecMissing | None:
    """Return the spec of a kernel launched only through a macro (`LAUNCH(k, grid, block, args...)`), if any."""
    from dataclasses import replace

    from warpwise.analyzers.build import analyze_text

    expanded, macros = hostcode.expand_launch_macros(model.text, model.tree)
    if not macros:
        return None
    model2 = analyze_text(expanded, model.path)
    fn2 = kernel_function(model2, fn.name)
    if fn2 is None or not model2.launches_of(fn.name):
        return None
    result = infer(model2, fn2)
    names = ", ".join(f"`{m}`" for m in macros)
    if isinstance(result, ProblemSpec):
        return replace(result, origin=f"{result.origin} (written through the macro {names})")
    return replace(result, message=f"{result.message} (the launch is written through the macro {names})")


def _from_launch(
    model: FileModel,
    fn: Function,
    caller: Function,
    launch: Launch,
    facts: HostFacts,
    indent: str,
    n_launches: int,
    loop_notes: tuple[str, ...] = (),
    deduced: dict[str, str] | None = None,
) -> ProblemSpec | SpecMissing:
    """Build the spec of one launch site, or list what it does not tell (`deduced`: template arguments that
    the launch's argument types give)."""
    line = model.lines.position(caller.span(launch.span)[0]).line + 1
    missing: list[str] = []
    template_values = launch.template_values or launch.template_args
    bindings = dict(zip([t.name for t in fn.template_params], template_values, strict=False))
    for tname, ttype in (deduced or {}).items():
        if tname not in bindings:
            bindings[tname] = ttype
            loop_notes = (*loop_notes, f"`{tname}` is {ttype}, deduced from the type of the tensor passed for it")
    for t in fn.template_params:
        if t.name not in bindings and t.default is not None:
            bindings[t.name] = t.default
    for t in fn.template_params:
        if t.name not in bindings:
            missing.append(f"template argument `{t.name}`")
    if len(launch.args) != len(fn.params):
        # A templated launch helper (`multi_tensor_apply`) passes its own argument pack: offer the annotation.
        roles = {p.name: (param_role(fn, p).value, "?") for p in fn.params if p.is_pointer}
        return SpecMissing(
            fn.name,
            f"the launch at line {line} passes {len(launch.args)} arguments to {len(fn.params)} parameters; "
            "annotate the kernel with its sizes and launch",
            ("arguments",),
            annotation=format_annotation(
                fn, {}, {}, roles, "?", "?", None, {t.name: "?" for t in fn.template_params}, indent
            ),
            insert_line=kernel_line(model, fn),
        )
    indexers = index_buffers(fn)
    buffers: dict[str, BufferSpec] = {}
    host_to_buffer: dict[str, str] = {}
    args: list[ArgSpec] = []
    offer_buffers: dict[str, tuple[str, str]] = {}
    offer_scalars: dict[str, str] = {}
    notes: list[str] = []
    for i, (p, raw) in enumerate(zip(fn.params, launch.args, strict=True)):
        if p.is_pointer:
            role = param_role(fn, p)
            et = element_type(p.base_type, bindings)
            host = _strip_cast(raw)
            count_text = "?"
            if et is None:
                missing.append(f"element type of `{p.name}` ({p.base_type})")
            elif not _IDENT.match(host):
                member = _member(model, caller, launch, i)
                if member:
                    missing.append(f"size of `{p.name}` (passed `{raw.strip()}`: {member})")
                else:
                    missing.append(f"size of `{p.name}` (passed `{raw.strip()}`, not a plain allocation)")
            elif host in host_to_buffer:
                shared = host_to_buffer[host]
                old = buffers[shared]
                buffers[shared] = BufferSpec(old.name, old.dtype, old.count, _merge(old.role, role), old.low, old.high)
                args.append(ArgSpec(p.name, "pointer", buffer=shared))
                notes.append(f"`{p.name}` and `{shared}` receive the same buffer `{host}`")
                count_text = str(old.count // et[1])
            elif host not in facts.allocs:
                why = f"`cudaMalloc({facts.alloc_texts[host]})`" if host in facts.alloc_texts else "no cudaMalloc"
                member = None if host in facts.alloc_texts else _member(model, caller, launch, i)
                if member:
                    missing.append(f"size of `{p.name}` (passed `{host}`: {member})")
                else:
                    missing.append(f"size of `{p.name}` (passed `{host}`: {why} before the launch)")
            else:
                dtype, lanes = et
                elem = DTYPE_BYTES[dtype] * lanes
                nbytes = facts.allocs[host]
                count = nbytes // DTYPE_BYTES[dtype]
                count_text = str(nbytes // elem)
                lo, hi = _default_range(dtype, (-1.0, 1.0))
                if p.name in indexers and dtype not in FLOAT_DTYPES:
                    # Nothing in the host code bounds an index buffer's values: 0 is in bounds of every
                    # array it indexes (a representative index, said in the notes; the real range may differ).
                    lo, hi = 0.0, 0.0
                    notes.append(
                        f"`{p.name}` indexes other arrays and the host code does not bound its values: "
                        "every element is 0 (a representative in-bounds index)"
                    )
                buffers[p.name] = BufferSpec(p.name, dtype, count, role, lo, hi)
                host_to_buffer[host] = p.name
                args.append(ArgSpec(p.name, "pointer", buffer=p.name))
                where = facts.alloc_origin.get(host) or f"`cudaMalloc({facts.alloc_texts[host]})`"
                notes.append(f"`{p.name}`: {count_text} elements from {where}")
            offer_buffers[p.name] = (role.value, count_text)
        else:
            ctype = scalar_ctype(p, bindings)
            enum = enums.enum_of(model, p.type) if ctype is None else None
            if ctype is None and enum is None:
                missing.append(f"a value of type `{p.type}` for `{p.name}` (the gate passes only scalars)")
                continue
            expr = raw
            constants: dict[str, int | float] = {}
            if enum is not None:
                # An enum is passed as the integer it is; its enumerators are named constants of the argument.
                ctype, expr, constants = enum.ctype, enums.argument_text(raw, enum), dict(enum.values)
            try:
                value = cexpr.evaluate(expr, {"true": 1, "false": 0, **constants, **facts.names})
            except cexpr.ExprError:
                arg_nodes = _launch_args(model, caller, launch)
                found = _evaluate(model.text, arg_nodes[i], facts) if len(arg_nodes) == len(fn.params) else None
                if found is None:
                    member = _member(model, caller, launch, i)
                    missing.append(f"value of `{p.name}` (passed `{raw.strip()}`" + (f": {member})" if member else ")"))
                    continue
                value = found
            if enum is not None:
                value = _enum_value(enum, p.name, value, notes)
            if ctype not in ("float", "double"):
                if isinstance(value, float) and not value.is_integer():
                    missing.append(f"an integer value for `{p.name}` (passed `{raw.strip()}`)")
                    continue
                value = int(value)
            else:
                value = float(value)
            args.append(ArgSpec(p.name, ctype, value=value))
            offer_scalars[p.name] = _fmt(value)
    grid = _dim(launch.grid, launch.grid_value, facts)
    block = _dim(launch.block, launch.block_value, facts)
    smem: int | None = launch.smem_value
    if smem is None and launch.smem is not None:
        try:
            smem = cexpr.evaluate_int(launch.smem, facts.names)
        except cexpr.ExprError:
            smem = None
    if grid is None or block is None or (smem is None and launch.smem is not None):
        # What C arithmetic cannot read (`block.x * sizeof(float)`, `std::min(...)`): the host evaluator.
        config = _launch_config(model, caller, launch)
        grid = grid or _dim_node(model.text, config, 0, facts)
        block = block or _dim_node(model.text, config, 1, facts)
        if smem is None and len(config) > 2:
            v = _evaluate(model.text, config[2], facts)
            smem = int(v) if isinstance(v, int) or (isinstance(v, float) and v.is_integer()) else None
    if grid is None:
        missing.append(f"grid (`{launch.grid}`)")
    if block is None:
        missing.append(f"block (`{launch.block}`)")
    if smem is None:
        missing.append(f"dynamic shared memory (`{launch.smem}`)")
    if missing:
        known = set(model.constants) | {
            p.name for p, a in zip(fn.params, launch.args, strict=True) if a.strip() == p.name
        }
        text = format_annotation(
            fn,
            {},
            offer_scalars,
            offer_buffers,
            ",".join(map(str, _trim(grid))) if grid else _offer_dim(launch.grid, known),
            ",".join(map(str, _trim(block))) if block else _offer_dim(launch.block, known),
            str(smem) if smem else None,
            {t.name: bindings.get(t.name, "?") for t in fn.template_params},
            indent,
        )
        where = f"the launch in `{caller.name}()` at line {line}"
        return SpecMissing(
            fn.name,
            f"cannot infer how to run `{fn.name}` from {where}: missing " + "; ".join(missing),
            tuple(missing),
            annotation=text,
            insert_line=kernel_line(model, fn),
        )
    assert grid is not None and block is not None and smem is not None
    beyond = _beyond_limits(grid, block) or _too_big(buffers)
    if beyond:
        return SpecMissing(
            fn.name,
            f"cannot run `{fn.name}` as the launch in `{caller.name}()` at line {line} gives it: {beyond}"
            + (f" ({'; '.join(loop_notes)})" if loop_notes else ""),
            (beyond,),
            annotation=format_annotation(
                fn,
                {},
                offer_scalars,
                offer_buffers,
                "?",
                ",".join(map(str, _trim(block))),
                str(smem) if smem else None,
                {t.name: bindings.get(t.name, "?") for t in fn.template_params},
                indent,
            ),
            insert_line=kernel_line(model, fn),
        )
    notes.extend(dict.fromkeys(facts.evaluated))
    notes.extend(loop_notes)
    if n_launches > 1:
        notes.append(f"{n_launches} launches of `{fn.name}` in this file; using the one at line {line}")
    geom = Geometry(grid, block, smem)
    run = RunSpec(tuple(buffers.values()), tuple(args), geom, geom)
    template_args = tuple(bindings[t.name] for t in fn.template_params)
    symbols = tuple(sorted((k, v) for k, v in facts.names.items() if k not in model.constants))
    return ProblemSpec(
        fn.name,
        "inferred",
        f"inferred from the launch in `{caller.name}()` at line {line}",
        template_args,
        run,
        symbols=symbols,
        notes=tuple(notes),
    )


def _enum_value(enum: enums.EnumType, param: str, value: int | float, notes: list[str]) -> int | float:
    """Return the value an enum parameter is passed (an enumerator's; the first one when the host's is none)."""
    by_value = {v: n for n, v in reversed(enum.values)}
    if value in by_value:
        notes.append(f"`{param}` is the enum `{enum.name}`, passed as {enum.ctype} {_fmt(value)} (`{by_value[value]}`)")
        return value
    first, first_value = enum.values[0] if enum.values else ("0", 0)
    notes.append(
        f"`{param}` is the enum `{enum.name}`; the host's value {_fmt(value)} is no enumerator of it, so the first "
        f"one, `{first}` ({first_value}), is passed as {enum.ctype}"
    )
    return first_value


def _launch_config(model: FileModel, caller: Function, launch: Launch) -> list[Any]:
    """Return the syntax nodes of a launch's `<<<grid, block, smem, stream>>>`, or [] when they cannot be found."""
    start, end = caller.span(launch.span)
    node = model.tree.root_node.descendant_for_byte_range(start, end)
    while node is not None and node.type != "call_expression":
        node = node.parent
    if node is None:
        return []
    for child in node.named_children:
        if child.type == "kernel_call_syntax":
            return [c for c in child.named_children if c.type != "comment"]
    return []


def _member(model: FileModel, caller: Function, launch: Launch, i: int) -> str | None:
    """Name the class or struct member the launch's `i`-th argument reads and where it is set, if it is one."""
    nodes = _launch_args(model, caller, launch)
    if len(nodes) != len(launch.args):
        return None
    return members.member_origin(model, caller, nodes[i])


def _launch_args(model: FileModel, caller: Function, launch: Launch) -> list[Any]:
    """Return the syntax nodes of a launch's arguments, or [] when they cannot be found."""
    start, end = caller.span(launch.span)
    node = model.tree.root_node.descendant_for_byte_range(start, end)
    while node is not None and node.type != "call_expression":
        node = node.parent
    args = node.child_by_field_name("arguments") if node is not None else None
    return [a for a in args.named_children if a.type != "comment"] if args is not None else []


def _dim_node(src: bytes, config: list[Any], i: int, facts: HostFacts) -> tuple[int, int, int] | None:
    """Evaluate the `i`-th launch configuration node (a `dim3` or an integer) with the host evaluator."""
    if len(config) <= i:
        return None
    fields: set[str] = set()
    v = hosteval.value_of(src, facts.functions, config[i], facts.env(), fields, facts.constants)
    for f in sorted(fields):
        facts.evaluated.append(
            f"`{f}` is {hosteval.DEVICE.get(f)}, the {hosteval.DEVICE.name}'s (a representative device: the GPU the "
            "gate runs on may differ)"
        )
    if isinstance(v, hosteval.Dim3):
        return v.as_tuple()
    if isinstance(v, int):
        return (v, 1, 1)
    return None


_TOO_BIG = re.compile(r"a spec from host code may use|exceeds CUDA's limits")
"""A missing piece that smaller representative shapes may resolve."""

MAX_SPEC_BYTES = 8 << 30
"""The most memory a spec inferred from host code may ask the gate for (representative shapes multiply)."""


def _too_big(buffers: dict[str, BufferSpec]) -> str:
    """Say how the buffers exceed `MAX_SPEC_BYTES` (naming the largest), or return ""."""
    total = sum(b.count * DTYPE_BYTES[b.dtype] for b in buffers.values())
    if total <= MAX_SPEC_BYTES:
        return ""
    big = max(buffers.values(), key=lambda b: b.count * DTYPE_BYTES[b.dtype])
    return (
        f"buffers of {total / (1 << 30):.1f} GiB in all (`{big.name}`: {big.count} elements), more than the "
        f"{MAX_SPEC_BYTES >> 30} GiB a spec from host code may use"
    )


def _beyond_limits(grid: tuple[int, int, int], block: tuple[int, int, int]) -> str:
    """Say how a launch geometry exceeds what CUDA launches (or is empty); empty when it is launchable."""
    if min(grid) < 1 or min(block) < 1:
        return f"an empty launch (grid {_trim(grid)}, block {_trim(block)})"
    if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
        return f"grid {_trim(grid)} exceeds CUDA's limits (x < 2^31, y and z <= 65535)"
    if block[0] * block[1] * block[2] > 1024 or block[2] > 64:
        return f"block {_trim(block)} exceeds CUDA's limits (1024 threads, z <= 64)"
    return ""


def infer_geometry(model: FileModel, kernel: str) -> tuple[Geometry, str] | None:
    """Return the launch geometry of a kernel's first launch site in a file (with its text), if it evaluates."""
    launches = model.launches_of(kernel)
    if not launches:
        return None
    caller, launch = launches[0]
    facts = host_facts(model, caller, caller.span(launch.span)[0])
    grid = _dim(launch.grid, launch.grid_value, facts)
    block = _dim(launch.block, launch.block_value, facts)
    smem = launch.smem_value if launch.smem_value is not None else 0
    if grid is None or block is None:
        return None
    return Geometry(grid, block, smem), f"<<<{launch.grid}, {launch.block}>>>"


def _offer_dim(text: str | None, known: set[str]) -> str:
    """Return a launch dimension as annotation text when every name in it will be bound, else `?`."""
    if not text:
        return "?"
    t = text.strip()
    m = re.fullmatch(r"dim3\s*\((.*)\)", t, re.S)
    if m:
        t = m.group(1)
    names = set(re.findall(r"[A-Za-z_]\w*", t)) - {"sizeof"}
    return re.sub(r"\s+", "", t) if names <= known else "?"


def _merge(a: Role, b: Role) -> Role:
    """Return the role of a buffer passed to two parameters."""
    return a if a is b else Role.INOUT


def _trim(d: tuple[int, int, int]) -> tuple[int, ...]:
    """Drop trailing 1s of a dim3 for display."""
    out = list(d)
    while len(out) > 1 and out[-1] == 1:
        out.pop()
    return tuple(out)


def _fmt(v: int | float) -> str:
    """Format a scalar for an annotation."""
    return repr(v) if isinstance(v, float) else str(v)
