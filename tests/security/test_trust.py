"""Trust rises only by the client's explicit word, and nothing compiles or runs in an untrusted workspace.

Reproducers: a partial `didChangeConfiguration` (`{"warpwise.log.level": "info"}`) used to reset every other
setting to its default, `trustedWorkspace: true` included; `warpwise.profileFile` and saving ran nvcc on the
workspace's code with `trustedWorkspace: false`. The compiler here is a stand-in that records every call.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.server.conftest import KERNELS, PINNED, Session
from warpwise.server.jobs import Job
from warpwise.server.settings import DEFAULTS, parse_settings
from warpwise.server.verification import UntrustedWorkspace, VerificationService

UNTRUSTED = {**PINNED, "verification": {"trustedWorkspace": False}}


def spy_nvcc(tmp_path: Path) -> tuple[Path, Path]:
    """Return an `nvcc` that only appends its arguments to a log, and that log."""
    calls = tmp_path / "nvcc-calls.log"
    exe = tmp_path / "nvcc"
    exe.write_text(f"#!{sys.executable}\nimport sys\nopen({str(calls)!r}, 'a').write(' '.join(sys.argv) + '\\n')\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe, calls


def test_a_partial_change_keeps_every_other_setting() -> None:
    start, _ = parse_settings({"verification": {"trustedWorkspace": False}, "compiler": {"arch": "sm_80"}})
    after, problems = parse_settings({"warpwise.log.level": "info"}, base=start)
    assert problems == []
    assert after.log_level == "info" and after.compiler_arch == "sm_80"
    assert after.verification_trusted_workspace is False


@pytest.mark.parametrize("value", [None, "true", 1, [True]])
def test_trust_rises_only_when_named_with_true(value: Any) -> None:
    start, _ = parse_settings({"verification.trustedWorkspace": False})
    after, problems = parse_settings({"verification.trustedWorkspace": value}, base=start)
    assert after.verification_trusted_workspace is False
    if value is not None:
        assert [p.key for p in problems] == ["verification.trustedWorkspace"]
        assert "the workspace is untrusted" in problems[0].message
    raised, _ = parse_settings({"verification.trustedWorkspace": True}, base=start)
    assert raised.verification_trusted_workspace is True
    # An invalid value never raises trust, even from the (trusting) defaults.
    bad, _ = parse_settings({"verification.trustedWorkspace": "yes"}, base=DEFAULTS)
    assert bad.verification_trusted_workspace is False


async def test_nothing_compiles_or_runs_below_the_commands_when_untrusted(tmp_path: Path) -> None:
    exe, calls = spy_nvcc(tmp_path)
    service = VerificationService(lambda job, event: None)
    settings, _ = parse_settings({"verification.trustedWorkspace": False, "compiler.nvcc": str(exe)})
    service.configure(settings)
    with pytest.raises(UntrustedWorkspace, match="not trusted to run code"):
        service._gate()
    assert await service.toolkit(str(exe)) is None
    from warpwise.server.documents import OpenDocument

    doc = OpenDocument(KERNELS.as_uri(), str(KERNELS), "cuda-cpp", 1, KERNELS.read_bytes())
    snap = doc.capture(settings, 0)
    job = Job(kind="profile", title="t", key=("t",), supersede=("t",), run=lambda job: asyncio.sleep(0))
    report = await service._compile_only(job, snap, settings, {})
    assert report.status == "untrusted" and "nothing is compiled or run" in report.detail
    assert not calls.exists()


async def test_untrusted_then_partial_change_then_commands_and_save(sessions: Any, tmp_path: Path) -> None:
    exe, calls = spy_nvcc(tmp_path)
    s: Session = await sessions("neovim", {**UNTRUSTED, "compiler": {"nvcc": str(exe)}})
    uri = s.open(KERNELS)
    await s.static(uri)
    # A client that sends only the key it changed.
    s.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpwise.log.level": "info"})
    )
    s.save(uri)
    for name, args in (
        ("warpwise.profileFile", {"uri": uri}),
        ("warpwise.optimizeKernel", {"uri": uri, "kernel": "saxpy"}),
        ("warpwise.verifyKernel", {"uri": uri, "kernel": "saxpy"}),
        ("warpwise.generateKernel", {"description": "double it", "name": "twice", "folder": tmp_path.as_uri()}),
    ):
        reply = await s.command(name, args)
        assert reply["ok"] is False and reply["status"] == "untrusted", (name, reply)
    status = await s.command("warpwise.status")
    assert not calls.exists(), calls.read_text()
    assert status is not None
    # The client's explicit word raises trust: now saving builds (with the stand-in compiler).
    s.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpwise": {"verification": {"trustedWorkspace": True}}})
    )
    reply = await s.command("warpwise.profileFile", {"uri": uri})
    assert reply["status"] != "untrusted", reply
    assert calls.exists() and "--version" in calls.read_text()


@pytest.fixture(autouse=True)
def _no_team_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WARPWISE_TEAM_KEY", raising=False)
    os.environ.pop("WARPWISE_TEAM_KEY_FILE", None)
