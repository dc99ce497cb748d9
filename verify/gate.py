"""The verification gate: from (original file, kernel, candidate file) to a cached `VerificationResult`.

`prepare` does the CPU-side work in the caller's process: analyse both files, resolve the problem spec
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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from warpwise.analyzers.build import analyze_text
from warpwise.verify import annotation, infer
from warpwise.verify.cache import CacheKey, ResultCache, content_hash
from warpwise.verify.extract import device_source, qualified_name
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


def _name_expression(text: str, base: int, name: str, template_args: tuple[str, ...]) -> str:
    """Return the NVRTC name expression of a kernel (namespace-qualified, with template arguments)."""
    qualified = qualified_name(text, base, name)
    return f"{qualified}<{', '.join(template_args)}>" if template_args else qualified


def _template_args_without_spec(text: str, path: str, kernel: str) -> tuple[str, ...]:
    """Return template arguments from the launch site or defaults (for compile-only builds without a spec)."""
    model = analyze_text(text, path)
    fn = kernel_function(model, kernel)
    if fn is None or not fn.template_params:
        return ()
    launches = model.launches_of(kernel)
    if launches and (launches[0][1].template_values or launches[0][1].template_args):
        return launches[0][1].template_values or launches[0][1].template_args
    return tuple(t.default or "?" for t in fn.template_params)


def prepare(c: Candidate, options: Options | None = None) -> PreparedJob | VerificationResult:
    """Resolve the spec and build the worker job for a candidate, or return why it cannot run."""
    options = options or Options()
    model_o = analyze_text(c.original_text, c.original_path)
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
    template_args = (
        spec.template_args if spec else _template_args_without_spec(c.original_text, c.original_path, c.kernel)
    )
    geom_source = "the original's"
    run = spec.run if spec else None
    if spec is not None and run is not None and spec.source != "problem_file":
        geom, geom_source = _candidate_geometry(c, spec, model_o, model_c, cand_name)
        run = replace(run, candidate_geometry=geom)
    name_o = _name_expression(c.original_text, fn_o.base, c.kernel, template_args)
    name_c = _name_expression(c.candidate_text, fn_c.base, cand_name, template_args)
    src_o = device_source(c.original_text, Path(c.original_path).name or "original.cu")
    src_c = device_source(c.candidate_text, Path(cand_path).name or "candidate.cu")
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
            ]
        ).encode()
    ).hexdigest()
    key = CacheKey(content_hash(c.original_text), content_hash(c.candidate_text), spec_hash, "", "", "")
    pair_key = hashlib.sha256(f"{key.original_hash}{key.candidate_hash}{spec_hash}".encode()).hexdigest()
    job = WorkerJob(
        job_id=uuid.uuid4().hex[:12],
        key=pair_key,
        original=Source(src_o.text, name_o, Path(c.original_path).name or "original.cu"),
        candidate=Source(src_c.text, name_c, Path(cand_path).name or "candidate.cu"),
        spec=run,
        options=options,
    )
    return PreparedJob(job, key, spec, geom_source)


def _candidate_geometry(
    c: Candidate, spec: ProblemSpec, model_o: object, model_c: object, cand_name: str
) -> tuple[Geometry, str]:
    """Return the candidate's launch geometry and where it came from."""
    from warpwise.analyzers.model import FileModel

    assert isinstance(model_o, FileModel) and isinstance(model_c, FileModel)
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
            return hit
        found = self.cache.find(prepared.key.original_hash, prepared.key.candidate_hash, prepared.key.spec_hash)
        # Without a known device (a cluster) a result that is only reported is measured again too.
        return found[0] if found and found[0].status is not Status.REPORTED else None

    def run(self, prepared: PreparedJob, progress: Progress | None = None) -> VerificationResult:
        """Run a prepared job (no cache lookup) and store its result."""
        result = self.backend.run(prepared.job, progress)
        if self.cache is not None and result.device is not None:
            self.cache.put(prepared.key.on(result.device), result)
        return result

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
