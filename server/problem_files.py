"""Whether this workspace's problem files run, in one line the status carries.

A problem file (`NAME.problem.py`, `NAME.KERNEL.problem.py`) is Python the user wrote: the verification worker
executes it to draw inputs and the reference outputs, and it runs only there, and only when a job runs kernels on
a GPU (`warpwise.verify.worker.gpu_job`). So it runs exactly when verification is enabled in a trusted workspace:
never when the workspace is untrusted (the gate is not even started, `VerificationService.require_trust`), never
when `warpwise.gpu.backend` is `off`, and never on the compile-only backend a machine without a GPU gets, which
builds kernels and runs nothing.

The status notification carries the answer (`problemFiles`); it is sent only when its payload changes, so the
editor is told once per change of trust or backend, not once per save or job.
"""

from __future__ import annotations

from typing import Any

from warpwise.server.verification import VerificationService


def problem_files_status(service: VerificationService) -> dict[str, Any]:
    """Return whether problem files run now, and why (the status's `problemFiles`)."""
    backend = service.backend()
    if not service.trusted():
        return {
            "run": False,
            "detail": "problem files are not run: this workspace is not trusted to run code "
            "(`warpwise.verification.trustedWorkspace` is false)",
        }
    if backend == "off":
        return {
            "run": False,
            "detail": "problem files are not run: GPU verification is off (`warpwise.gpu.backend` is `off`)",
        }
    if backend == "compile-only":
        return {
            "run": False,
            "detail": "problem files are not run: without a GPU verification only compiles the kernels",
        }
    where = "on the cluster's GPUs" if backend == "cluster" else "on this machine's GPU"
    return {"run": True, "detail": f"problem files run when a kernel is verified or profiled {where}"}
