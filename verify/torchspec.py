"""Run specs from PyTorch bindings: tensors sized by representative shapes, so a binding's launch can be inferred.

A torch extension launches its kernel from a binding such as

    at::Tensor mymul_cuda(const at::Tensor& a, const at::Tensor& b) {
      TORCH_CHECK(a.sizes() == b.sizes());
      at::Tensor result = at::empty(a.sizes(), a.options());
      int numel = a.numel();
      mul_kernel<<<(numel + 255) / 256, 256>>>(numel, a.data_ptr<float>(), b.data_ptr<float>(),
                                               result.data_ptr<float>());

where every size comes from a tensor the caller passes. Nothing in the file says how big the tensors are, but the
binding says how they relate: which tensors share a shape (`a.sizes() == b.sizes()`, `empty_like(x)`,
`x.contiguous()`), which dimensions agree (`a.size(0) == b.size(0)`), a tensor's rank (`x.dim() == 3`, the largest
`x.size(i)` it reads) and fixed dimensions (`x.size(1) == 3`). `bind` chooses representative shapes that keep
every relation (about 4M elements per tensor, a size that fills an H200 without taking long: see
`DEFAULT_SHAPES`), binds `scalar_t` to one type its `AT_DISPATCH_*` dispatches (float where it is one) and local
`using acc_t = at::acc_type<scalar_t, true>` aliases to the accumulation type, and writes the binding's text with
every tensor query replaced by its value and every `x.data_ptr<T>()` by the tensor's name. Host inference
(`warpwise.verify.infer`) then reads that text as it reads C host code, with each tensor's element count in place
of an allocation; every choice is returned as a note for the spec's provenance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from warpwise.analyzers.expr import cexpr
from warpwise.analyzers.model import FileModel, Function
from warpwise.verify import torchext

DEFAULT_SHAPES: dict[int, tuple[int, ...]] = {
    1: (1 << 22,),
    2: (2048, 2048),
    3: (16, 512, 512),
    4: (8, 64, 64, 128),
}
"""The shape given to a tensor of each rank whose dimensions the binding leaves free (4M elements each: 16 MiB
in fp32, so two or three tensors do not fit the H200's 50 MiB L2 together, and a launch takes tens of
microseconds)."""
SMALL_SHAPES: dict[int, tuple[int, ...]] = {
    1: (1 << 16,),
    2: (256, 256),
    3: (16, 64, 64),
    4: (4, 16, 16, 64),
}
"""The shapes tried when `DEFAULT_SHAPES` make a launch too big (tensors the binding makes from the product of
several free dimensions, `empty({batch, T, U, hidden})`, or a grid past CUDA's limits): 64K elements each."""


_TENSOR_TYPE = re.compile(r"\b(?:at|torch)::Tensor\b|^\s*(?:const\s+)?Tensor\b")
_MAKES_TENSOR = re.compile(r"\b(?:at|torch)::(?:empty|zeros|ones|full|rand|randn)(?:_like)?\s*\(")
_SAME_SHAPE_CALLS = ("empty_like", "zeros_like", "ones_like", "rand_like", "randn_like", "full_like")
_SAME_SHAPE_METHODS = ("contiguous", "clone", "detach", "to", "type_as", "float", "half", "cuda")
_FLOAT_TYPES = frozenset({"double", "float"})
_INT_TYPES = frozenset(
    {"int", "unsigned", "unsigned int", "long", "int64_t", "int32_t", "uint32_t", "uint64_t", "size_t", "long long"}
)
_ACC = {"double": "double", "float": "float", "at::Half": "float", "at::BFloat16": "float"}


@dataclass
class TorchBinding:
    """What `bind` learnt from a binding: its rewritten text, the tensors' element counts and the choices made."""

    text: bytes
    numel: dict[str, int] = field(default_factory=dict)
    elem_types: dict[str, str] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    scalars: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    deferred: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Tensors made from sizes that name a local the binding changes after declaring it (`max_chunks` updated
    in a loop): their sizes as expressions, evaluated with the host code's values at the launch."""
    made_at: set[str] = field(default_factory=set)
    """Tensors made from sizes the binding's values alone do not give (`{batch, feats.back()}`): read by the host
    evaluator where each is made (`infer`), else left without a size."""
    deferred_root: dict[str, str] = field(default_factory=dict)
    """The `made_at` tensor each alias (a pointer declared from it, `float* y = out;`) is the buffer of."""


def _text(src: bytes, node: Any) -> str:
    """Return a node's source text."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _definition(model: FileModel, caller: Function) -> Any:
    """Return the syntax node of a host function's definition."""
    node = model.tree.root_node.descendant_for_byte_range(caller.base, caller.base + 1)
    while node is not None and node.type != "function_definition":
        node = node.parent
    return node


def _params(src: bytes, fn_node: Any) -> list[tuple[str, str]]:
    """Return a function's parameters as (type text, name)."""
    decl = fn_node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    out: list[tuple[str, str]] = []
    for p in plist.named_children if plist is not None else []:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        ty = p.child_by_field_name("type")
        d = p.child_by_field_name("declarator")
        name = None
        while d is not None:
            if d.type == "identifier":
                name = _text(src, d)
                break
            d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
        if ty is not None and name:
            quals = " ".join(_text(src, c) for c in p.children if c.type == "type_qualifier")
            out.append((f"{quals} {_text(src, ty)}".strip(), name))
    return out


class _Dims:
    """Union-find over tensor dimensions, each a `(tensor, index)` slot, with fixed values where a check gives one."""

    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}
        self.value: dict[Any, int] = {}
        self.checked: set[Any] = set()

    def find(self, a: Any) -> Any:
        """Return a slot's representative."""
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: Any, b: Any) -> None:
        """Make two slots one dimension."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
            if ra in self.value:
                self.value.setdefault(rb, self.value[ra])
            if ra in self.checked:
                self.checked.add(rb)

    def fix(self, a: Any, v: int) -> None:
        """Give a slot a value a check states."""
        self.value.setdefault(self.find(a), v)
        self.checked.add(self.find(a))


def applies(model: FileModel, caller: Function) -> bool:
    """Return whether a host function takes or makes torch tensors."""
    node = _definition(model, caller)
    if node is None:
        return False
    src = model.text
    if any(_TENSOR_TYPE.search(t) for t, _ in _params(src, node)):
        return True
    body = node.child_by_field_name("body")
    if body is None:
        return False
    text = _text(src, body)
    # `auto t = torch::empty({1}, ...)` makes a tensor without naming its type.
    return bool(_TENSOR_TYPE.search(text) or _MAKES_TENSOR.search(text))


def _dispatch_choice(model: FileModel, offset: int) -> tuple[str, str] | None:
    """Return the type `scalar_t` is bound to at a launch inside an `AT_DISPATCH_*`, and why."""
    found = torchext.dispatched_types(model.text, offset, model.tree)
    if found is None:
        return None
    macro, types = found
    choice = "float" if "float" in types else types[0]
    listed = ", ".join(types)
    return choice, f"`scalar_t` is {choice}, one of the types `{macro}` dispatches ({listed})"


def _acc_type(expr: str, types: dict[str, str]) -> str | None:
    """Return the type of `at::acc_type<T, true>` / `at::opmath_type<T>` / a plain type alias, if known."""
    e = " ".join(expr.split())
    m = re.fullmatch(r"(?:at::)?(?:acc_type|opmath_type)\s*<\s*([\w:]+)\s*(?:,\s*\w+\s*)?>", e)
    if m:
        t = types.get(m.group(1), m.group(1))
        return _ACC.get(t)
    return types.get(e, e if e in _ACC or e in ("int", "int64_t") else None)


_QUERY = r"\s*(?:\.|->)\s*"


def _computed_query(m: re.Match[str], query: Any) -> str:
    """Return `t.size(e)` with `e` (arithmetic on numbers) evaluated and the size substituted, else unchanged."""
    try:
        i = cexpr.evaluate_int(m.group("e"), {})
    except cexpr.ExprError:
        return m.group(0)
    probe = re.fullmatch(
        r"(?P<t>\w+)\.(?P<what2>size|stride)\((?P<i2>-?\d+)\)(?P<what>)(?P<i3>)",
        f"{m.group('t')}.{m.group('what')}({i})",
    )
    return str(query(_Q(probe))) if probe is not None else m.group(0)


def bind(
    model: FileModel,
    caller: Function,
    launch_offset: int,
    int_value: int | tuple[int, ...] | None = None,
    shapes: dict[int, tuple[int, ...]] | None = None,
    float_value: float | None = None,
) -> TorchBinding | str:
    """Return the binding's text with tensors replaced by representative sizes, or why it cannot be done.

    `shapes`: the free shape of each rank (`DEFAULT_SHAPES` unless given; `SMALL_SHAPES` when those are too big).

    With `int_value`, the binding's integer parameters take that representative value (each one noted); a tuple
    gives the i-th integer parameter its i-th value (the last one repeated). With `float_value`, its float
    parameters take that value instead of `BINDING_FLOAT`.
    """
    free = shapes or DEFAULT_SHAPES
    src = model.text
    node = _definition(model, caller)
    body = node.child_by_field_name("body") if node is not None else None
    if node is None or body is None:
        return f"`{caller.name}()` has no body"
    btext = _text(src, body)
    params = _params(src, node)
    btext, params, list_notes = _tensor_lists(btext, params)
    btext, params, optional_notes = _optional_scalars(btext, params)
    btext, present = _optional_present(btext, params)
    btext, present_notes = present_pointers(btext)
    tensors: dict[str, str] = {}  # name -> the tensor it shares its shape with (itself for a root)
    for ty, name in params:
        if _TENSOR_TYPE.search(ty):
            tensors[name] = name
    out = TorchBinding(text=src)
    out.notes.extend(
        f"`{name}` is an optional tensor of `{caller.name}()`: taken as present (a tensor like the others)"
        for name in present
    )
    out.notes.extend(present_notes)
    out.notes.extend(list_notes)
    out.notes.extend(optional_notes)
    decl = re.compile(
        r"(?:(?:at|torch)::Tensor|auto|Tensor)\s*&?\s+(\w+)\s*=\s*([^;]+);",
    )
    dims = _Dims()
    made: dict[str, list[str]] = {}
    for name, value in _tensor_definitions(btext, decl):
        if name in tensors:
            continue
        same = re.fullmatch(r"(\w+)" + _QUERY + r"(\w+)\s*\(.*\)", value)
        like = re.fullmatch(r"(?:(?:at|torch)::)?(\w+)\s*\(\s*(\w+)\b.*\)", value)
        sized = re.fullmatch(
            r"(?:(?:at|torch)::)?(?:empty|zeros|ones|full|rand|randn)\s*\(\s*(\w+)" + _QUERY + r"sizes\s*\(\s*\).*\)",
            value,
        )
        listed = re.fullmatch(r"(?:(?:at|torch)::)?(?:empty|zeros|ones|full|rand|randn)\s*\(\s*\{([^}]*)\}.*\)", value)
        if same and same.group(1) in tensors and same.group(2) in _SAME_SHAPE_METHODS:
            tensors[name] = same.group(1)
        elif like and like.group(1) in _SAME_SHAPE_CALLS and like.group(2) in tensors:
            tensors[name] = like.group(2)
        elif sized and sized.group(1) in tensors:
            tensors[name] = sized.group(1)
        elif listed:
            tensors[name] = name
            made[name] = [p.strip() for p in cexpr.split_top(listed.group(1)) if p.strip()]

    def root(t: str) -> str:
        seen = set()
        while t in tensors and tensors[t] != t and t not in seen:
            seen.add(t)
            t = tensors[t]
        return t

    # A shape check joins two tensors; `a.size(i) == b.size(j)` joins two dimensions; `x.dim() == r` fixes a rank.
    names = "|".join(re.escape(t) for t in sorted(tensors, key=len, reverse=True)) or r"(?!x)x"
    for m in re.finditer(rf"\b({names}){_QUERY}sizes\s*\(\s*\)\s*==\s*({names}){_QUERY}sizes\s*\(\s*\)", btext):
        a, b = root(m.group(1)), root(m.group(2))
        if a != b:
            tensors[a] = b
    ranks: dict[str, int] = {}
    size_ref = (
        rf"\b({names}){_QUERY}(?:size|stride)\s*\(\s*(-?\d+)\s*\)"
        rf"|\b({names}){_QUERY}sizes\s*\(\s*\)\s*\[\s*(-?\d+)\s*\]"
    )
    for m in re.finditer(size_ref, btext):
        t, i = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        # `x.size(i)` makes `x` at least rank i + 1; `x.size(-i)` at least rank i.
        need = int(i) + 1 if int(i) >= 0 else -int(i)
        ranks[root(t)] = max(ranks.get(root(t), 1), need)
    for t, i in _helper_queries(model, btext, set(tensors)):
        ranks[root(t)] = max(ranks.get(root(t), 1), i + 1)
    # `x.numel() / head_dim / batch` reads `x` as having a dimension per divisor and one more (rows of them).
    divisions = [
        (m.group(1), re.findall(r"/\s*(\w+)", m.group(2)))
        for m in re.finditer(rf"\b({names}){_QUERY}numel\s*\(\s*\)((?:\s*/\s*\w+)+)", btext)
    ]
    for t, divisors in divisions:
        ranks[root(t)] = max(ranks.get(root(t), 1), len(divisors) + 1)
    for m in re.finditer(rf"\b({names}){_QUERY}(?:dim|ndimension)\s*\(\s*\)\s*==\s*(\d+)", btext):
        ranks[root(m.group(1))] = int(m.group(2))
    for t in made:
        ranks[t] = max(len(made[t]), 1)

    def slot(t: str, i: int) -> tuple[str, int]:
        r = root(t)
        n = ranks.get(r, 1)
        return (r, i + n if i < 0 else i)

    one = rf"(?:\b({names}){_QUERY}size\s*\(\s*(-?\d+)\s*\)|\b({names}){_QUERY}sizes\s*\(\s*\)\s*\[\s*(-?\d+)\s*\])"
    for m in re.finditer(rf"{one}\s*==\s*(?:{one}|(\d+)\b)", btext):
        g = m.groups()
        left = (g[0], int(g[1])) if g[0] else (g[2], int(g[3]))
        if g[4] or g[6]:
            right = (g[4], int(g[5])) if g[4] else (g[6], int(g[7]))
            dims.union(slot(*left), slot(*right))
        elif g[8]:
            dims.fix(slot(*left), int(g[8]))
    # `head_dim == cos.size(-1)` ties an integer parameter to a dimension: it takes that dimension's value.
    int_params = [n for ty, n in params if re.sub(r"\bconst\b", "", ty).strip() in _INT_TYPES]
    ties: dict[str, tuple[str, int]] = {}
    if int_params:
        ip = "|".join(re.escape(n) for n in sorted(int_params, key=len, reverse=True))
        fixed_rank = {
            root(m.group(1))
            for m in re.finditer(rf"\b({names}){_QUERY}(?:dim|ndimension)\s*\(\s*\)\s*==\s*(\d+)", btext)
        }
        # Only the whole operand on each side: `out.size(0) == p_grid + 1` ties nothing (p_grid is one less).
        start, end = r"(?:^|(?<=[(,!])|(?<=&&)|(?<=\|\|))\s*", r"(?=\s*(?:[),;]|&&|\|\|))"
        for m in re.finditer(rf"{start}({ip})\s*==\s*{one}{end}|{start}{one}\s*==\s*({ip}){end}", btext, re.M):
            g = m.groups()
            name, t, i = (g[0], *(g[1:3] if g[1] else g[3:5])) if g[0] else (g[9], *(g[5:7] if g[5] else g[7:9]))
            k = int(i)
            r = root(t)
            if k < 0 and r not in fixed_rank and ranks.get(r, 1) == -k:
                # Only `t.size(-k)` is read: `t` is a table of such rows (`cos` of `head_dim` columns per position),
                # so it gets one leading dimension more, kept free (rather than a single row).
                ranks[r] = -k + 1
                out.notes.append(
                    f"`{t}` is read only through `size({k})`, checked against `{name}`: taken as rank {ranks[r]}"
                )
            sl = slot(t, k)
            if name in ties:
                dims.union(sl, ties[name])
            else:
                ties[name] = sl
    for t, divisors in divisions:
        for d in divisors:
            if d in ties:
                # A divisor tied to another tensor's dimension is read as `t`'s innermost one (rows of `d`).
                dims.union((root(t), ranks[root(t)] - 1), ties[d])
                out.notes.append(
                    f"`{t}.numel() / {' / '.join(divisors)}`: `{t}` is read as rank {ranks[root(t)]}, its last "
                    f"dimension `{d}`"
                )

    # Constants torch's headers define for every CUDA build.
    out.scalars.update(TORCH_CONSTANTS)
    # Scalars a binding can read from: its float parameters (a representative 1.0), and its dispatch type.
    types: dict[str, str] = {}
    choice = _dispatch_choice(model, launch_offset)
    if choice is not None:
        types["scalar_t"] = choice[0]
        out.notes.append(choice[1])
    # A project's own dispatch macro (`DISPATCH_FLOAT_AND_HALF(t, 0, "op", ...)` declaring `using scalar_t_0 =
    # float;` per case) binds its names like AT_DISPATCH: each takes the first type the macro's body gives it.
    from warpwise.verify.instances import macro_names

    for name, value in macro_names(model, caller, launch_offset).items():
        t = _acc_type(value, types)
        if name not in types and t is not None:
            types[name] = t
            out.notes.append(f"`{name}` is {t}, the first type the macro around the launch declares it as")
    for m in re.finditer(r"\busing\s+(\w+)\s*=\s*([^;]+);", btext):
        t = _acc_type(m.group(2), types)
        if t is not None:
            types[m.group(1)] = t
            if m.group(1) != "scalar_t":
                out.notes.append(f"`{m.group(1)}` is {t} (`{' '.join(m.group(2).split())}` with that `scalar_t`)")
    n_ints = 0
    for ty, name in params:
        if _TENSOR_TYPE.search(ty):
            continue
        if re.sub(r"\bconst\b", "", ty).strip() in _FLOAT_TYPES:
            rep_f = BINDING_FLOAT if float_value is None else float_value
            out.scalars[name] = rep_f
            out.notes.append(
                f"`{name}` is a parameter of `{caller.name}()`; using {rep_f} (nothing in the file gives it)"
            )
        elif re.sub(r"\bconst\b", "", ty).strip() in _INT_TYPES:
            if isinstance(int_value, tuple):
                rep = int_value[min(n_ints, len(int_value) - 1)]
            else:
                rep = int_value if int_value is not None else BINDING_INT
            n_ints += 1
            where = "project" if int_value is not None else "file"
            out.scalars[name] = rep
            out.notes.append(
                f"`{name}` is an integer parameter of `{caller.name}()`; using the representative value {rep} "
                f"(nothing in the {where} gives it)"
            )
        elif re.sub(r"\bconst\b", "", ty).strip() == "bool":
            out.scalars[name] = 1
            out.notes.append(f"`{name}` is a flag of `{caller.name}()`; taking the path where it is true")

    def shape(t: str) -> tuple[int, ...]:
        r = root(t)
        n = ranks.get(r, 1)
        default = free.get(n, (*free[4], *([1] * (n - 4))))
        vals = []
        for i in range(n):
            key = dims.find((r, i))
            vals.append(dims.value.get(key, default[i]))
        return tuple(vals)

    def settle() -> None:
        # A free dimension shared by tensors of different ranks takes the default of the highest-rank one.
        for t in sorted({root(t) for t in tensors} - set(made), key=lambda r: -ranks.get(r, 1)):
            n = ranks.get(t, 1)
            default = free.get(n, (*free[4], *([1] * (n - 4))))
            for i in range(n):
                dims.value.setdefault(dims.find((t, i)), default[i])

    # Tensors made from a braced list of sizes get their sizes once the others are known.
    values: dict[str, int] = {}

    def substitute(text: str) -> str:
        def query(m: _Q) -> str:
            t = m.group("t")
            s = shape(t)
            what = m.group("what")
            if what == "numel":
                return f"({_prod(s)})"
            if what in ("dim", "ndimension"):
                return f"({len(s)})"
            if what in ("element_size", "itemsize"):
                size = _element_size(btext, t, types)
                if size is None:
                    return m.group(0)
                note = f"`{t}.{what}()` is {size} bytes, the type its `data_ptr<...>()` reads it as"
                if note not in out.notes:
                    out.notes.append(note)
                return f"({size})"
            i = int(m.group("i"))
            i = i + len(s) if i < 0 else i
            if not 0 <= i < len(s):
                return m.group(0)
            if what == "stride":
                return f"({_prod(s[i + 1 :])})"
            return f"({s[i]})"

        text = re.sub(
            rf"\b(?P<t>{names}){_QUERY}(?:(?P<what>numel|dim|ndimension|element_size|itemsize)\s*\(\s*\)|(?P<what2>size|stride)\s*\(\s*(?P<i2>-?\d+)\s*\)|sizes\s*\(\s*\)\s*\[\s*(?P<i3>-?\d+)\s*\])",
            lambda m: query(_Q(m)),
            text,
        )
        # `x.size(x.dim() - 1)`: the rank is known now, so an index written as arithmetic on it evaluates.
        return re.sub(
            rf"\b(?P<t>{names}){_QUERY}(?P<what>size|stride)\s*\((?P<e>[\d\s()+\-*/]*[+\-*/][\d\s()+\-*/]*)\)",
            lambda m: _computed_query(m, query),
            text,
        )

    settle()
    for tied, sl in ties.items():
        dim_value = dims.value.get(dims.find(sl))
        if dim_value is None:
            continue
        out.scalars[tied] = dim_value
        out.notes = [n for n in out.notes if not n.startswith(f"`{tied}` is an integer parameter of")]
        out.notes.append(
            f"`{tied}` is checked equal to dimension {sl[1]} of `{sl[0]}`: using that dimension, {dim_value}"
        )
    # Integer locals the sizes of made tensors may name (`const auto cols = x.size(1);`), in the body's order.
    for m in re.finditer(
        r"(?:\bconst\s+)?\b(?:auto|int|int64_t|int32_t|long|size_t|unsigned|uint32_t)\s+(\w+)\s*=\s*([^;{}]+);", btext
    ):
        try:
            values[m.group(1)] = cexpr.evaluate_int(
                substitute(m.group(2)), {**model.constants, **out.scalars, **values}
            )
        except cexpr.ExprError:
            values.pop(m.group(1), None)
    # A local assigned again after its declaration (`int best = -1; for (...) if (...) best = c;`) does not keep
    # its first value: it is left to the host code's reading at the launch.
    changing = {name for name in values if _assigned_again(btext, name)}
    for name in changing:
        del values[name]
    for t, parts in list(made.items()):
        sizes = []
        for p in parts:
            try:
                sizes.append(cexpr.evaluate_int(substitute(p), {**model.constants, **out.scalars, **values}))
            except cexpr.ExprError:
                words = set(re.findall(r"\b[A-Za-z_]\w*\b", p))
                if words & changing and not _assigned_after(btext, t, words & changing):
                    out.deferred[t] = tuple(substitute(q) for q in parts)
                    for i in range(len(parts)):
                        dims.fix((t, i), 1)
                    break
                # Left to the host evaluator where it is made; unless that reads it, its pointers stay unknown
                # (named in the spec's missing pieces). The other tensors are kept.
                out.notes.append(f"the size `{p}` of the tensor `{t}` made in `{caller.name}()` does not evaluate")
                if _changed_after(btext, t, words):
                    # What it is made with changes before the launch: the launch may see other sizes.
                    for other in [o for o in tensors if root(o) == t]:
                        del tensors[other]
                else:
                    out.made_at.add(t)
                break
        else:
            for i, v in enumerate(sizes):
                dims.fix((t, i), v)
            if not sizes:
                # `at::zeros({}, ...)`: a tensor of no dimensions holds one element.
                dims.fix((t, 0), 1)

    new_body = substitute(btext)
    pointer = (
        rf"\b(?P<t>{names}){_QUERY}(?:data_ptr|mutable_data_ptr|const_data_ptr|data)"
        rf"\s*(?:<\s*(?P<ty>[\w:\s]+?)\s*>)?\s*\(\s*\)"
    )

    def ptr(m: re.Match[str]) -> str:
        t = m.group("t")
        if m.group("ty"):
            out.elem_types.setdefault(t, types.get(m.group("ty").strip(), m.group("ty").strip()))
        return t

    new_body = re.sub(pointer, ptr, new_body)
    # A pointer declared from a tensor (`const float* a_ptr = a.data_ptr<float>();`) is that tensor's buffer.
    for m in re.finditer(
        rf"([\w:]+)\s*\*\s*(?:const\s+|__restrict__\s+)*(\w+)\s*=\s*(?:\([^()]*\*\s*\)\s*|(?:static|reinterpret)_cast\s*<[^>]*>\s*\(\s*)?({names})\s*\)?\s*;",
        new_body,
    ):
        tensors.setdefault(m.group(2), m.group(3))
        ty = types.get(m.group(1), m.group(1))
        out.elem_types.setdefault(m.group(2), out.elem_types.get(m.group(3), ty))
        out.origin[m.group(2)] = m.group(3)
    # `const float* p = ((const float*) t) + c * cols;` points into `t`: the kernel gets `t` from its start, which
    # keeps every access in bounds (a representative offset 0, said in the notes).
    for m in re.finditer(
        rf"([\w:]+)\s*\*\s*(?:const\s+|__restrict__\s+)*(\w+)\s*=\s*\(*\s*(?:\([^()]*\*\s*\)\s*)?({names})\s*\)*"
        rf"\s*\+\s*([^;]+);",
        new_body,
    ):
        if m.group(2) in tensors:
            continue
        tensors.setdefault(m.group(2), m.group(3))
        ty = types.get(m.group(1), m.group(1))
        out.elem_types.setdefault(m.group(2), out.elem_types.get(m.group(3), ty))
        out.origin[m.group(2)] = m.group(3)
        offset = " ".join(m.group(4).split())
        out.notes.append(
            f"`{m.group(2)}` points `{offset}` elements into `{m.group(3)}`: given `{m.group(3)}` from its start "
            "(a representative offset 0, in bounds)"
        )
    # `int64_t* p = nullptr; ... p = t.data_ptr<int64_t>();` (after the rewrite: `p = t;`): the first tensor assigned
    # to a pointer declared null is its buffer (the branch that assigns it, as a pointer taken as present would).
    for m in re.finditer(r"([\w:]+)\s*\*\s*(\w+)\s*=\s*(?:nullptr|NULL)\s*;", new_body):
        if m.group(2) in tensors:
            continue
        later = re.search(rf"(?<![\w.>]){re.escape(m.group(2))}\s*=\s*({names})\s*;", new_body[m.end() :])
        if later is None:
            continue
        tensors.setdefault(m.group(2), later.group(1))
        out.elem_types.setdefault(m.group(2), out.elem_types.get(later.group(1), types.get(m.group(1), m.group(1))))
        out.origin[m.group(2)] = later.group(1)
        out.notes.append(f"`{m.group(2)}` is declared null and later set to `{later.group(1)}`: taken as present")
    # `const auto p = t.data_ptr<T>();` (after the rewrite: `const auto p = t;`) is `t`'s buffer too.
    for m in re.finditer(rf"\bauto\s*\*?\s*(?:const\s+)?(\w+)\s*=\s*({names})\s*;", new_body):
        if m.group(1) in tensors:
            continue
        tensors.setdefault(m.group(1), m.group(2))
        if m.group(2) in out.elem_types:
            out.elem_types.setdefault(m.group(1), out.elem_types[m.group(2)])
        out.origin[m.group(1)] = m.group(2)
    for name in list(types):
        new_body = re.sub(rf"\b{re.escape(name)}\b(?!\s*=)", types[name], new_body)
    for t in tensors:
        base = out.origin.get(t, t)
        if root(base) in out.made_at:
            out.deferred_root[t] = root(base)
            out.origin[t] = f"tensor `{root(base)}` made with sizes {made[root(base)]}"
            continue
        if root(base) in out.deferred:
            out.deferred[t] = out.deferred[root(base)]
            out.origin[t] = f"tensor `{root(base)}` made with sizes {list(out.deferred[t])}"
            continue
        s = shape(base)
        out.numel[t] = _prod(s)
        out.shapes[t] = s
        r = root(base)
        how = "its shape is that of " + f"`{r}`" if r != base else ""
        chosen = (
            "from the sizes it is made with" if r in made else _why_shape(r, ranks, dims, s, free is not DEFAULT_SHAPES)
        )
        out.origin.setdefault(t, t)
        out.origin[t] = f"tensor `{base}` of shape {list(s)} ({how + '; ' if how else ''}{chosen})"
    out.text = src[: body.start_byte] + new_body.encode() + src[body.end_byte :]
    return out


def _element_size(body: str, tensor: str, types: dict[str, str]) -> int | None:
    """Return a tensor's `element_size()` in bytes: the size of the type its `data_ptr<T>()` reads it as (the
    dispatch's type for `scalar_t`), or None when the body reads it as no one type."""
    from warpwise.verify.spec import element_type
    from warpwise.verify.types import DTYPE_BYTES

    read_as = rf"\b{re.escape(tensor)}{_QUERY}(?:data_ptr|mutable_data_ptr|const_data_ptr)\s*<\s*([\w:\s]+?)\s*>"
    seen = {types.get(m.group(1).strip(), m.group(1).strip()) for m in re.finditer(read_as, body)}
    sizes = set()
    for ty in seen:
        et = element_type(ty)
        if et is None:
            return None
        sizes.add(DTYPE_BYTES[et[0]] * et[1])
    return sizes.pop() if len(sizes) == 1 else None


