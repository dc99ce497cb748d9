"""The LLM path end to end against a loopback OpenAI-compatible server that replays recorded answers.

What is tested: the prompts that are really sent, parsing, re-asking, retries, time-outs, malformed answers, the
guardrails, the judge, key handling, and that every LLM-written candidate goes through the gate (recorded results
and the real compile-only backend). What is not: whether an LLM writes good kernels.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

from tests.search.fakes import AXPY, RecordedBackend
from tests.search.llm_server import ReplayServer, load
from warpwise.search.evaluate import GateVerifier
from warpwise.search.llm import LLMClient, LLMConfig, LLMError
from warpwise.search.optimize import OptimizeOptions, optimize
from warpwise.search.thoughts import extract_code, parse_verdict
from warpwise.verify.cache import ResultCache
from warpwise.verify.gate import Gate

SECRET = "sk-test-do-not-leak-0123456789"


def config(server: ReplayServer, **kw: object) -> LLMConfig:
    env = {"WARPWISE_LLM_ENDPOINT": server.url, "WARPWISE_LLM_MODEL": "recorded-model", "OPENAI_API_KEY": SECRET}
    cfg = LLMConfig.resolve(env=env, **kw)  # type: ignore[arg-type]
    assert cfg is not None
    return cfg


def search(tmp_path: Path, cfg: LLMConfig, outcomes: dict, *, backend: object = None, rounds: int = 1):
    path = tmp_path / "axpy.cu"
    path.write_text(AXPY)
    backend = backend or RecordedBackend(outcomes)
    gate = Gate(backend, ResultCache(tmp_path / "results.sqlite3"))
    opts = OptimizeOptions(
        cards=False, params=False, lineage=False, llm=cfg, llm_rounds=rounds, budget_s=None, candidates=10
    )
    return optimize(str(path), "axpy", opts, verifier=GateVerifier(gate)), backend


def test_mixture_of_thoughts_aggregates_and_the_judge_clears_the_gain(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with ReplayServer(load("mixture")) as server:
        report, backend = search(tmp_path, config(server), {("llm",): 1.4})
    assert not server.unused()
    systems = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert [s.split(".")[0] for s in systems] == [
        "You are a CUDA performance architect",
        "You are a GPU memory-system specialist",
        "You are a careful experimenter optimizing a CUDA kernel",
        "You merge kernel proposals from several CUDA experts into one kernel",
        "You review a CUDA kernel that a verification gate measured as faster than the original, looking for "
        "signs of a false gain: work skipped (part of the output not computed, loops cut short, inputs assumed), "
        "results cached across calls (device-global or static state, reading an output an earlier run left in "
        "memory), or stream and launch tricks (work handed to another stream or launch that the timing does not "
        "see)",
    ]
    first = server.requests[0]["body"]
    assert first["model"] == "recorded-model"
    user = first["messages"][1]["content"]
    assert "keep the kernel's name `axpy` and its parameters" in user and "block 256x1x1" in user
    assert AXPY.strip() in user
    merge = server.requests[3]["body"]["messages"][1]["content"]
    assert all(f"--- {role} (rationale: " in merge for role in ("architect", "memory", "experimenter"))
    assert "--- memory (rationale: __restrict__ lets the loads use the read-only path.) ---" in merge
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert headers["authorization"] == f"Bearer {SECRET}"
    # The aggregated kernel went through the gate, was verified, and the judge's verdict is in the report.
    assert ("llm",) in backend.runs
    assert report.speedup == 1.4 and report.path[-1]["kind"] == "llm"
    assert report.path[-1]["judge"]["verdict"] == "ok"
    assert "// mark:llm" in report.best_text
    # The key is used but never logged, stored in the report, or shown.
    dumped = json.dumps(report.to_dict()) + report.markdown()
    assert SECRET not in dumped and SECRET not in caplog.text and SECRET not in repr(config(server))
    assert config(server).public["key"] == "set"


def test_malformed_answers_retries_and_a_broken_body(tmp_path: Path) -> None:
    with ReplayServer(load("malformed")) as server:
        report, backend = search(tmp_path, config(server, max_retries=2), {("arch",): 1.2})
    roles = [r["body"]["messages"][0]["content"].split(" ")[3] for r in server.requests]
    # The architect was asked again after a prose answer, with the reason; the memory specialist twice, then dropped.
    arch = [r for r in server.requests if "architect" in r["body"]["messages"][0]["content"]]
    assert len(arch) == 2 and "has no ```cuda code block" in arch[1]["body"]["messages"][-1]["content"]
    assert roles.count("GPU") == 2
    # The experimenter's HTTP 500 was retried by the client; the aggregator's broken body ends in the fallback.
    exp = [r for r in server.requests if "experimenter" in r["body"]["messages"][0]["content"]]
    assert len(exp) == 2
    assert ("arch",) in backend.runs
    assert report.speedup == 1.2


def test_a_cheating_kernel_is_refused_before_the_gate(tmp_path: Path) -> None:
    with ReplayServer(load("cheat")) as server:
        report, backend = search(tmp_path, config(server), {})
    assert backend.runs == [()]
    (rejected,) = report.rejected
    assert rejected["reason"].startswith("guardrail: it adds a `__device__`/`__managed__` variable")
    assert report.best is None


def test_a_flagged_gain_is_reported_but_not_proposed(tmp_path: Path) -> None:
    with ReplayServer(load("suspicious")) as server:
        report, _ = search(tmp_path, config(server), {("llm",): 3.0})
    node = next(n for n in report.nodes if n["kind"] == "llm")
    assert node["status"] == "verified" and node["judge"]["verdict"] == "suspicious"
    assert report.best is None and not report.edits


def test_time_out_is_a_rejected_branch(tmp_path: Path) -> None:
    slow = [{"delay_s": 1.5, "content": "late"} for _ in range(8)]
    with ReplayServer(slow) as server:
        report, backend = search(tmp_path, config(server, timeout_s=0.3, max_retries=0), {})
    assert backend.runs == [()]
    assert report.rejected[0]["reason"] == "produced no version"
    assert any("LLM calls: 3 (0 answered)" in n for n in report.notes)


def test_client_errors_say_why(tmp_path: Path) -> None:
    with ReplayServer([{"status": 401, "error": "bad key"}, {"delay_s": 1.0, "content": "x"}]) as server:
        client = LLMClient(config(server, timeout_s=0.3, max_retries=0))
        with pytest.raises(LLMError, match="HTTP 401"):
            client.chat("architect", [{"role": "user", "content": "hi"}])
        with pytest.raises(LLMError, match=r"did not answer within 0\.3 s"):
            client.chat("architect", [{"role": "user", "content": "hi"}])
        assert [c.ok for c in client.calls] == [False, False]
    dead = LLMClient(LLMConfig("http://127.0.0.1:9/v1", "m", timeout_s=0.5, max_retries=0))
    with pytest.raises(LLMError, match="cannot reach"):
        dead.chat("architect", [{"role": "user", "content": "hi"}])


def test_the_real_gate_builds_llm_candidates(tmp_path: Path) -> None:
    from warpwise.verify.backends import CompileOnlyBackend

    backend = CompileOnlyBackend()
    try:
        with ReplayServer(load("mixture")) as server:
            cfg = config(server)
            ok, _ = search(tmp_path, cfg, {}, backend=backend)
        with ReplayServer(load("broken")) as server:
            (tmp_path / "b").mkdir()
            bad, _ = search(tmp_path / "b", dataclasses.replace(cfg, endpoint=server.url), {}, backend=backend)
    finally:
        backend.close()
    llm = next(n for n in ok.nodes if n["kind"] == "llm")
    assert llm["status"] == "no_gpu" and llm["build"]["ok"] and ok.best is None
    broken = next(n for n in bad.nodes if n["kind"] == "llm")
    assert broken["status"] == "compile_failed" and "undefined_symbol" in broken["build"]["log"]


def test_settings_and_environment() -> None:
    assert LLMConfig.resolve(env={}) is None
    cfg = LLMConfig.resolve("http://h:1/v1/", "m", env={"WARPWISE_LLM_API_KEY": "k1", "OPENAI_API_KEY": "k2"})
    assert cfg is not None and cfg.endpoint == "http://h:1/v1" and cfg.api_key == "k1"
    assert "k1" not in repr(cfg) and cfg.public == {"endpoint": "http://h:1/v1", "model": "m", "key": "set"}


def test_parsing() -> None:
    code = extract_code(
        "x\n```cpp\n__global__ void k(int n) {}\n```\n```cuda\n__global__ void axpy(int n) {}\n```", "axpy"
    )
    assert code == "__global__ void axpy(int n) {}\n"
    assert extract_code("```cuda\n__device__ void axpy(int n) {}\n```", "axpy") is None
    assert parse_verdict('{"verdict": "OK", "reasons": "fine"}') == {"verdict": "ok", "reasons": "fine"}
    assert parse_verdict("no json")["verdict"] == "unknown"
