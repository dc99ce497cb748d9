"""One document's analysis never delays another's first diagnostics by more than 50 ms.

Reproducer (issue 16): a 60 KB kernel holding one 10,000-term sum delayed another file's first diagnostics by
11.9 s, because the server's one analysis thread took documents one at a time. The analysis now offers cheap
checkpoints (`warpwise.analyzers.checkpoint`), where the lane runs other documents' waiting snapshots before it
resumes (`warpwise.server.analysis`).

The protocol test measures what a user sees, on a real `warpwise serve`: the time from `didOpen` of a small file
to its `publishDiagnostics`, alone and while a long file is being analysed. The two are measured in alternation
and compared by their medians, so a loaded machine slows both alike and what is asserted is the delay the long
file causes. `bench/first_diagnostics.py` measures the same with more trials and the shared anchor file
(`bench/results/first_diagnostics-*.md`): on the 2-core development machine under load the median delay was a few
milliseconds, the worst single trial under 40 ms; the bound asserted is the promise itself, 50 ms, on medians of
five trials (a single trial can be held up by a scheduler that gives the core to another process).
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.security.sources import SMALL, big_sum, many_kernels
from tests.server.conftest import FIXTURES, Session
from warpwise.analyzers.model import FileModel
from warpwise.server.analysis import Analysis, AnalysisFailure, AnalysisLane, warm_up
from warpwise.server.documents import Snapshot
from warpwise.server.providers import CardProvider, RuleProvider
from warpwise.server.settings import DEFAULTS, Settings

DELAY_BOUND_MS = 50.0
TRIALS = 5
LONG_KERNELS = 150
"""Enough generated kernels that the long file's analysis lasts well over a second on the development machine."""


def _snap(uri: str, text: str, version: int = 1, base: int | None = None) -> Snapshot:
    return Snapshot(uri, uri.removeprefix("file://"), version, text.encode(), DEFAULTS, base)


class _Lane:
    """A real analysis lane with the server's providers, recording what it delivers and when."""

    def __init__(self) -> None:
        self.providers: list[Any] = [RuleProvider(), CardProvider()]
        warm_up(self.providers, DEFAULTS)
        self.results: list[tuple[float, Analysis | AnalysisFailure]] = []
        self.crashes: list[BaseException] = []
        self.event = threading.Condition()
        self.lane = AnalysisLane(self.providers, self._deliver, self.crashes.append)

    def _deliver(self, r: Analysis | AnalysisFailure) -> None:
        with self.event:
            self.results.append((time.perf_counter(), r))
            self.event.notify_all()

    def wait(self, count: int, timeout: float = 120.0) -> None:
        with self.event:
            assert self.event.wait_for(lambda: len(self.results) >= count, timeout), self.results

    def uris(self) -> list[tuple[str, int]]:
        return [(r.uri, r.version) for _, r in self.results]


def test_a_small_document_opened_during_a_long_analysis_is_analysed_first() -> None:
    lane = _Lane()
    # Both wait before the thread starts, the long one first: without checkpoints it would be analysed first.
    lane.lane.submit(_snap("file:///long.cu", many_kernels(40)))
    lane.lane.submit(_snap("file:///sum.cu", big_sum(10_000)))
    lane.lane.submit(_snap("file:///small.cu", SMALL))
    lane.lane.start()
    lane.wait(3)
    lane.lane.stop()
    order = lane.uris()
    # The small file interrupts the long one; the sum (also waiting) is taken at the same checkpoint.
    assert order[-1] == ("file:///long.cu", 1), order
    assert ("file:///small.cu", 1) in order[:2], order
    assert lane.lane.interruptions >= 2 and not lane.crashes
    small = next(r for _, r in lane.results if r.uri == "file:///small.cu")
    assert isinstance(small, Analysis) and any(i.id == "double-literal-promotion" for i in small.items)
    # The interrupted analysis resumed and is complete: every generated kernel is in its model.
    long = next(r for _, r in lane.results if r.uri == "file:///long.cu")
    assert isinstance(long, Analysis) and len(long.model.functions) == 40


def test_an_interrupted_analysis_gives_the_same_result_as_an_uninterrupted_one() -> None:
    text = many_kernels(15)
    alone = _Lane()
    alone.lane.submit(_snap("file:///long.cu", text))
    alone.lane.start()
    alone.wait(1)
    alone.lane.stop()
    interrupted = _Lane()
    interrupted.lane.submit(_snap("file:///long.cu", text))
    for k in range(6):
        interrupted.lane.submit(_snap(f"file:///small{k}.cu", SMALL))
    interrupted.lane.start()
    interrupted.wait(7)
    interrupted.lane.stop()
    assert interrupted.lane.interruptions >= 1
    a = alone.results[0][1]
    b = next(r for _, r in interrupted.results if r.uri == "file:///long.cu")
    assert isinstance(a, Analysis) and isinstance(b, Analysis)
    assert [(i.id, i.span, i.message) for i in a.items] == [(i.id, i.span, i.message) for i in b.items]


class _Gate:
    """A provider that blocks at its first call until released, so a test can act while an analysis runs."""

    name = "gate"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def available(self) -> tuple[bool, str]:
        return True, ""

    def items(self, model: FileModel, settings: Settings) -> list[Any]:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            assert self.release.wait(30)
        return []

    def compute_fix(self, model: FileModel, item: Any) -> None:
        return None