def _assigned_again(body: str, name: str) -> bool:
    """Whether a body assigns a local more than once (its declaration included), or steps it (`n++`)."""
    n = re.escape(name)
    sets = re.findall(rf"(?<![\w.>]){n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", body)
    steps = re.search(rf"(?:\+\+|--)\s*{n}\b|(?<![\w.>]){n}\s*(?:\+\+|--)", body)
    return len(sets) > 1 or steps is not None


def _assigned_after(body: str, tensor: str, names: set[str]) -> bool:
    """Whether one of `names` is assigned after the tensor is made (its first `tensor = ...`), or where unknown."""
    made = re.search(rf"(?<![\w.>]){re.escape(tensor)}\s*=(?!=)", body)
    if made is None:
        return True
    for name in names:
        n = re.escape(name)
        if re.search(rf"(?<![\w.>]){n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{n}\b", body[made.end() :]):
            return True
    return False


def _changed_after(body: str, tensor: str, names: set[str]) -> bool:
    """Whether one of `names` is assigned or stepped after the tensor is made (where unknown, True).

    A declaration of the same name (`int* feats = feats.data();`, a launcher's parameter inlined into an inner
    block) makes a new variable and changes nothing: it does not count.
    """
    made = re.search(rf"(?<![\w.>]){re.escape(tensor)}\s*=(?!=)", body)
    if made is None:
        return True
    rest = body[made.end() :]
    for name in names:
        n = re.escape(name)
        if re.search(rf"(?:\+\+|--)\s*{n}\b|(?<![\w.>]){n}\s*(?:\+\+|--)", rest):
            return True
        for m in re.finditer(rf"(?<![\w.>]){n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", rest):
            before = rest[: m.start()].rstrip()
            word = re.search(r"(\w+)$", before)
            declares = (bool(before) and before[-1] in "*&>") or (
                word is not None and word.group(1) not in ("else", "return", "do", "case")
            )
            if not declares:
                return True
    return False


