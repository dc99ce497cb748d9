"""What the first document would wait for is done before it, or after its first diagnostics.

Looking for a GPU imports the CUDA driver bindings, and the first status imports the verification modules: on a
loaded machine they would compete with the first analysis for the interpreter, so they start once the first open
document is published (or when no document is open). The analysis warm-up at initialize loads what the first
analysis and its publication use once: the problem-spec reader and the ranking model of the quiet default.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from warpwise.server.features import lifecycle


@dataclass
class _Doc:
    uri: str


@dataclass
class _Analyses:
    done: set[str] = field(default_factory=set)

    def current(self, uri: str) -> Any:
        return object() if uri in self.done else None


@dataclass
class _Tasks:
    started: list[str] = field(default_factory=list)

    def once(self, name: str) -> bool:
        first = name not in self.started
        self.started.append(name)
        return first

    def spawn(self, coro: Any, name: str) -> None:
        coro.close()


class _Editor:
    def notify_status(self) -> None:
        pass


async def test_gpu_detection_waits_for_the_first_analysis_of_an_open_document(monkeypatch: Any) -> None:
    monkeypatch.setattr(lifecycle, "GPU_DETECTION_DELAY_S", 0.01)
    monkeypatch.setattr(lifecycle, "GPU_DETECTION_MAX_WAIT_S", 10.0)
    docs, analyses, tasks = [_Doc("file:///a.cu")], _Analyses(), _Tasks()
    services = {"documents": docs, "analyses": analyses, "editor": _Editor(), "verification": None, "tasks": tasks}
    lifecycle.detect_when_read(0.01, **services)
    await asyncio.sleep(0.05)
    assert tasks.started == []  # the document is still being read: no detection yet
    analyses.done.add("file:///a.cu")
    await asyncio.sleep(0.05)
    assert tasks.started == ["detect-gpu"]


async def test_gpu_detection_starts_at_once_without_documents_and_gives_up_waiting(monkeypatch: Any) -> None:
    monkeypatch.setattr(lifecycle, "GPU_DETECTION_DELAY_S", 0.01)
    tasks = _Tasks()
    services = {"documents": [], "analyses": _Analyses(), "editor": _Editor(), "verification": None}
    lifecycle.detect_when_read(0.01, tasks=tasks, **services)
    assert tasks.started == ["detect-gpu"]
    monkeypatch.setattr(lifecycle, "GPU_DETECTION_MAX_WAIT_S", 0.03)
    tasks = _Tasks()
    lifecycle.detect_when_read(0.01, tasks=tasks, **{**services, "documents": [_Doc("file:///b.cu")]})
    await asyncio.sleep(0.2)
    assert tasks.started == ["detect-gpu"]  # never analysed: it starts after the longest wait anyway


def test_the_warm_up_loads_the_spec_reader_and_the_ranking() -> None:
    code = (
        "import sys\n"
        "from warpwise.server.analysis import warm_up\n"
        "from warpwise.server.providers import CardProvider, RuleProvider\n"
        "from warpwise.server.settings import DEFAULTS\n"
        "assert 'warpwise.ranking' not in sys.modules and 'warpwise.verify.spec' not in sys.modules\n"
        "p = [RuleProvider(), CardProvider()]\n"
        "p[1].available()\n"
        "warm_up(p, DEFAULTS)\n"
        "import warpwise.ranking.store as s\n"
        "print('warpwise.verify.spec' in sys.modules, len(s._loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    spec, models = out.stdout.split()
    assert spec == "True" and int(models) >= 1  # the spec reader imported, the ranking model read
