"""The rule cache: a keystroke re-checks only the function it touched, and every answer equals a fresh check."""

from __future__ import annotations

from pathlib import Path

import pytest

from warpwise.analyzers.build import analyze_document, analyze_text
from warpwise.analyzers.findings import RuleCache, check_model
from warpwise.analyzers.model import FunctionKind
from warpwise.analyzers.parse import CudaDocument

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "bench" / "suite").rglob("*.cu"))[:12] + sorted((ROOT / "examples").rglob("*.cu"))


def _full(findings):  # type: ignore[no-untyped-def]
    return [(f, f.data) for f in findings]


def _edits(text: str) -> list[str]:
    """Return texts after edits of each kind: a shift, a kernel's body, a file-level #define, a launch, a host body."""
    model = analyze_text(text)
    kernels = [f for f in model.functions if f.kind is FunctionKind.KERNEL]
    hosts = [f for f in model.functions if f.kind is FunctionKind.HOST]
    out = ["// a comment that moves everything\n\n" + text]
    if kernels:
        k = kernels[0]
        body = text.encode()
        at = body.index(b"{", k.base) + 1
        out.append((body[:at] + b"\n  int ww_unused = threadIdx.x * 2;\n" + body[at:]).decode())
        at = body.find(b"threadIdx.x", k.base, k.base + k.length)
        if at >= 0:
            out.append((body[:at] + b"threadIdx.y" + body[at + len(b"threadIdx.x") :]).decode())
    out.append("#define WW_EXTRA_WIDTH 8\n" + text)
    if hosts:
        h = hosts[0]
        body = text.encode()
        at = body.index(b"{", h.base) + 1
        out.append((body[:at] + b"\n  int ww_host_only = 1;\n" + body[at:]).decode())
    at = text.find("<<<")
    if at >= 0:
        args = text.find(">>>(", at)
        if args >= 0:
            out.append(text[: args + 4] + "nullptr, " + text[args + 4 :])
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_cached_findings_equal_a_fresh_check_after_every_kind_of_edit(path: Path) -> None:
    text = path.read_text()
    doc = CudaDocument(str(path), text)
    cache = RuleCache()
    assert _full(cache.check_model(analyze_document(doc))) == _full(check_model(analyze_text(text, str(path))))
    for edited in [*_edits(text), text]:
        doc.replace(edited)
        model = analyze_document(doc)
        got = cache.check_model(model)
        assert _full(got) == _full(check_model(analyze_text(edited, str(path)))), edited[:200]


def test_a_keystroke_in_one_kernel_checks_that_kernel_only() -> None:
    kernel = (
        "__global__ void k{i}(const float* a, float* b, int n) {{ int t = threadIdx.x; b[t * {s}] = a[t * {s}]; }}\n"
    )
    text = "".join(kernel.format(i=i, s=i + 2) for i in range(5))
    doc = CudaDocument("k.cu", text)
    cache = RuleCache()
    first = cache.check_model(analyze_document(doc))
    assert any(f.rule == "uncoalesced-global-access" for f in first)
    misses = cache.misses
    doc.replace(text.replace("t * 4]", "t * 6]"))
    second = cache.check_model(analyze_document(doc))
    assert cache.misses == misses + 1 and cache.hits == 4
    assert _full(second) == _full(check_model(analyze_text(doc.data)))


def test_a_message_that_names_a_line_follows_an_edit_that_adds_lines() -> None:
    above = "__global__ void z(float* b) {\n  b[threadIdx.x] = 0.0f;\n}\n"
    text = above + (
        "__global__ void k(float* a, int n) {\n  int t = threadIdx.x;\n  if (t >= n) return;\n"
        "  a[t] = 1.0f;\n  __syncthreads();\n  a[t] += a[(t + 1) % n];\n}\n"
    )
    doc = CudaDocument("k.cu", text)
    cache = RuleCache()
    first = cache.check_model(analyze_document(doc))
    assert any("line 8" in f.message for f in first), [f.message for f in first]
    # A line added inside the kernel above: `k` keeps its text and the text outside the functions is unchanged.
    doc.replace(text.replace("  b[threadIdx.x] = 0.0f;\n", "  b[threadIdx.x] = 0.0f;\n  b[0] = 1.0f;\n", 1))
    second = cache.check_model(analyze_document(doc))
    assert any("line 9" in f.message for f in second), [f.message for f in second]
    assert _full(second) == _full(check_model(analyze_text(doc.data)))