_NULL = r"(?:nullptr|NULL)\b"
_COND = r"[\w!](?:[\w.<>!&| \t]|->|==|!=|<=|>=|\(\s*\))*?"
_PRESENT = re.compile(
    rf"(?<![\w)])({_COND})\s*\?\s*([^:;?]+?)\s*:\s*{_NULL}"
    rf"|(?<![\w)])({_COND})\s*\?\s*{_NULL}\s*:\s*((?:[^,;?()]|\([^()]*\))+)"
)


_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)
"""A string literal (kept) or a comment (blanked to spaces of its length)."""


def _tensor_definitions(body: str, decl: re.Pattern[str]) -> list[tuple[str, str]]:
    """Return (name, value) of each tensor a body defines: `at::Tensor t = v;`, or a bare `at::Tensor t;` then its
    first assignment `t = v;` (the first branch that assigns it, as an optional taken as present would).

    A definition inside a comment (`// auto w = at::empty({n * 4}, at::kByte);`, an older version) is not one.
    """
    body = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " " * len(m.group(0)), body)
    out = [(m.group(1), " ".join(m.group(2).split())) for m in decl.finditer(body)]
    for m in re.finditer(r"(?:(?:at|torch)::)?Tensor\s+(\w+(?:\s*,\s*\w+)*)\s*;", body):
        for name in (n.strip() for n in m.group(1).split(",")):
            first = re.search(rf"(?<![\w.>]){re.escape(name)}\s*=(?!=)\s*([^;]+);", body[m.end() :])
            if first is not None:
                out.append((name, " ".join(first.group(1).split())))
    return out


