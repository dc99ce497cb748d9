"""Pushed diagnostics are built as JSON values directly; they must equal the lsprotocol diagnostics, unstructured."""

from __future__ import annotations

import pytest
from lsprotocol import types

from tests.conftest import ANCHOR, EXAMPLES
from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.parse import CudaDocument
from warpwise.server.analysis import Analysis
from warpwise.server.app import create_server
from warpwise.server.features.diagnostics import static_diagnostics, static_diagnostics_json
from warpwise.server.providers import collect_items
from warpwise.server.services import ClientFeatures

NON_ASCII = """// Größe: ü — the kernel below reads `x` with scalar loads
__global__ void scale(float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;  // índice
  if (i < n) { for (int k = 0; k < 4; k++) { y[i * 4 + k] = x[i * 4 + k] * 2.0; } }
}
void run(float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }
"""


def _capabilities(full: bool) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=full, code_description_support=full, version_support=True
            )
        )
    )


@pytest.mark.parametrize("full", [True, False], ids=["related-and-links", "plain-client"])
@pytest.mark.parametrize("source", ["anchor", "examples", "non-ascii"])
def test_json_diagnostics_equal_the_unstructured_types(source: str, full: bool) -> None:
    if source == "anchor":
        if not ANCHOR.is_file():
            pytest.skip(f"the shared anchor file is not at {ANCHOR}")
        text = ANCHOR.read_text()
    elif source == "examples":
        text = "\n".join(p.read_text() for p in sorted(EXAMPLES.glob("*.cu")))
    else:
        text = NON_ASCII
    ls = create_server()
    client = ClientFeatures(_capabilities(full))
    doc = CudaDocument("/tmp/warpwise-test/file.cu", text)
    model = analyze_document(doc)
    items, _ = collect_items(ls.providers, model, ls.settings)
    assert items
    analysis = Analysis("file:///tmp/warpwise-test/file.cu", 3, "hash", model, tuple(items), (), ls.settings, 0, 0.0)
    uri = analysis.uri
    expected = [ls.protocol.unstructure(d) for d in static_diagnostics(client, analysis, uri, ls.verification)]
    assert static_diagnostics_json(client, analysis, uri, ls.verification) == expected
    # Both shapes of the optional fields are covered: related locations and links only for clients that take them.
    assert any("relatedInformation" in d for d in expected) is full
    assert any("codeDescription" in d for d in expected) is full
