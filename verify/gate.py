"""The verification gate: from (original file, kernel, candidate file) to a cached `VerificationResult`.

`prepare` does the CPU-side work in the caller's process: analyse both files (the candidate is parsed once; the
original arrives analysed when the caller has its model, `Candidate.original_model`), resolve the problem spec
(`warpwise.verify.spec`), check that the candidate's kernel takes the same parameters, work out the candidate's
launch geometry (its own annotation, else its own launch site when that differs from the original's, else the
original's), extract both translation units for NVRTC, and compute the cache key. The result is a plain
`WorkerJob` that any backend can run, or a `spec_missing` / `compile_failed` result that needs no GPU.

`Gate.verify` adds the cache in front of a backend: a hit for the same content hashes, spec, GPU, driver and
compiler returns at once (a result only reported by another machine, never verified here, is run again when
this backend has a GPU); anything else runs and is stored.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warpwise.analyzers.build import analyze_text
from warpwise.analyzers.model import FileModel
from warpwise.analyzers.parse import SourceFile
from warpwise.verify import annotation, infer, torchext
from warpwise.verify.cache import CacheKey, ResultCache, content_hash
from warpwise.verify.extract import DeviceSource, device_source, qualified_name
from warpwise.verify.instances import template_template_inner
from warpwise.verify.project import BuildFlags, flags_for
from warpwise.verify.spec import ProblemSpec, SpecMissing, kernel_function, resolve_spec
from warpwise.verify.types import (
    DeviceIdentity,
    Geometry,
    Options,
    Source,
    Status,
    VerificationResult,
    WorkerJob,
)

if TYPE_CHECKING:
    from warpwise.verify.backends import Backend

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A request to verify: the original file and kernel, and the rewritten file."""

    original_path: str
    original_text: str
    kernel: str
    candidate_text: str
    candidate_path: str = ""
    candidate_kernel: str | None = None
    spec: ProblemSpec | None = None
    original_model: FileModel | None = field(default=None, compare=False, repr=False)
    """The caller's model of `original_text` (server, CLI), so the gate does not parse the original again."""
    flags: BuildFlags | None = None

    @classmethod
    def from_files(cls, original: str, kernel: str, candidate: str, candidate_kernel: str | None = None) -> Candidate:
        """Read both files from disk."""
        return cls(
            original,
            Path(original).read_text(encoding="utf-8", errors="replace"),
            kernel,
            Path(candidate).read_text(encoding="utf-8", errors="replace"),
            candidate,
            candidate_kernel,
        )


@dataclass(frozen=True, slots=True)
class PreparedJob:
    """A job ready for a backend, with its cache key (for any device) and the spec it runs."""

    job: WorkerJob
    key: CacheKey
    spec: ProblemSpec | None
    candidate_geometry_source: str
    spec_missing: SpecMissing | None = None
    flags: BuildFlags | None = None
    missing_headers: tuple[str, ...] = ()
    path: str = ""
    torch_note: str = ""
    parse_errors: tuple[str, ...] = ()
    """Where tree-sitter could not parse the original or its headers (`file:line`): blanking there kept the code."""


def _spec_missing(c: Candidate, missing: SpecMissing, key: str = "") -> VerificationResult:
    """Return the result for a kernel whose problem spec could not be resolved."""
    detail = "; ".join(str(e) for e in missing.errors[:5])
    msg = missing.message + (f" [{detail}]" if detail and detail not in missing.message else "")
    return VerificationResult(
        status=Status.SPEC_MISSING,
        message=msg,
        key=key,
        missing=missing.missing,
        annotation=missing.annotation,
        created=time.time(),
    )


def _name_expression(source: SourceFile, base: int, name: str, template_args: tuple[str, ...]) -> str:
    """Return the NVRTC name expression of a kernel (namespace-qualified, with template arguments)."""
    qualified = qualified_name(source, base, name)
    return f"{qualified}<{', '.join(template_args)}>" if template_args else qualified


