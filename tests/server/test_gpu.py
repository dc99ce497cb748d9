"""On a GPU: candidate rewrites verified through the gate, quick-fix titles and diagnostics from the results,
GPU profiles on save. Skipped (with the reason) where no NVIDIA GPU is visible."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from tests.conftest import ROOT
from tests.server.conftest import KERNELS, PINNED, Session, apply_edit

pytestmark = pytest.mark.gpu


async def test_verify_kernel_on_the_gpu_and_show_the_result(sessions) -> None:
    s: Session = await sessions("visual-studio-code", PINNED)
    status = await s.status(lambda p: p["gpu"]["detail"] != "looking for a GPU")
    assert status["gpu"]["found"] and status["backend"] == "local", status
    assert status["verification"]["available"], status
    uri = s.open(KERNELS)
    await s.static(uri)
    result = await s.command("warpwise.verifyKernel", {"uri": uri, "kernel": "taps"})
    print("verifyKernel:", result)
    assert result["status"] in ("verified", "not_verified"), result
    params = await s.pushed(uri, lambda p: any(str(d.code).startswith("verification-") for d in p.diagnostics))
    (verdict,) = [d for d in params.diagnostics if str(d.code).startswith("verification-")]
    print("verification diagnostic:", verdict.code, verdict.message)
    fixes = [
        a
        for a in await s.actions(uri, 7)
        if a.kind == types.CodeActionKind.QuickFix and not a.title.startswith("Suppress ")
    ]
    if verdict.code == "verification-verified":
        assert "verified" in verdict.message and "NVIDIA" in verdict.message
        assert fixes and "— verified " in fixes[0].title and " on NVIDIA" in fixes[0].title
        assert fixes[0].is_preferred, "a safe fix measured faster is preferred"
    else:
        assert not fixes, "a fix that failed verification is not offered"
    hover = await s.hover(uri, 7, 6)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    print("hover:", [ln for ln in hover.contents.value.splitlines() if "Verification" in ln])


async def test_save_profiles_kernels_on_the_gpu(sessions) -> None:
    s: Session = await sessions("visual-studio-code", PINNED)
    await s.status(lambda p: p["gpu"]["found"])
    uri = s.open(KERNELS)
    await s.static(uri)
    s.save(uri)

    def profiled() -> types.PublishDiagnosticsParams | None:
        for p in reversed(s.recorder.diagnostics):
            if p.uri == uri and any(d.code == "gpu-profile" for d in p.diagnostics):
                return p
        return None

    params = await s.recorder.wait(profiled, timeout=400)
    profiles = {d.range.start.line: d.message for d in params.diagnostics if d.code == "gpu-profile"}
    print("gpu profiles:", profiles)
    assert 14 in profiles and "ms median" in profiles[14] and "NVIDIA" in profiles[14]
    hover = await s.hover(uri, 14, 18)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "ms median" in hover.contents.value
    lenses = await s.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses or [] if lens.command and lens.range.start.line == 14]
    print("code lenses:", titles)
    assert any(" ms on NVIDIA" in t for t in titles)


async def test_optimize_kernel_on_the_gpu(sessions) -> None:
    # The naive sum of the suite (problem file beside it): one atomic per thread into one address, which the
    # committed search comparison sped up about 10x on an H200; the search must find and verify a faster version.
    s: Session = await sessions("visual-studio-code", PINNED)
    await s.status(lambda p: p["gpu"]["found"])
    path = ROOT / "bench" / "suite" / "sum" / "naive.cu"
    uri = s.open(path)
    await s.static(uri)
    args = {"uri": uri, "kernel": "sum_naive", "candidates": 6, "budgetSeconds": 60}
    result = await s.command("warpwise.optimizeKernel", args, token="optimize-gpu")
    print("optimizeKernel:", {k: v for k, v in result.items() if k not in ("markdown", "edit")})
    md = result["markdown"]
    print(md[:600])
    assert md.startswith("# Optimize `sum_naive` (naive.cu)") and "(gpu on NVIDIA" in md
    assert result["status"] == "verified" and result["ok"], result["message"]
    # Only the gate's verdict makes a speedup: the best version beat the start by more than the measured spread.
    assert result["speedup"] > 1.0 and "verified" in result["message"]
    assert "## Proposed edit" in md and "```diff" in md
    edit = default_converter().structure(result["edit"], types.WorkspaceEdit)
    uris = [c.text_document.uri for c in edit.document_changes or [] if isinstance(c, types.TextDocumentEdit)]
    assert uris and uris[0] == uri and set(uris) <= {uri, path.with_suffix(".problem.py").as_uri()}
    # The kernel's own edit; a path that changed the launch also edits the problem file beside it.
    own = types.WorkspaceEdit(document_changes=[c for c in edit.document_changes or [] if c.text_document.uri == uri])
    new = apply_edit(path.read_text(), own, uri)
    assert new != path.read_text() and "sum_naive" in new
    messages = [v.message or "" for _, v in s.recorder.progress if isinstance(v, types.WorkDoneProgressReport)]
    print("progress:", messages[-3:])
    assert any("GPU-s" in m for m in messages), messages


async def test_generate_kernel_on_the_gpu(sessions, tmp_path) -> None:
    # The LLM is the loopback server replaying recorded answers; on a GPU the gate runs the generated kernel against
    # the generated problem's reference() on every seed ("checked"), not just builds it.
    from tests.search.llm_server import ReplayServer, load

    with ReplayServer(load("generate")) as llm:
        s: Session = await sessions("visual-studio-code", {**PINNED, "llm": {"endpoint": llm.url, "model": "recorded"}})
        await s.status(lambda p: p["gpu"]["found"])
        args = {"description": "double every element", "name": "scale2", "folder": tmp_path.as_uri()}
        result = await s.command("warpwise.generateKernel", args)
    print("generateKernel:", result)
    assert result["status"] == "checked" and result["ok"], result
    assert result["result"]["status"] in ("not_faster", "verified") and "NVIDIA" in result["result"].get("device", "")
    assert (tmp_path / "scale2.cu").is_file() and (tmp_path / "scale2.problem.py").is_file()