def _helper_queries(model: FileModel, body: str, tensors: set[str]) -> list[tuple[str, int]]:
    """Return (tensor, dimension) for each `p.size(i)` a host helper of the file reads of a tensor passed to it.

    `get_tensor_spatial_size(input)` reading `input.size(2)` makes `input` at least rank 3, as the binding's own
    `input.size(2)` would.
    """
    from warpwise.verify.hosteval import host_functions

    src = model.text
    functions = host_functions(src, model.tree.root_node)
    out: list[tuple[str, int]] = []
    for m in re.finditer(r"\b(\w+)\s*\(([^;{}]*)\)", body):
        fn = functions.get(m.group(1))
        if fn is None:
            continue
        args = [a.strip() for a in cexpr.split_top(m.group(2))] if m.group(2).strip() else []
        params = [name for _, name in _params(src, fn)]
        fn_body = fn.child_by_field_name("body")
        text = _text(src, fn_body) if fn_body is not None else ""
        for arg, param in zip(args, params, strict=False):
            if arg not in tensors:
                continue
            for q in re.finditer(rf"\b{re.escape(param)}{_QUERY}(?:size|stride)\s*\(\s*(\d+)\s*\)", text):
                out.append((arg, int(q.group(1))))
    return out


def present_pointers(text: str) -> tuple[str, list[str]]:
    """Return host text with each pointer chosen by a condition (`c ? p : nullptr`) taken as present, and notes.

    A launch that passes `per_tensor ? out.data_ptr<float>() : nullptr` runs with `out`: the kernel's path that
    reads or writes the buffer is the one worth verifying, and a null pointer cannot be given a buffer.
    """
    notes: list[str] = []

    def keep(m: re.Match[str]) -> str:
        cond = " ".join((m.group(1) or m.group(3)).split())
        value = (m.group(2) or m.group(4)).strip()
        notes.append(f"`{cond} ? ...` chooses `{' '.join(value.split())}` or a null pointer: taken as present")
        return value

    return _PRESENT.sub(keep, text), notes