def _template_args_without_spec(model: FileModel, kernel: str, include_dirs: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Return template arguments from the launch site or defaults (for compile-only builds without a spec)."""
    found = kernel_instantiations(model.text, model.path, kernel, model, include_dirs)
    return found[0] if found else ()


def kernel_instantiations(
    text: str | bytes, path: str, kernel: str, model: FileModel | None = None, include_dirs: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    """Return the template arguments a file instantiates a kernel with: its launches, with `scalar_t` bound to
    every type of an `AT_DISPATCH_*` around the launch, else the template's defaults (`?` where none).

    `model` is the file's model when the caller has one (it is analysed otherwise); `include_dirs` are the
    project's, where the headers that define its macros are looked up."""
    from warpwise.verify import hostlocals, macroinstances, torchext

    model = model if model is not None else analyze_text(text, path)
    fn = kernel_function(model, kernel)
    if fn is None or not fn.template_params:
        return []
    out: list[tuple[str, ...]] = []
    data = model.text
    for caller, launch in model.launches_of(kernel):
        args = launch.template_values or launch.template_args
        if not args:
            continue
        offset = caller.span(launch.span)[0]
        # Names the host body declares before the launch (`using acc_t = ...`, `const int ILP = ...`) are bound
        # to what they stand for; `scalar_t` to each dtype of an `AT_DISPATCH_*` around the launch.
        env = hostlocals.local_bindings(data, model.tree, offset)
        if "scalar_t" in hostlocals.names_in(hostlocals.bind(args, env)):
            found = torchext.dispatched_types(data, offset, model.tree)
            if found is not None:
                out += [hostlocals.bind(args, {**env, "scalar_t": t}) for t in found[1]]
                continue
        args = list(hostlocals.bind(args, env))
        outer = enclosing_template_params(data, offset, model.tree)
        if not all(_names_file_scope(a, model) for a in args):
            # The project's own dispatch macro around the launch: one instance per case it declares.
            macros = _project_macros(model, include_dirs)
            host = model.function_at(offset)
            lower = host.base if host is not None else 0
            text_s = data.decode("utf-8", "surrogateescape")
            # Offsets are bytes; the text is searched as characters (the same for ASCII host code).
            cases = macroinstances.dispatch_bindings(text_s, offset, lower, macros) if macros else None
            bound = [hostlocals.bind(args, case) for case in cases or []]
            good = [b for b in bound if all(_names_file_scope(a, model) for a in b)]
            if good and not any(hostlocals.names_in(b) & outer for b in good):
                out += good
                continue
        # A launch inside a template host function passes that template's parameters, and one in a host body may
        # pass its other local names: neither is known at file scope.
        out.append(
            tuple("?" if hostlocals.names_in([a]) & outer or not _file_scope_name(a, model) else a for a in args)
        )
    known = [a for a in out if "?" not in a]
    if not known:
        known = [a for a in _instantiations_from_includers(path, kernel) if "?" not in a]
    if not known:
        from warpwise.verify import instances

        known = [a for a in instances.instantiations(model, kernel) if all(_names_file_scope(x, model) for x in a)]
    if not known:
        macros = _project_macros(model, include_dirs)
        table = macroinstances.table_instances(data.decode("utf-8", "surrogateescape"), kernel, macros)
        known = [a for a in table if "?" not in a and all(_names_project_scope(x, model) for x in a)]
    if not known:
        from warpwise.verify import includers

        known = includers.instances_from_includers(path, data.decode("utf-8", "surrogateescape"), kernel)[0]
    if known:
        return list(dict.fromkeys(known))
    if out:
        return list(dict.fromkeys(out))
    return [tuple(t.default or "?" for t in fn.template_params)]


def _names_project_scope(arg: str, model: FileModel) -> bool:
    """Return whether every name of a template argument means something at the scope of the file or its headers."""
    import re

    from warpwise.verify import instances

    names = [m.group(1) for m in re.finditer(r"(?<![\w:])([A-Za-z_]\w*)\b(?!\s*::)", arg)]
    missing = [n for n in names if not _file_scope_name(n, model)]
    if not missing:
        return True
    headers = "\n".join(instances._File(model)._local_headers(()))
    return all(re.search(rf"\b(?:struct|class|typedef[^;]*|using|enum(?:\s+class)?)\s+{n}\b", headers) for n in missing)


def _project_macros(model: FileModel, include_dirs: tuple[str, ...] = ()) -> dict[str, tuple[list[str], str]]:
    """Return the function-like macros of a file and of the local headers it includes."""
    from warpwise.verify import instances

    return instances._File(model, include_dirs).macros


_BUILTIN_TYPES = frozenset(
    {"float", "double", "int", "unsigned", "char", "short", "long", "bool", "half", "true", "false", "void"}
    | {"int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t"}
    | {"__half", "__nv_bfloat16", "nv_bfloat16", "half2", "__half2", "float2", "float4", "int2", "int4", "uint4"}
)


_OPERATOR_WORDS = frozenset({"sizeof", "alignof", "static_cast", "const", "unsigned", "signed"})
"""Words of a template argument that are C++ operators or qualifiers, not names (`sizeof(float4) / sizeof(T)`)."""


def _file_scope_name(arg: str, model: object) -> bool:
    """Return whether a template argument means something at file scope (not a host function's local name)."""
    import re

    from warpwise.analyzers.model import FileModel

    assert isinstance(model, FileModel)
    a = arg.strip()
    if not re.fullmatch(r"[A-Za-z_]\w*", a) or a in _BUILTIN_TYPES or a in model.constants:
        return True
    text = model.text
    pattern = (
        rb"(?:struct|class|typedef[^;]*|using(?:\s+\w+\s*::)*|enum(?:\s+class)?)\s*" + re.escape(a.encode()) + rb"\b"
    )
    for m in re.finditer(pattern, text):
        fn = model.function_at(m.start())
        if fn is None or fn.is_kernel:
            return True
    return bool(re.search(rb"#\s*define\s+" + re.escape(a.encode()) + rb"\b", text))


def _names_file_scope(arg: str, model: object) -> bool:
    """Return whether every unqualified name in a template argument means something at file scope."""
    import re

    names = re.finditer(r"(?<![\w:])([A-Za-z_]\w*)\b(?!\s*::)", arg)
    return all(m.group(1) in _OPERATOR_WORDS or _file_scope_name(m.group(1), model) for m in names)


def enclosing_template_params(data: bytes, offset: int, tree: Any = None) -> set[str]:
    """Return the names of the template parameters of the templates around a byte offset."""
    from warpwise.analyzers.parse import SourceFile

    node = (tree if tree is not None else SourceFile.parse(data).tree).root_node.descendant_for_byte_range(
        offset, offset
    )
    names: set[str] = set()
    while node is not None:
        if node.type == "template_declaration":
            params = node.child_by_field_name("parameters")
            for p in params.named_children if params is not None else []:
                p = template_template_inner(p)
                ident = [c for c in p.named_children if c.type in ("type_identifier", "identifier")]
                if ident:
                    names.add(data[ident[-1].start_byte : ident[-1].end_byte].decode("utf-8", "replace"))
        node = node.parent
    return names


_HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hxx", ".inl")
_MAX_INCLUDERS = 64


def _instantiations_from_includers(path: str, kernel: str) -> list[tuple[str, ...]]:
    """Return the template arguments the files that include a header launch its kernel with.

    A template kernel defined in a `.cuh` is instantiated by the `.cu` files that include it; the files of the
    header's folder and its parent are read (at most a few dozen), those that include it by name are analysed.
    """
    import re

    header = Path(path)
    if header.suffix not in _HEADER_SUFFIXES or not header.is_file():
        return []
    pattern = re.compile(rb'#\s*include\s*[<"](?:[^>"]*/)?' + re.escape(header.name.encode()) + rb'[>"]')
    seen = 0
    out: list[tuple[str, ...]] = []
    for folder in dict.fromkeys((header.parent, header.parent.parent)):
        try:
            files = sorted(f for f in folder.iterdir() if f.suffix in (".cu", *_HEADER_SUFFIXES) and f != header)
        except OSError:
            continue
        for f in files:
            if seen >= _MAX_INCLUDERS:
                return out
            seen += 1
            try:
                data = f.read_bytes()
            except OSError:
                continue
            if not pattern.search(data) or kernel.encode() not in data:
                continue
            model = analyze_text(data, str(f))
            for caller, launch in model.launches_of(kernel):
                args = launch.template_values or launch.template_args
                if not args:
                    continue
                if "scalar_t" in args:
                    found = torchext.dispatched_types(model.text, caller.span(launch.span)[0], model.tree)
                    if found is not None:
                        out += [tuple(t if a == "scalar_t" else a for a in args) for t in found[1]]
                        continue
                # A launch inside a host template passes that template's parameters: no instance by itself.
                outer = enclosing_template_params(model.text, caller.span(launch.span)[0], model.tree)
                if "?" not in args and not any(re.search(rf"\b{re.escape(n)}\b", a) for a in args for n in outer):
                    out.append(tuple(args))
    return out


def _original_model(c: Candidate) -> FileModel:
    """Return the caller's model of the original when it is of exactly this text, else analyse the text."""
    data = c.original_text.encode("utf-8", "surrogatepass")
    if c.original_model is not None and c.original_model.text == data:
        return c.original_model
    return analyze_text(data, c.original_path)


def prepare(c: Candidate, options: Options | None = None) -> PreparedJob | VerificationResult:
    """Resolve the spec and build the worker job for a candidate, or return why it cannot run."""
    options = options or Options()
    if c.original_path.endswith(".py"):
        c = _embedded(c)
    model_o = _original_model(c)
    fn_o = kernel_function(model_o, c.kernel)
    if fn_o is None:
        names = ", ".join(f"`{k.name}`" for k in model_o.kernels) or "none"
        return VerificationResult(
            status=Status.SPEC_MISSING,
            message=f"there is no kernel `{c.kernel}` in {c.original_path} (kernels: {names})",
            created=time.time(),
        )
    cand_name = c.candidate_kernel or c.kernel
    cand_path = c.candidate_path or c.original_path
    model_c = analyze_text(c.candidate_text, cand_path)
    fn_c = kernel_function(model_c, cand_name)
    if fn_c is None:
        return VerificationResult(
            status=Status.COMPILE_FAILED,
            message=f"the candidate has no kernel `{cand_name}`",
            created=time.time(),
        )
    spec_or_missing = c.spec or resolve_spec(c.original_path, c.original_text, c.kernel, model_o)
    spec: ProblemSpec | None = spec_or_missing if isinstance(spec_or_missing, ProblemSpec) else None
    if spec is None and not options.compile_only:
        assert isinstance(spec_or_missing, SpecMissing)
        return _spec_missing(c, spec_or_missing)
    if len(fn_c.params) != len(fn_o.params) or any(
        a.is_pointer != b.is_pointer for a, b in zip(fn_o.params, fn_c.params, strict=False)
    ):
        sig_o = ", ".join(p.type for p in fn_o.params)
        sig_c = ", ".join(p.type for p in fn_c.params)
        return VerificationResult(
            status=Status.SPEC_MISSING,
            message=f"the candidate `{cand_name}({sig_c})` does not take the parameters of `{c.kernel}({sig_o})`",
            created=time.time(),
        )
    flags = c.flags if c.flags is not None else flags_for(c.original_path)
    template_args = spec.template_args if spec else _template_args_without_spec(model_o, c.kernel, flags.include_dirs)
    geom_source = "the original's"
    run = spec.run if spec else None
    if spec is not None and run is not None and spec.source != "problem_file":
        geom, geom_source = _candidate_geometry(c, spec, model_o, model_c, cand_name)
        run = replace(run, candidate_geometry=geom)
    name_o = _name_expression(model_o.source, fn_o.base, c.kernel, template_args)
    name_c = _name_expression(model_c.source, fn_c.base, cand_name, template_args)
    dev_o = device_source(
        model_o.source,
        Path(c.original_path).name or "original.cu",
        path=c.original_path,
        user_include_dirs=flags.include_dirs,
    )
    # The candidate is a rewrite of the original: its includes are the original's folder's.
    dev_c = device_source(
        model_c.source,
        Path(cand_path).name or "candidate.cu",
        path=c.original_path,
        user_include_dirs=flags.include_dirs,
    )
    host_origin = ""
    if "?" in name_o:
        # A header's template kernel that nothing in the header instantiates: nvcc builds the header followed by
        # a file that includes it (its instantiations, often written through the project's macros, come along).
        completed = _with_includer(c, model_c.source, flags)
        if completed is not None:
            dev_o = replace(dev_o, host_text=completed[0])
            dev_c = replace(dev_c, host_text=completed[1])
            host_origin = completed[2]
    torch_note = ""
    if torchext.includes_torch(dev_o.dropped_includes) and not _has_torch(flags):
        extra = torchext.torch_flags()
        if isinstance(extra, BuildFlags):
            flags = flags.merged(extra)
        else:
            torch_note = f"{Path(c.original_path).name} includes torch's headers: {extra}"
    spec_hash = hashlib.sha256(
        "\0".join(
            [
                run.to_json() if run else "no spec",
                name_o,
                name_c,
                ",".join(map(str, options.seeds)),
                f"sanitizer={options.sanitizer}",
                f"profile={options.profile}",
                options.arch or "",
                *([f"tolerance={options.tolerance}"] if options.tolerance is not None else []),
                *([f"stop_below={options.stop_below!r}"] if options.stop_below is not None else []),
                " ".join(flags.common_options() + flags.nvrtc_flags + flags.nvcc_flags),
                dev_o.text,
                dev_c.text,
            ]
        ).encode()
    ).hexdigest()
    key = CacheKey(content_hash(c.original_text), content_hash(c.candidate_text), spec_hash, "", "", "")
    pair_key = hashlib.sha256(f"{key.original_hash}{key.candidate_hash}{spec_hash}".encode()).hexdigest()
    job = WorkerJob(
        job_id=uuid.uuid4().hex[:12],
        key=pair_key,
        original=_source(dev_o, name_o, Path(c.original_path).name or "original.cu", flags, host_origin),
        candidate=_source(dev_c, name_c, Path(cand_path).name or "candidate.cu", flags, host_origin),
        spec=run,
        options=options if options.arch or not flags.arch else replace(options, arch=flags.arch),
    )
    missing = spec_or_missing if isinstance(spec_or_missing, SpecMissing) else None
    headers = tuple(dict.fromkeys(dev_o.missing_headers + dev_c.missing_headers))
    return PreparedJob(
        job, key, spec, geom_source, missing, flags, headers, c.original_path, torch_note, dev_o.parse_errors
    )


def _has_torch(flags: BuildFlags) -> bool:
    """Return whether the flags already name torch's include folder."""
    return any((Path(d) / "torch" / "extension.h").is_file() for d in flags.include_dirs)


def _embedded(c: Candidate) -> Candidate:
    """Return a candidate from a Python file as its `load_inline` CUDA strings (offsets kept)."""
    from warpwise.analyzers.embedded import mask_python

    def cuda(text: str) -> str:
        data = text.encode("utf-8", "surrogatepass")
        masked = mask_python(data)
        return masked.decode("utf-8", "replace") if masked is not None else text

    return replace(c, original_text=cuda(c.original_text), candidate_text=cuda(c.candidate_text))


def _source(dev: DeviceSource, name: str, filename: str, flags: BuildFlags, host_origin: str = "") -> Source:
    """Return the worker's build input: the device code, the whole file for nvcc, and the project's flags."""
    return Source(
        dev.text,
        name,
        filename,
        flags=flags.common_options(),
        nvrtc_flags=flags.nvrtc_flags,
        nvcc_flags=flags.nvcc_flags,
        host_text=dev.host_text,
        host_origin=host_origin,
    )


def _with_includer(c: Candidate, candidate_source: Any, flags: BuildFlags) -> tuple[str, str, str] | None:
    """Return the original's and the candidate's host text completed by a file that includes the header, and
    that file's name, or None when the file is no header or nothing next to it includes it.

    One walk reads the includer with the header's text where it includes it (as the preprocessor does), so a
    header both include (`#pragma once`) is inlined once; the includer's folder is searched for its own quoted
    includes. A header that only a host-template header includes is completed by that header, then by a `.cu` file
    including it.
    """
    from warpwise.verify import includers

    header = Path(c.original_path)
    if header.suffix not in _HEADER_SUFFIXES or not header.is_file():
        return None
    chain = includers.includer_chain(header)
    if not chain:
        return None
    texts = []
    for f in chain:
        try:
            texts.append(f.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None
    dirs = (*flags.include_dirs, *dict.fromkeys(str(f.parent) for f in chain))

    def host(header_text: str) -> str:
        # The header's text stands where the includer includes it; then the next file of the chain around that.
        whole, inner = header_text, header.name
        for f, t in zip(chain, texts, strict=True):
            whole, inner = includers.inlined(t, inner, whole), f.name
        return device_source(whole, header.name, path=c.original_path, user_include_dirs=dirs).host_text

    hosts = [host(c.original_text), host(candidate_source.text.decode("utf-8", "surrogateescape"))]
    through = f" (through `{chain[0].name}`)" if len(chain) > 1 else ""
    return hosts[0], hosts[1], f"`{chain[-1].name}`{through}"


def finish(prepared: PreparedJob, result: VerificationResult) -> VerificationResult:
    """Return a worker's result completed with what only the caller knows (missing headers, a missing spec)."""
    if result.status is Status.COMPILE_FAILED and prepared.torch_note:
        result = result.with_(message=f"{prepared.torch_note}. {result.message}")
    if result.status is Status.COMPILE_FAILED and prepared.missing_headers:
        from warpwise.verify.extract import missing_hint
        from warpwise.verify.worker.nvbuild import cuda_include_dirs

        hints = [h for h in (missing_hint(n, cuda_include_dirs()) for n in prepared.missing_headers) if h]
        names = ", ".join(f"`{h}`" for h in prepared.missing_headers if not missing_hint(h, []))
        parts = [*hints]
        if names:
            parts.append(
                f"{names} included by {prepared.path} was not found in its folder or the include folders; add its "
                "folder with -I or `include-dirs` in [tool.warpwise]"
            )
        return result.with_(message=f"{'; '.join(parts)}. {result.message}")
    if result.status is Status.NO_GPU and prepared.spec_missing is not None:
        m = prepared.spec_missing
        built = result.message.split(";", 1)[0]
        msg = f"{built}; no run spec: {m.message}"
        return result.with_(status=Status.SPEC_MISSING, message=msg, missing=m.missing, annotation=m.annotation)
    return result


def _candidate_geometry(
    c: Candidate, spec: ProblemSpec, model_o: FileModel, model_c: FileModel, cand_name: str
) -> tuple[Geometry, str]:
    """Return the candidate's launch geometry and where it came from."""
    fn_c = kernel_function(model_c, cand_name)
    assert fn_c is not None
    ann = annotation.find(model_c, fn_c)
    if ann is not None:
        parsed = annotation.resolve(model_c, fn_c, ann)
        if isinstance(parsed, ProblemSpec):
            return parsed.run.original_geometry, "the candidate's annotation"
    cand_launch = infer.infer_geometry(model_c, cand_name)
    orig_launch = infer.infer_geometry(model_o, c.kernel)
    if cand_launch is not None and (orig_launch is None or cand_launch[1] != orig_launch[1]):
        return cand_launch[0], f"the candidate's launch {cand_launch[1]}"
    return spec.run.original_geometry, "the original's"


class Gate:
    """A backend with the result cache in front of it."""

    def __init__(self, backend: Backend, cache: ResultCache | None = None) -> None:
        self.backend = backend
        self.cache = cache

    def lookup(self, prepared: PreparedJob) -> VerificationResult | None:
        """Return a cached result for this job on this backend's device (any device when it is not known)."""
        if self.cache is None:
            return None
        identity: DeviceIdentity | None = self.backend.identity()
        if identity is not None:
            hit = self.cache.get(prepared.key.on(identity))
            # A result reported by another machine is measured again when this backend can measure it.
            if hit is not None and hit.status is Status.REPORTED and not identity.compile_only:
                return None
            return finish(prepared, hit) if hit is not None else None
        found = self.cache.find(prepared.key.original_hash, prepared.key.candidate_hash, prepared.key.spec_hash)
        # Without a known device (a cluster) a result that is only reported is measured again too.
        return finish(prepared, found[0]) if found and found[0].status is not Status.REPORTED else None

    def run(self, prepared: PreparedJob, progress: Progress | None = None) -> VerificationResult:
        """Run a prepared job (no cache lookup) and store its result."""
        result = self.backend.run(prepared.job, progress)
        if self.cache is not None and result.device is not None:
            self.cache.put(prepared.key.on(result.device), result)
        return finish(prepared, result)

    def verify(
        self, candidate: Candidate, options: Options | None = None, progress: Progress | None = None
    ) -> VerificationResult:
        """Verify a candidate: cached result when there is one, else build, check and time it."""
        t0 = time.perf_counter()
        prepared = prepare(candidate, options)
        if isinstance(prepared, VerificationResult):
            return prepared
        hit = self.lookup(prepared)
        if hit is not None:
            return hit.with_(message=hit.message, cached=True, durations=replace(hit.durations))
        result = self.run(prepared, progress)
        return result.with_(durations=replace(result.durations, total_s=time.perf_counter() - t0))
