"""Generating a kernel and its problem file from a description, against the loopback server and the gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.search.fakes import RecordedBackend
from tests.search.llm_server import ReplayServer, load
from warpwise.search.evaluate import GateVerifier
from warpwise.search.generate import GenerateError, generate, screen_problem
from warpwise.search.llm import LLMClient, LLMConfig
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate


def client(server: ReplayServer) -> LLMClient:
    return LLMClient(LLMConfig(server.url, "recorded-model", max_retries=0, timeout_s=10))


def test_generate_refuses_an_unsafe_problem_file_then_builds(tmp_path: Path) -> None:
    from warpwise.verify.backends import CompileOnlyBackend

    backend = CompileOnlyBackend()
    try:
        with ReplayServer(load("generate")) as server:
            gate = Gate(backend, ResultCache(tmp_path / "r.sqlite3"))
            report = generate(
                "double every element",
                "scale2",
                tmp_path / "out",
                client(server),
                GateVerifier(gate),
                compile_only=True,
            )
    finally:
        backend.close()
    assert report.status == "built" and report.ok
    assert [a["outcome"] for a in report.attempts] == [
        "refused: the problem file imports `subprocess` (only torch, math, numpy and typing are allowed)",
        "no_gpu",
    ]
    assert "has no" not in server.requests[1]["body"]["messages"][-1]["content"]
    assert "imports `subprocess`" in server.requests[1]["body"]["messages"][-1]["content"]
    problem = (tmp_path / "out" / "scale2.problem.py").read_text()
    assert 'kernel = "scale2"' in problem and "subprocess" not in problem
    assert "__global__ void scale2(" in (tmp_path / "out" / "scale2.cu").read_text()
    assert report.result["build"]["ok"] is True


def test_generate_sends_the_gates_verdict_back(tmp_path: Path) -> None:
    backend = RecordedBackend({("gen1",): "incorrect"})
    with ReplayServer(load("generate")) as server:
        gate = Gate(backend, ResultCache(tmp_path / "r.sqlite3"))
        report = generate("double every element", "scale2", tmp_path, client(server), GateVerifier(gate))
    assert report.status == "checked"
    assert [a["outcome"] for a in report.attempts][1:] == ["incorrect", "not_faster"]
    feedback = server.requests[2]["body"]["messages"][-1]["content"]
    assert feedback.startswith("The gate's verdict: incorrect") and "differs on seed 0" in feedback
    assert backend.runs == [("gen1",), ("gen2",)]
    with pytest.raises(GenerateError, match="exists already"):
        generate("again", "scale2", tmp_path, client(server), GateVerifier(gate))


def test_problem_file_screen() -> None:
    good = 'import torch\nkernel = "k"\ndef make_inputs(seed): ...\ndef reference(i): ...\ndef launch(i): ...\n'
    assert screen_problem(good, "k") is None
    assert screen_problem(good, "other") == 'the problem file must say `kernel = "other"`'
    assert "does not define launch" in screen_problem(good.replace("def launch", "def lunch"), "k")
    assert "calls `open`" in screen_problem(good + "open('/etc/passwd')\n", "k")
    assert "uses `.system`" in screen_problem(good + "torch.os.system('x')\n", "k")
    assert "does not parse" in screen_problem("def (", "k")