TORCH_CONSTANTS: dict[str, float] = {"C10_WARP_SIZE": 32}
"""Macros of torch's headers that host code sizes launches with (their value in a CUDA build of torch)."""

BINDING_INT = 1
"""The value given to a binding's integer parameter that nothing in the file gives (the smallest positive size)."""
BINDING_FLOAT = 1.0
"""The value given to a binding's float parameter that nothing in the file gives (a scale, a rate, a mean)."""
FLOAT_RETRY = 0.5
"""The float tried when `BINDING_FLOAT` leaves a scalar the launch needs unknown: a value strictly between 0 and 1,
so expressions built for rates and momenta (`1 - pow(beta, step)`, `log(p)`, `p * (1 - p)`) are neither zero nor
undefined. Used only when the first reading fails, and said in the notes."""

_OPTIONAL_TENSOR = re.compile(r"\boptional\s*<\s*(?:(?:at|torch)::)?Tensor\s*>")
_OPTIONAL_SCALAR = re.compile(r"\boptional\s*<\s*(bool|double|float|int|int64_t|int32_t|long)\s*>")
_TENSOR_LIST = re.compile(
    r"\bvector\s*<\s*(?:std::)?vector\s*<\s*(?:(?:at|torch)::)?Tensor\s*>\s*>|\bvector\s*<\s*(?:(?:at|torch)::)?Tensor\s*>"
)
TENSOR_LIST_LEN = 4
"""How many tensors a binding's `std::vector<at::Tensor>` parameter holds (and how many lists a nested one holds)
when nothing in the file says: a few, so per-tensor outputs and loops over the list are not degenerate."""
_INDEX = r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]"


