"""Problem specs: how to run a kernel, from a problem file, an annotation, or the host code around it.

Verification must know the sizes of the buffers, which parameters are inputs and outputs, their element types
and value ranges, the scalar arguments and the launch geometry. `resolve_spec` finds them from three sources,
in this order of precedence:

1. a problem file next to the source, `NAME.KERNEL.problem.py` or `NAME.problem.py` (torch code:
   `make_inputs(seed)` + `reference(inputs)`, or KernelBench's `Model` + `get_inputs()`);
2. an annotation comment above the kernel (`// warpwise: n=1<<24 x:in[n] y:inout[n] grid=(n+255)/256 block=256`,
   see `warpwise.verify.annotation` and docs/verification.md);
3. inference from the host code of the same file: the launch site, `cudaMalloc` sizes and constants
   (`warpwise.verify.infer`).

When none gives a complete answer the result is a `SpecMissing` that says exactly what is missing, with an
annotation the editor can offer to insert; nothing is guessed silently. A resolved `ProblemSpec` carries the
plain `RunSpec` the worker executes and a content hash, which is part of every cache key.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from warpwise.analyzers.model import AccessKind, FileModel, Function, Param
from warpwise.verify.types import SCALAR_CTYPES, Role, RunSpec

_DTYPES: dict[str, tuple[str, int]] = {
    "float": ("f32", 1),
    "double": ("f64", 1),
    "half": ("f16", 1),
    "__half": ("f16", 1),
    "__nv_bfloat16": ("bf16", 1),
    "at::Half": ("f16", 1),
    "c10::Half": ("f16", 1),
    "at::BFloat16": ("bf16", 1),
    "c10::BFloat16": ("bf16", 1),
    "nv_bfloat16": ("bf16", 1),
    "int": ("i32", 1),
    "signed": ("i32", 1),
    "signed int": ("i32", 1),
    "int32_t": ("i32", 1),
    "unsigned": ("u32", 1),
    "unsigned int": ("u32", 1),
    "uint32_t": ("u32", 1),
    "uint": ("u32", 1),
    "char": ("i8", 1),
    "signed char": ("i8", 1),
    "int8_t": ("i8", 1),
    "unsigned char": ("u8", 1),
    "uint8_t": ("u8", 1),
    "short": ("i16", 1),
    "int16_t": ("i16", 1),
    "unsigned short": ("u16", 1),
    "uint16_t": ("u16", 1),
    "long": ("i64", 1),
    "long long": ("i64", 1),
    "int64_t": ("i64", 1),
    "unsigned long": ("u64", 1),
    "unsigned long long": ("u64", 1),
    "uint64_t": ("u64", 1),
    "size_t": ("u64", 1),
    "float2": ("f32", 2),
    "float4": ("f32", 4),
    "double2": ("f64", 2),
    "int2": ("i32", 2),
    "int4": ("i32", 4),
    "uint4": ("u32", 4),
    "half2": ("f16", 2),
    "__half2": ("f16", 2),
}
"""Element type of a pointer's pointee: (dtype, lanes); vector types count `lanes` scalars per element."""


def normalise_type(text: str) -> str:
    """Return a type name without qualifiers, `std::` and extra spaces."""
    words = [w for w in text.replace("*", " ").replace("&", " ").split() if w not in _QUALIFIERS]
    return " ".join(words).replace("std::", "")


_QUALIFIERS = frozenset({"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"})


def element_type(base_type: str, bindings: dict[str, str] | None = None) -> tuple[str, int] | None:
    """Return (dtype, lanes) of a pointee type, resolving template parameters through `bindings`."""
    name = normalise_type(base_type)
    if bindings and name in bindings:
        name = normalise_type(bindings[name])
    return _DTYPES.get(name)


