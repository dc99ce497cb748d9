"""Template kernels of a header, instantiated by the files that include it.

A `.cuh` often defines a template kernel and the host template that launches it, and leaves the instantiation to
the `.cu` files that include it (`template void fwd_cuda<float, float>(Params&, cudaStream_t);`, one file per
dtype so the build runs in parallel). Read alone, the header names no instance, so NVRTC has nothing to build.

`instances_from_includers` finds the files next to the header (its folder and the parent folder) that include it
by name, and analyses each one as nvcc compiles it: the header's text followed by the includer's (its `#include`
of the header blanked), so the includer's explicit instantiations and calls bind the header's host templates.
The instances kept are those whose template arguments mean something in the header alone (its own traits types,
numbers, builtin types), so the header itself builds them; `origin` says which file gave them.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

_HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hxx", ".inl")
_MAX_SCANNED = 64
_MAX_ANALYSED = 4
_MAX_INSTANCES = 8


def _includers(header: Path) -> list[Path]:
    """Return the `.cu` files of the header's folder and its parent that include it by name."""
    pattern = re.compile(rb'#\s*include\s*[<"](?:[^>"]*/)?' + re.escape(header.name.encode()) + rb'[>"]')
    out: list[Path] = []
    scanned = 0
    for folder in dict.fromkeys((header.parent, header.parent.parent)):
        try:
            files = sorted(f for f in folder.iterdir() if f.suffix == ".cu")
        except OSError:
            continue
        for f in files:
            if scanned >= _MAX_SCANNED:
                return out
            scanned += 1
            try:
                if pattern.search(f.read_bytes()):
                    out.append(f)
            except OSError:
                continue
    return out


def includer_files(header: Path) -> list[Path]:
    """Return the `.cu` files next to a header that include it (its folder, then the parent folder)."""
    return _includers(header)


def includer_chain(header: Path) -> list[Path]:
    """Return the files from a header to a `.cu` that includes it: `[x.cu]`, or `[h.cuh, x.cu]` when the header is
    included only by another header of its folder (a host template) that a `.cu` file includes; [] when none."""
    direct = _includers(header)
    if direct:
        return direct[:1]
    pattern = re.compile(rb'#\s*include\s*[<"](?:[^>"]*/)?' + re.escape(header.name.encode()) + rb'[>"]')
    try:
        siblings = sorted(f for f in header.parent.iterdir() if f.suffix in _HEADER_SUFFIXES and f != header)
    except OSError:
        return []
    for h in siblings[:_MAX_SCANNED]:
        try:
            if not pattern.search(h.read_bytes()):
                continue
        except OSError:
            continue
        outer = _includers(h)
        if outer:
            return [h, outer[0]]
    return []


def without_include(text: str, name: str) -> str:
    """Return an includer's text with its `#include` of the header blanked."""
    return _without_include(text, name)


def inlined(text: str, name: str, header_text: str) -> str:
    """Return an includer's text with its first `#include` of the header replaced by the header's text (what the
    preprocessor does), so what the includer includes before it comes first; appended when there is none."""
    pattern = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:[^>"\n]*/)?' + re.escape(name) + r'[>"]', re.M)
    m = pattern.search(text)
    if m is None:
        return f"{header_text}\n{text}"
    return f"{text[: m.start()]}{header_text}\n{_without_include(text[m.end() :], name)}"


def _without_include(text: str, name: str) -> str:
    """Return an includer's text with its `#include` of the header blanked (the header's text comes first)."""
    pattern = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:[^>"\n]*/)?' + re.escape(name) + r'[>"]', re.M)
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def instances_from_includers(path: str, text: str, kernel: str) -> tuple[list[tuple[str, ...]], str]:
    """Return the instances of a header's template kernel its includers make (header-scope names only) and the
    includer that gave them ("" when none did)."""
    header = Path(path)
    if header.suffix not in _HEADER_SUFFIXES or not header.is_file():
        return [], ""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return _cached(str(header.resolve()), digest, text, kernel)


@functools.lru_cache(maxsize=64)
def _cached(path: str, digest: str, text: str, kernel: str) -> tuple[list[tuple[str, ...]], str]:
    """Return `instances_from_includers` for one header text (cached: every build of the kernel asks again)."""
    from warpwise.analyzers.build import analyze_text
    from warpwise.verify.gate import _names_file_scope, kernel_instantiations

    header = Path(path)
    header_model = analyze_text(text, path)
    for includer in _includers(header)[:_MAX_ANALYSED]:
        try:
            other = includer.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        combined = f"{text}\n{_without_include(other, header.name)}"
        found = kernel_instantiations(combined, str(includer), kernel)
        good = [a for a in found if "?" not in a and all(_names_file_scope(x, header_model) for x in a)]
        if good:
            return list(dict.fromkeys(good))[:_MAX_INSTANCES], str(includer)
    return [], ""


def origin(path: str, text: str, kernel: str) -> str:
    """Return the file whose instantiations gave a header kernel's template arguments, or ""."""
    return instances_from_includers(path, text, kernel)[1]