def test_a_superseded_version_is_abandoned_at_the_next_checkpoint() -> None:
    lane = _Lane()
    gate = _Gate()
    # The gate comes before the server's providers; the first analysis stops in it until the new version waits.
    lane.lane = AnalysisLane([gate, *lane.providers], lane._deliver, lane.crashes.append)
    lane.lane.start()
    text = many_kernels(10)
    lane.lane.submit(_snap("file:///long.cu", text, 1))
    assert gate.entered.wait(30)
    lane.lane.submit(_snap("file:///long.cu", text + "\n// edited\n", 2, base=1))
    gate.release.set()
    lane.wait(1)
    time.sleep(0.2)  # Nothing else may arrive: version 1 was abandoned, not finished late.
    lane.lane.stop()
    assert lane.uris() == [("file:///long.cu", 2)]
    assert lane.lane.abandoned == 1 and not lane.crashes


def test_a_reanalysis_of_the_same_version_lets_the_running_analysis_finish() -> None:
    # A background build that answers asks for the open documents again, at the same version: the analysis in
    # progress is delivered (the first diagnostics do not wait for the builds), and the re-analysis follows it.
    lane = _Lane()
    gate = _Gate()
    lane.lane = AnalysisLane([gate, *lane.providers], lane._deliver, lane.crashes.append)
    lane.lane.start()
    text = many_kernels(10)
    lane.lane.submit(_snap("file:///long.cu", text, 1))
    assert gate.entered.wait(30)
    lane.lane.submit(_snap("file:///long.cu", text, 1))
    gate.release.set()
    lane.wait(2)
    lane.lane.stop()
    assert lane.uris() == [("file:///long.cu", 1), ("file:///long.cu", 1)]
    assert lane.lane.abandoned == 0 and not lane.crashes
    first, second = (r for _, r in lane.results)
    assert isinstance(first, Analysis) and isinstance(second, Analysis)
    assert [(i.id, i.span) for i in first.items] == [(i.id, i.span) for i in second.items]


def test_a_closed_documents_analysis_is_abandoned() -> None:
    lane = _Lane()
    gate = _Gate()
    lane.lane = AnalysisLane([gate, *lane.providers], lane._deliver, lane.crashes.append)
    lane.lane.start()
    lane.lane.submit(_snap("file:///long.cu", many_kernels(10)))
    assert gate.entered.wait(30)
    lane.lane.forget("file:///long.cu")
    lane.lane.submit(_snap("file:///small.cu", SMALL))
    gate.release.set()
    lane.wait(1)
    time.sleep(0.2)
    lane.lane.stop()
    assert lane.uris() == [("file:///small.cu", 1)]
    assert lane.lane.abandoned == 1


async def _first_diagnostics_ms(s: Session, path: Path, text: str) -> float:
    t0 = time.perf_counter()
    await s.static(s.open(path, text), 1)
    return (time.perf_counter() - t0) * 1000


@pytest.mark.slow
async def test_a_long_analysis_delays_another_documents_first_diagnostics_by_under_50_ms(sessions) -> None:
    s: Session = await sessions("emacs")  # A client that is pushed diagnostics: the test sees when they come.
    assert not s.pulls
    await _first_diagnostics_ms(s, FIXTURES / "warm.cu", SMALL)  # Warm: caches, imports, the card library.
    alone: list[float] = []
    during: list[float] = []
    for trial in range(TRIALS):
        alone.append(await _first_diagnostics_ms(s, FIXTURES / f"alone{trial}.cu", SMALL))
        long_uri = s.open(FIXTURES / f"long{trial}.cu", many_kernels(LONG_KERNELS, salt=trial))
        during.append(await _first_diagnostics_ms(s, FIXTURES / f"during{trial}.cu", SMALL))
        # The long file was still being analysed when the small one's diagnostics came: it publishes after.
        assert not any(p.uri == long_uri for p in s.recorder.diagnostics), "the long analysis ended too soon"
        await s.static(long_uri, 1)
    delay = statistics.median(during) - statistics.median(alone)
    assert delay < DELAY_BOUND_MS, f"alone {alone}, during a long analysis {during} (ms)"


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads the resident size from /proc")
def test_parsing_with_checkpoints_keeps_memory_flat() -> None:
    from warpwise.analyzers.checkpoint import checkpoints
    from warpwise.analyzers.parse import new_parser, parse_tree

    data = many_kernels(400).encode()  # About 100 KB: parsed in chunks, with a checkpoint per progress call.
    parser = new_parser()
    plain = str(parse_tree(data, parser).root_node)
    calls = 0

    def hook(abortable: bool) -> None:
        nonlocal calls
        calls += 1

    with checkpoints(hook):
        for _ in range(20):
            parse_tree(data, parser)
        before = _rss_mib()
        for _ in range(200):
            tree = parse_tree(data, parser)
        grown = _rss_mib() - before
    assert calls > 1000 and str(tree.root_node) == plain
    # Its nodes give their text (a tree parsed from a read callback alone has none to give).
    assert tree.root_node.children[-1].text == data[tree.root_node.children[-1].start_byte :].rstrip(b"\n")
    # Returning `bytes` chunks to py-tree-sitter kept each one: about 20 MiB per 100 parses of this text.
    assert grown < 10, f"{grown:.1f} MiB after 200 parses"


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads the resident size from /proc")
def test_incremental_edits_with_checkpoints_keep_memory_flat() -> None:
    from warpwise.analyzers.checkpoint import checkpoints
    from warpwise.analyzers.model import Position
    from warpwise.analyzers.parse import CudaDocument, TextEdit

    doc = CudaDocument("long.cu", many_kernels(400).encode())
    at = Position(3, 20)

    def edit(i: int) -> None:
        doc.apply([TextEdit(at, Position(3, 21), "+" if i % 2 else "-")])

    with checkpoints(lambda abortable: None):
        for i in range(20):
            edit(i)
        before = _rss_mib()
        for i in range(300):
            edit(i)
        grown = _rss_mib() - before
    # Parsing incrementally from a read callback held on to about 0.1 MiB per edit of this text.
    assert grown < 10, f"{grown:.1f} MiB after 300 edits"