def scalar_ctype(param: Param, bindings: dict[str, str] | None = None) -> str | None:
    """Return the C type of a scalar parameter when the gate can pass it, else None."""
    name = normalise_type(param.type)
    if bindings and name in bindings:
        name = normalise_type(bindings[name])
    if name == "signed":
        name = "int"
    if name == "uint":
        name = "unsigned int"
    return name if name in SCALAR_CTYPES else None


def param_role(fn: Function, param: Param) -> Role:
    """Return what the kernel does with a pointer parameter, from its recorded accesses."""
    kinds = {a.kind for a in fn.accesses if a.base == param.name}
    if param.is_const and not kinds & {AccessKind.WRITE, AccessKind.READ_WRITE, AccessKind.ATOMIC}:
        return Role.IN
    if (
        kinds & {AccessKind.ATOMIC, AccessKind.READ_WRITE, AccessKind.ADDRESS}
        or {
            AccessKind.READ,
            AccessKind.WRITE,
        }
        <= kinds
    ):
        return Role.INOUT
    if AccessKind.WRITE in kinds:
        return Role.OUT
    if AccessKind.READ in kinds:
        return Role.IN
    return Role.IN if param.is_const else Role.INOUT


def index_buffers(fn: Function) -> set[str]:
    """Return the pointer parameters whose values index other arrays (their range decides what is in bounds)."""
    names = {p.name for p in fn.params if p.is_pointer}
    used: set[str] = set()
    for a in fn.accesses:
        used |= names & set(a.index_names) - {a.base}
    return used


@dataclass(frozen=True, slots=True)
class AnnotationError:
    """A problem in an annotation comment, at a zero-based line and column of the file."""

    message: str
    line: int
    column: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.line + 1}:{self.column + 1}: {self.message}"


