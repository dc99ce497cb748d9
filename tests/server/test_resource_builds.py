"""The first compile-only build for a resource claim does not hold up the analysis lane (issue 18).

NVRTC's first compilation in a process takes seconds. The server builds in the background, in a separate
process: the first diagnostics of a file come without waiting for it (with no claim where only the build can
decide), and the diagnostics are published again with ptxas' figures once the build answered. A stand-in build process that takes
6 s per request (the warm-up at start, then the kernel) stands for a slow first build.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.server.conftest import SERVER, SHUTDOWN_S, Session, make_client
from warpwise.verify import resources

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "verify" / "fake_resource_worker.py"
SOURCE = ROOT / "skills" / "dynamic-local-array-index" / "fixtures" / "pos_heavy_accumulators.cu"
DELAY_S = 6.0


def _nvrtc() -> bool:
    from warpwise.verify.worker.nvbuild import nvrtc_version

    return nvrtc_version() is not None


@pytest.mark.skipif(not _nvrtc(), reason="without NVRTC no resource build runs, so there is nothing to wait for")
async def test_first_diagnostics_do_not_wait_for_the_first_resource_build() -> None:
    env = {k: v for k, v in os.environ.items() if k != resources.ENV_DISABLE}
    env[resources.ENV_WORKER] = json.dumps([sys.executable, str(FAKE), str(DELAY_S)])
    config = ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=env)
    client = await config.start()
    assert isinstance(client, LanguageClient)
    s = Session(client, "visual-studio-code")
    try:
        await s.initialize({"cards": {"enabled": ["dynamic-local-array-index"]}})
        t0 = time.perf_counter()
        uri = s.open(SOURCE)
        diags = await s.static(uri)
        waited = time.perf_counter() - t0
        # Every index of the fixture's arrays is a counter of a compile-time trip loop: until ptxas answers, whether
        # nvcc unrolls them is unknown, so the first diagnostics claim nothing about local memory (issue 18).
        local = [d for d in diags if str(d.code) == "dynamic-local-array-index"]
        assert not local, [d.message for d in local]
        # The warm-up and the kernel's build take 2 x 6 s in the stand-in; the first diagnostics did not wait.
        assert waited < DELAY_S, f"the first diagnostics took {waited:.1f} s"
        confirmed = await s.pushed(uri, lambda p: any("96 bytes of stack frame" in d.message for d in p.diagnostics))
        assert confirmed.version == s.versions[uri]
    finally:
        await asyncio.wait_for(client.shutdown_session(), SHUTDOWN_S)
        await asyncio.wait_for(client.stop(), SHUTDOWN_S)
