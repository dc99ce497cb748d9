"""bench/gpu/corpus_check.py on the CPU: discovery, the signature parser, and the check-and-time logic run
against a stand-in device whose "kernel" is the problem's own reference (or does nothing), so the script's
plumbing is tested before it spends GPU time."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lineages.kernels import ALL, Kernel, corpus_check, load_problem

torch = pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]')")
cc = corpus_check()

PEAKS = {"copy_gbps": 4000.0, "cublas_sgemm_tflops": 50.0}


class StandInDevice:
    """The parts of `corpus_check.Gpu` that `Runner` uses, on the CPU, with no kernel build."""

    torch = torch
    dev = torch.device("cpu")

    def build(self, source: str, kernel: str, filename: str) -> tuple[Any, dict[str, Any]]:
        return (None, "stand-in"), {"ok": True, "registers": 0, "spill_stores": 0}

    def sync(self) -> None:
        return None

    def bench(self, fn: Any, **_: Any) -> dict[str, Any]:
        fn()
        return {"median_ms": 2.0, "q1_ms": 1.9, "q3_ms": 2.1, "iqr_ms": 0.2, "reps": 1}


class ReferenceRunner(cc.Runner):  # type: ignore[name-defined]
    """A runner whose launch writes the reference outputs into the kernel's output buffers."""

    def launch(self, fn: Any, geometry: Any, values: list[Any], args: dict[str, Any], ns: dict[str, Any]) -> None:
        expected = ns["reference"]({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in args.items()})
        for name, value in expected.items():
            args[name].copy_(value.reshape(args[name].shape))


class IdleRunner(cc.Runner):  # type: ignore[name-defined]
    """A runner whose launch does nothing: outputs stay poisoned (or at their starting value)."""

    def launch(self, fn: Any, geometry: Any, values: list[Any], args: dict[str, Any], ns: dict[str, Any]) -> None:
        return None


def _entry(k: Kernel) -> Any:
    return cc.Entry(k.kind, k.operator, k.source, k.problem)


def test_discover_finds_every_kernel() -> None:
    found = {e.ident for e in cc.discover()}
    assert found == {k.ident for k in ALL}
    assert {e.ident for e in cc.discover({"scan"})} == {"expert/scan"}
    assert all(e.kind == "expert" for e in cc.discover(naive=False))


def test_parse_signature_reads_types_and_pointers() -> None:
    source = "// a kernel\n__global__ void __launch_bounds__(256)\n k(const float* __restrict__ x, long long n, float eps) {}"
    params = cc.parse_signature(source, "k")
    assert [(p.name, p.pointer, p.ctype) for p in params] == [
        ("x", True, "float"),
        ("n", False, "long long"),
        ("eps", False, "float"),
    ]
    with pytest.raises(ValueError, match="no __global__"):
        cc.parse_signature(source, "other")


@pytest.mark.parametrize("k", ALL, ids=lambda k: k.ident)
def test_a_correct_kernel_passes_every_small_preset(k: Kernel) -> None:
    result = ReferenceRunner(StandInDevice(), PEAKS).run(_entry(k), full=False)
    assert result["status"] == "ok", result
    ns = load_problem(k.problem)
    assert len(result["checks"]) == len(ns["SIZES"]) - 1
    timing = result["timing"]
    assert timing["speedup_vs_eager"] == pytest.approx(1.0)
    assert timing["bytes"] > 0
    if k.kind == "expert":
        assert set(result["target"]) >= {"goal", "share_pct", "met", "gap_pct_points"}


@pytest.mark.parametrize("k", ALL, ids=lambda k: k.ident)
def test_a_kernel_that_writes_nothing_is_caught(k: Kernel) -> None:
    result = IdleRunner(StandInDevice(), PEAKS).run(_entry(k), full=False)
    assert result["status"] == "incorrect"
    assert result["checks"][0]["problems"]


def test_report_renders_every_entry() -> None:
    device = StandInDevice()
    results = [ReferenceRunner(device, PEAKS).run(_entry(k), full=False) for k in ALL[:2]]
    results.append({"entry": "naive/x", "status": "timed_out", "error": "no result within 90 s"})
    report = {"peaks": {**PEAKS}, "device": {"gpu": "stand-in"}, "results": results, "started": "now", "seconds": 1}
    text = cc.render_markdown(report)
    assert all(f"| {r['entry']} |" in text for r in results)
    assert "timed_out" in text


def test_list_runs_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert cc.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(k.ident in out for k in ALL)


FAKE_CHILD = r"""
import json, sys, time
idents = sys.argv[1].split(",")
if sys.argv[2] == "fresh":
    print(json.dumps({"event": "peaks", "peaks": {"copy_gbps": 1.0, "cublas_sgemm_tflops": 1.0}, "device": {}}))
for ident in idents:
    print(json.dumps({"event": "start", "entry": ident}), flush=True)
    if ident.endswith("hang"):
        time.sleep(600)
    if ident.endswith("crash"):
        sys.exit(3)
    result = {"entry": ident, "status": "incorrect", "checks": [{"ok": False, "problems": ["wrong"]}]}
    print(json.dumps({"event": "result", "result": result}), flush=True)
"""


def test_parent_survives_hangs_and_crashes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def command(pending: list[str], peaks_file: Any) -> list[str]:
        return [cc.sys.executable, "-c", FAKE_CHILD, ",".join(pending), "known" if peaks_file.is_file() else "fresh"]

    monkeypatch.setattr(cc, "child_command", command)
    names = ["a", "hang", "b", "crash", "c"]
    entries = [cc.Entry("expert", n, tmp_path / "k.cu", tmp_path / "k.problem.py") for n in names]
    report = cc.parent_main(entries, tmp_path / "out", deadline_s=2.0, budget_s=60.0)
    status = {r["entry"]: r["status"] for r in report["results"]}
    assert status == {
        "expert/a": "incorrect",
        "expert/hang": "timed_out",
        "expert/b": "incorrect",
        "expert/crash": "crashed",
        "expert/c": "incorrect",
    }
    assert report["peaks"]["copy_gbps"] == 1.0
    assert (tmp_path / "out" / "corpus_check.md").read_text().count("| expert/") == 5


def test_parent_stops_at_the_budget(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def command(pending: list[str], peaks_file: Any) -> list[str]:
        return [cc.sys.executable, "-c", FAKE_CHILD, ",".join(pending), "fresh"]

    monkeypatch.setattr(cc, "child_command", command)
    entries = [cc.Entry("naive", n, tmp_path / "k.cu", tmp_path / "k.problem.py") for n in ("a", "b")]
    report = cc.parent_main(entries, tmp_path / "out", deadline_s=5.0, budget_s=0.0)
    assert [r["status"] for r in report["results"]] == ["not_run", "not_run"]
    assert "budget" in report["error"]