def _tensor_lists(body: str, params: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]], list[str]]:
    """Return the body with each list-of-tensors parameter read as `TENSOR_LIST_LEN` tensors of one shape.

    For `std::vector<std::vector<at::Tensor>> lists`, `lists[i][j]` (any indices) becomes the tensor `lists__item`
    and `lists[i].size()` and `lists.size()` become `TENSOR_LIST_LEN`; a flat `std::vector<at::Tensor> v` the
    same with one index. The parameter is replaced by that one tensor (every element shares its shape, so a size
    read from one element holds for all of them).
    """
    out: list[tuple[str, str]] = []
    notes: list[str] = []
    for ty, name in params:
        m = _TENSOR_LIST.search(ty)
        if m is None:
            out.append((ty, name))
            continue
        nested = m.group(0).count("vector") == 2
        n = re.escape(name)
        item = f"{name}__item"
        depth = 2 if nested else 1
        body = re.sub(rf"\b{n}\s*" + r"\s*".join([_INDEX] * depth), item, body)
        size = r"\s*(?:\.|->)\s*size\s*\(\s*\)"
        if nested:
            body = re.sub(rf"\b{n}\s*{_INDEX}{size}", f"({TENSOR_LIST_LEN})", body)
        body = re.sub(rf"\b{n}{size}", f"({TENSOR_LIST_LEN})", body)
        out.append(("at::Tensor", item))
        kind = "a list of tensor lists" if nested else "a list of tensors"
        notes.append(
            f"`{name}` is {kind}: read as {TENSOR_LIST_LEN}{' lists of ' + str(TENSOR_LIST_LEN) if nested else ''} "
            f"tensors of one representative shape (every `{name}{'[i][j]' if nested else '[i]'}` is the tensor "
            f"`{item}`)"
        )
    return body, out, notes