@dataclass(frozen=True, slots=True)
class ProblemSpec:
    """A resolved spec: the plain `RunSpec` for the worker plus where it came from."""

    kernel: str
    source: str
    origin: str
    template_args: tuple[str, ...]
    run: RunSpec
    symbols: tuple[tuple[str, int | float], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def name_expression(self) -> str:
        """Return the NVRTC name expression of the kernel (`k` or `k<float, 256>`)."""
        return f"{self.kernel}<{', '.join(self.template_args)}>" if self.template_args else self.kernel

    @property
    def content_hash(self) -> str:
        """Return a hash of everything that decides how the kernels are run and compared."""
        h = hashlib.sha256()
        h.update(self.name_expression.encode())
        h.update(b"\0")
        h.update(self.run.to_json().encode())
        return h.hexdigest()


@dataclass(frozen=True, slots=True)
class SpecMissing:
    """Why no spec could be resolved: what is missing, and an annotation to insert above the kernel."""

    kernel: str
    message: str
    missing: tuple[str, ...] = ()
    annotation: str = ""
    insert_line: int = 0
    errors: tuple[AnnotationError, ...] = field(default_factory=tuple)


def kernel_function(model: FileModel, kernel: str) -> Function | None:
    """Return the kernel called `kernel`."""
    for f in model.kernels:
        if f.name == kernel:
            return f
    return None


EXTENDS = "problem_extends"
"""A problem file that sets `problem_extends = "PATH"` (relative to itself) runs after the problem file at PATH."""
MAX_EXTENDS_DEPTH = 4


class ProblemFileError(ValueError):
    """A problem file that cannot be read: a missing or circular `problem_extends`, or an unreadable file."""


def read_problem(path: str | Path) -> str:
    """Return the text of a problem file as the worker runs it: the problems it extends first, then its own.

    Operators shared by several kernels (the naive suite's kernel and the corpus expert of the same operator) keep
    their inputs, reference and eager baseline in one file; a problem file that names it in `problem_extends` adds
    or overrides only what differs (its kernel, launch, sizes). Later definitions win, as in any Python module, and
    functions of the base read the names they use when they run, so an overridden `SIZES` is the one they see.
    """
    chain: list[Path] = []
    current = Path(path)
    texts: list[str] = []
    while True:
        resolved = current.resolve()
        if resolved in chain:
            raise ProblemFileError(f"{Path(path).name}: `{EXTENDS}` comes back to {current.name} (a cycle)")
        if len(chain) > MAX_EXTENDS_DEPTH:
            raise ProblemFileError(f"{Path(path).name}: more than {MAX_EXTENDS_DEPTH} levels of `{EXTENDS}`")
        chain.append(resolved)
        try:
            text = current.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            where = f" (named by `{EXTENDS}` in {chain[-2].name})" if len(chain) > 1 else ""
            raise ProblemFileError(f"cannot read the problem file {current}{where}: {exc.strerror or exc}") from exc
        texts.append(text)
        base = _problem_extends(text)
        if base is None:
            break
        current = current.parent / base
    if len(texts) == 1:
        return texts[0]
    # `from __future__` imports must open a module: those of an extending file join the ones at the top.
    futures: list[str] = []
    parts = [texts[-1]]
    for file, text in zip(reversed(chain[:-1]), reversed(texts[:-1]), strict=True):
        futures += [f for f in _FUTURE.findall(text) if f not in futures and f not in texts[-1]]
        text = _FUTURE.sub(lambda m: f"# {m.group(0)}  (moved to the top of the combined problem)", text)
        # The base is inlined above: the combined text records what it extended but does not extend it again.
        text = _EXTENDS_LINE.sub(f"{EXTENDED} =", text)
        parts.append(f"\n\n# --- warpwise: {file.name} extends the problem above (`{EXTENDS}`) ---\n{text}")
    return "".join(f"{f}\n" for f in futures) + "".join(parts)


_FUTURE = re.compile(r"^from __future__ import [^\n#]*", re.M)
_EXTENDS_LINE = re.compile(rf"^{EXTENDS}\s*=", re.M)
EXTENDED = "problem_extended"


def _problem_extends(text: str) -> str | None:
    """Return the path a problem file's top-level `problem_extends = "..."` names, without running the file."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == EXTENDS for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    return None


def problem_kernel(text: str) -> str | None:
    """Return the kernel a problem file's text names (its last top-level `kernel = "..."`, as Python would bind)."""
    return _problem_names(text).get("kernel")


def problem_file_for(path: str | Path, kernel: str) -> Path | None:
    """Return the problem file that describes `kernel` of the source at `path`, if one exists."""
    src = Path(path)
    stem = src.name.rsplit(".", 1)[0]
    for cand in (src.with_name(f"{stem}.{kernel}.problem.py"), src.with_name(f"{stem}.problem.py")):
        if not cand.is_file():
            continue
        names = _problem_names(cand.read_text(encoding="utf-8", errors="replace"))
        target = names.get("kernel")
        if target is None or target == kernel:
            return cand
    return None


def problem_tolerance(source: str) -> tuple[float, float] | None:
    """Return a problem file's top-level `tolerance = (rtol, atol)`, or None when it sets none (or not literally)."""
    try:
        tree = ast.parse(source or "")
    except SyntaxError:
        return None
    found = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "tolerance" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if (
                isinstance(value, tuple)
                and len(value) == 2
                and all(isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < float("inf") for v in value)
            ):
                found = (float(value[0]), float(value[1]))
    return found


def problem_tolerances(source: str) -> tuple[tuple[str, float, float], ...]:
    """Return the per-dtype (rtol, atol) a problem file's `tolerance` sets for the gate's comparison.

    It is the problem's own statement of what a correct output is, so it sets float32 (tighter or looser than the
    default); float16 and bfloat16 keep at least their wider defaults (their precision allows no less); float64
    keeps its default.
    """
    from warpwise.verify.types import TOLERANCES

    tol = problem_tolerance(source)
    if tol is None:
        return ()
    rtol, atol = tol
    out = [("f32", rtol, atol)]
    for dtype in ("f16", "bf16"):
        r, a = TOLERANCES[dtype]
        out.append((dtype, max(r, rtol), max(a, atol)))
    return tuple(out)


def _problem_names(text: str) -> dict[str, str | None]:
    """Return the top-level names a problem file defines (and the value of `kernel = "..."`)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    out: dict[str, str | None] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out[node.name] = None
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    val = node.value.value if isinstance(node.value, ast.Constant) else None
                    out[t.id] = str(val) if isinstance(val, str) else ""
        elif isinstance(node, ast.Import | ast.ImportFrom):
            continue
    if "kernel" in out and out["kernel"] == "":
        out.pop("kernel")
    return out


def resolve_spec(
    path: str, text: str | bytes, kernel: str, model: FileModel | None = None
) -> ProblemSpec | SpecMissing:
    """Return how to run `kernel` of the file at `path`, from the first source that describes it."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.verify import annotation, infer

    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    model = model or analyze_text(data, path)
    fn = kernel_function(model, kernel)
    if fn is None:
        names = ", ".join(f"`{k.name}`" for k in model.kernels) or "none"
        return SpecMissing(kernel, f"there is no kernel `{kernel}` in {path} (kernels: {names})")
    problem = problem_file_for(path, kernel)
    ann = annotation.find(model, fn)
    if problem is not None:
        geometry = None
        if ann is not None:
            parsed = annotation.resolve(model, fn, ann)
            geometry = parsed if isinstance(parsed, ProblemSpec) else None
        if geometry is None:
            inferred = infer.infer(model, fn)
            geometry = inferred if isinstance(inferred, ProblemSpec) else None
        return _from_problem_file(problem, model, fn, geometry)
    if ann is not None:
        return annotation.resolve(model, fn, ann)
    return infer.infer(model, fn)


def _from_problem_file(
    problem: Path, model: FileModel, fn: Function, geometry: ProblemSpec | None
) -> ProblemSpec | SpecMissing:
    """Return a spec that runs the problem file's inputs and reference in the worker."""
    from warpwise.verify.types import ArgSpec, BufferSpec, Geometry

    try:
        text = read_problem(problem)
    except ProblemFileError as exc:
        return SpecMissing(fn.name, str(exc), ("problem file",))
    names = _problem_names(text)
    has_launch = "launch" in names or ("grid" in names and "block" in names)
    if not (("make_inputs" in names and "reference" in names) or ("Model" in names and "get_inputs" in names)):
        msg = f"{problem.name} defines neither make_inputs(seed) + reference(inputs) nor Model + get_inputs()"
        return SpecMissing(fn.name, msg, ("make_inputs", "reference"))
    if not has_launch and geometry is None:
        msg = (
            f"{problem.name} gives no launch geometry: define launch(inputs) -> (grid, block[, smem]) or grid and "
            f"block, or annotate the kernel"
        )
        return SpecMissing(fn.name, msg, ("launch geometry",))
    template_args = geometry.template_args if geometry else ()
    bindings = dict(zip([t.name for t in fn.template_params], template_args, strict=False))
    args = []
    buffers = []
    for p in fn.params:
        if p.is_pointer:
            et = element_type(p.base_type, bindings)
            buffers.append(BufferSpec(p.name, et[0] if et else "u8", 0, param_role(fn, p)))
            args.append(ArgSpec(p.name, "pointer", buffer=p.name))
        else:
            ctype = scalar_ctype(p, bindings)
            if ctype is None:
                return SpecMissing(fn.name, f"the gate cannot pass `{p.name}` of type `{p.type}`", (p.name,))
            args.append(ArgSpec(p.name, ctype))
    fallback = geometry.run.original_geometry if geometry else Geometry((1, 1, 1), (1, 1, 1), 0)
    run = RunSpec(
        buffers=tuple(buffers),
        args=tuple(args),
        original_geometry=fallback,
        candidate_geometry=geometry.run.candidate_geometry if geometry else fallback,
        problem_source=text,
        problem_name=str(problem),
        tolerances=problem_tolerances(text),
    )
    return ProblemSpec(fn.name, "problem_file", f"problem file {problem.name}", template_args, run)
