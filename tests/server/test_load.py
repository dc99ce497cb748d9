"""Load: 1,000 `didChange` at full speed on the anchor file while a job runs; responsive, flat memory."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from lsprotocol import types

from tests.server.conftest import ANCHOR, SLOW_NVCC, Session

CHANGES = 1000


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not ANCHOR.is_file(), reason=f"the shared anchor file is not at {ANCHOR}")
async def test_thousand_changes_while_a_job_runs(sessions) -> None:
    # The stand-in compiler keeps one job running for the whole test, as a long verification would.
    s: Session = await sessions("visual-studio-code", {"compiler": {"nvcc": str(SLOW_NVCC)}})
    positions = json.loads(Path(str(ANCHOR) + ".positions.json").read_text())
    edit = positions["edit_char"]
    hover = positions["hover_param"]
    uri = s.open(ANCHOR)
    await s.static(uri)
    s.save(uri)
    await s.status(lambda p: p["running"] is not None and p["running"]["kind"] == "profile")
    pid = s.client._server.pid  # type: ignore[union-attr]
    line, col = edit["line"], edit["character"]

    async def burst(n: int) -> list[float]:
        latencies = []
        for i in range(n):
            s.change(uri, (line, col), (line, col + 1), edit["alt"] if i % 2 == 0 else edit["orig"])
            if i % 100 == 99:
                t0 = time.perf_counter()
                result = await s.hover(uri, hover["line"], hover["character"])
                latencies.append(time.perf_counter() - t0)
                assert result is not None
        return latencies

    # Warm up: the caches (card matches, syntax trees) fill during the first burst and then stay bounded.
    await burst(CHANGES)
    await s.static(uri)
    rss_warm = _rss_kib(pid)
    latencies = await burst(CHANGES)
    final = s.versions[uri]
    diags = await s.static(uri, final)
    assert diags, "the newest version is analysed and published"
    rss_end = _rss_kib(pid)
    # Still running: the job was never waited for.
    status = await s.command("warpwise.status")
    assert status["running"] is not None and status["running"]["kind"] == "profile"
    assert max(latencies) < 2.0, f"hover while typing took up to {max(latencies):.3f} s"
    assert rss_end - rss_warm < 30 * 1024, f"memory grew from {rss_warm} KiB to {rss_end} KiB"
    published = [p.version or 0 for p in s.recorder.diagnostics if p.uri == uri]
    assert published == sorted(published), "diagnostics are never published for an older version after a newer one"
    assert len(published) < CHANGES, "piled-up versions are coalesced, not analysed one by one"
    s.client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
