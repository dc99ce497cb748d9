"""A trusted workspace runs its problem files only when verification is enabled, and the status says so once.

A problem file is Python from the workspace: the verification worker executes it for inputs and reference
outputs. The stand-in here writes a marker file when it is executed, so a test can tell whether anything ran it.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import KERNELS, PINNED, Session
from warpwise.server.problem_files import problem_files_status
from warpwise.server.settings import parse_settings
from warpwise.server.verification import GpuInfo, VerificationService


def _service(settings: dict[str, Any], gpu: bool) -> VerificationService:
    service = VerificationService(lambda job, event: None)
    service.configure(parse_settings(settings)[0])
    service.gpu = GpuInfo(gpu, "NVIDIA H200" if gpu else None, "found" if gpu else "no NVIDIA GPU found")
    return service


@pytest.mark.parametrize(
    ("settings", "gpu", "runs", "says"),
    [
        ({"verification.trustedWorkspace": False}, True, False, "not trusted"),
        ({"gpu.backend": "off"}, True, False, "`warpwise.gpu.backend` is `off`"),
        ({}, False, False, "only compiles"),
        ({}, True, True, "on this machine's GPU"),
        ({"gpu.backend": "local"}, False, True, "on this machine's GPU"),
        ({"gpu.backend": "cluster", "gpu.clusterAddress": "tcp://gpu-head:8786"}, False, True, "cluster"),
        ({"gpu.backend": "cluster", "verification.trustedWorkspace": False}, True, False, "not trusted"),
    ],
)
def test_problem_files_run_only_with_verification_on_a_gpu_in_a_trusted_workspace(
    settings: dict[str, Any], gpu: bool, runs: bool, says: str
) -> None:
    status = problem_files_status(_service(settings, gpu))
    assert status["run"] is runs and says in status["detail"], status
    assert "\n" not in status["detail"]


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    """Copy the kernels fixture next to a problem file that leaves a marker when it is executed."""
    source = tmp_path / "kernels.cu"
    shutil.copy(KERNELS, source)
    marker = tmp_path / "problem-file-ran"
    (tmp_path / "kernels.saxpy.problem.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "import torch\n"
        "n = 1024\n"
        "def make_inputs(seed):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    return [n, 2.0, torch.rand(n, generator=g), torch.rand(n, generator=g)]\n"
        "def reference(n, a, x, y):\n"
        "    return [None, None, None, a * x + y]\n"
    )
    return source, marker


def _problem_file_statuses(s: Session) -> list[dict[str, Any]]:
    """Return each value of `problemFiles` the status announced, in order, counting repeats of one value once."""
    seen: list[dict[str, Any]] = []
    for payload in s.recorder.status:
        value = payload.get("problemFiles")
        if value is not None and (not seen or seen[-1] != value):
            seen.append(value)
    return seen


@pytest.mark.parametrize(
    "options",
    [{"gpu": {"backend": "off"}}, {"verification": {"trustedWorkspace": False}}],
    ids=["trusted-verification-off", "untrusted"],
)
async def test_no_command_or_save_runs_a_problem_file_without_verification(
    sessions: Any, tmp_path: Path, options: dict[str, Any]
) -> None:
    source, marker = _workspace(tmp_path)
    s: Session = await sessions("neovim", {**PINNED, **options})
    uri = s.open(source)
    await s.static(uri)
    for _ in range(3):
        s.save(uri)
    for name, args in (
        ("warpwise.profileFile", {"uri": uri}),
        ("warpwise.verifyKernel", {"uri": uri, "kernel": "saxpy"}),
        ("warpwise.optimizeKernel", {"uri": uri, "kernel": "saxpy"}),
    ):
        reply = await s.command(name, args)
        assert reply is not None, name
    status = await s.command("warpwise.status")
    assert status["problemFiles"]["run"] is False
    await asyncio.sleep(0)  # Let the last status notification land before reading the recorder.
    assert not marker.exists()
    # Said once: three saves and three commands later, the status has announced one value.
    announced = await s.recorder.wait(lambda: _problem_file_statuses(s))
    assert announced == [status["problemFiles"]], announced


async def test_the_status_says_it_again_only_when_it_changes(sessions: Any, tmp_path: Path) -> None:
    from lsprotocol import types

    s: Session = await sessions("neovim", {**PINNED, "gpu": {"backend": "off"}})
    uri = s.open(_workspace(tmp_path)[0])
    await s.static(uri)
    await s.status(lambda p: "problemFiles" in p)
    s.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpwise": {"verification": {"trustedWorkspace": False}}})
    )
    await s.status(lambda p: "not trusted" in p["problemFiles"]["detail"])
    s.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpwise.log.level": "info"})
    )
    s.save(uri)
    await s.command("warpwise.status")
    details = [v["detail"] for v in _problem_file_statuses(s)]
    assert len(details) == 2 and "`off`" in details[0] and "not trusted" in details[1], details


def test_cli_verify_on_the_compile_only_backend_does_not_run_the_problem_file_and_says_so_once(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    source, marker = _workspace(tmp_path)
    for args in (["--json"], []):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "warpwise",
                "verify",
                str(source),
                "--kernel",
                "saxpy",
                "--skill",
                "missing-restrict",
                "--backend",
                "compile-only",
                "--no-cache",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        said = [line for line in proc.stderr.splitlines() if "is not run" in line]
        assert len(said) == 1, proc.stderr
        assert "kernels.saxpy.problem.py" in said[0] and "compile-only backend" in said[0]
    assert not marker.exists()


@pytest.mark.gpu
def test_cli_verify_on_a_gpu_runs_the_problem_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    source, marker = _workspace(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "warpwise",
            "verify",
            str(source),
            "--kernel",
            "saxpy",
            "--skill",
            "missing-restrict",
            "--backend",
            "local",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "is not run" not in proc.stderr
    assert marker.exists(), proc.stdout + proc.stderr