def _optional_scalars(body: str, params: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]], list[str]]:
    """Return the body with each `c10::optional<bool>` (int, float) parameter taken as present, read as a plain one.

    `p.has_value() ? p.value() : false` becomes `p`; the parameter is then given a representative value like any
    scalar parameter of its type.
    """
    out: list[tuple[str, str]] = []
    notes: list[str] = []
    for ty, name in params:
        m = _OPTIONAL_SCALAR.search(ty)
        if m is None:
            out.append((ty, name))
            continue
        n = re.escape(name)
        has = rf"\b{n}\s*\.\s*has_value\s*\(\s*\)"
        value = rf"(?:\b{n}\s*\.\s*value\s*\(\s*\)|\*\s*{n}\b)"
        body = re.sub(rf"{has}\s*\?\s*{value}\s*:\s*[^;,)]+", name, body)
        body = re.sub(value, name, body)
        body = re.sub(has, "true", body)
        out.append((m.group(1), name))
        notes.append(f"`{name}` is an optional {m.group(1)}: taken as present")
    return body, out, notes


def _optional_present(body: str, params: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """Return the body with each `c10::optional<at::Tensor>` parameter taken as present, and those parameters.

    `b.has_value() ? b.value().data_ptr<T>() : nullptr` becomes `b.data_ptr<T>()`, `b.value()` becomes `b` and
    `b.has_value()` becomes `true`, so the tensor is sized and passed like any other.
    """
    present = [name for ty, name in params if _OPTIONAL_TENSOR.search(ty)]
    for name in present:
        n = re.escape(name)
        has = rf"\b{n}\s*\.\s*has_value\s*\(\s*\)"
        body = re.sub(rf"{has}\s*\?\s*([^:;?]+?)\s*:\s*(?:nullptr|NULL|0)\b", r"\1", body)
        body = re.sub(rf"\b{n}\s*\.\s*value\s*\(\s*\)", name, body)
        body = re.sub(rf"\(\s*\*\s*{n}\s*\)", name, body)
        body = re.sub(has, "true", body)
    return body, present


class _Q:
    """A tensor-query match with the alternatives' groups folded into `t`, `what` and `i`."""

    def __init__(self, m: re.Match[str]) -> None:
        self._m = m
        self._g = {
            "t": m.group("t"),
            "what": m.group("what") or m.group("what2") or "size",
            "i": m.group("i2") or m.group("i3"),
        }

    def group(self, key: str | int) -> str:
        """Return a folded group (or the whole match for 0)."""
        if key == 0:
            return self._m.group(0)
        return self._g[str(key)]


def _prod(s: tuple[int, ...]) -> int:
    """Return the product of a shape."""
    p = 1
    for v in s:
        p *= v
    return p


def _why_shape(root: str, ranks: dict[str, int], dims: _Dims, s: tuple[int, ...], small: bool = False) -> str:
    """Say how a tensor's shape was chosen."""
    rank = ranks.get(root, 1)
    fixed = [i for i in range(rank) if dims.find((root, i)) in dims.checked]
    parts = [f"rank {rank} from the binding's size queries" if rank > 1 else "rank 1: the binding reads no dimension"]
    if fixed:
        parts.append("dimension " + ", ".join(str(i) for i in fixed) + " fixed by a check")
    parts.append("free dimensions from the smaller shapes" if small else "free dimensions from the H200-sized defaults")
    return "; ".join(parts)
