"""The analysis lane and the job queue on their own (no LSP): coalescing, crashes, priorities, cancellation."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from tests.server.conftest import KERNELS
from warpwise.analyzers.model import FileModel, Position
from warpwise.analyzers.parse import TextEdit
from warpwise.server.analysis import Analysis, AnalysisFailure, AnalysisLane
from warpwise.server.documents import OpenDocument, Snapshot
from warpwise.server.jobs import Job, JobQueue, JobState, Priority
from warpwise.server.providers import RuleProvider
from warpwise.server.settings import DEFAULTS, Settings


def _lane(providers: list[Any]) -> tuple[AnalysisLane, list[Any], threading.Event, list[BaseException]]:
    results: list[Any] = []
    got = threading.Event()
    crashes: list[BaseException] = []

    def deliver(r: Analysis | AnalysisFailure) -> None:
        results.append(r)
        got.set()

    def crashed(exc: BaseException) -> None:
        crashes.append(exc)
        got.set()

    return AnalysisLane(providers, deliver, crashed), results, got, crashes


def test_snapshots_that_pile_up_are_merged_and_only_the_newest_is_analysed() -> None:
    lane, results, got, _ = _lane([RuleProvider()])
    doc = OpenDocument("file:///k.cu", "k.cu", "cuda-cpp", 1, KERNELS.read_bytes())
    lane.submit(doc.snapshot(DEFAULTS, 0))
    for v in range(2, 12):
        doc.apply_range(Position(7, 24), Position(7, 25), str(v % 10))
        doc.version = v
        lane.submit(doc.snapshot(DEFAULTS, 0))
    lane.start()
    try:
        while not results or results[-1].version != 11:
            assert got.wait(30)
            got.clear()
    finally:
        lane.stop()
    analysed = [r.version for r in results]
    assert analysed[-1] == 11 and len(analysed) <= 2, analysed
    assert results[-1].model.text == doc.text
    assert lane.resyncs == 0


def test_a_diverged_copy_is_resynchronised_from_the_editor_text() -> None:
    lane, results, got, _ = _lane([RuleProvider()])
    text = KERNELS.read_bytes()
    lane.start()
    try:
        lane.submit(Snapshot("file:///k.cu", "k.cu", 1, text, DEFAULTS))
        assert got.wait(30)
        got.clear()
        # Edits that do not lead to the text (a bug upstream): the lane must trust the text.
        wrong = (TextEdit(Position(0, 0), Position(0, 0), "garbage "),)
        lane.submit(Snapshot("file:///k.cu", "k.cu", 2, text + b"// end\n", DEFAULTS, 1, wrong))
        assert got.wait(30)
    finally:
        lane.stop()
    assert results[-1].version == 2 and results[-1].model.text == text + b"// end\n"
    assert lane.resyncs == 1


class _Crash:
    name = "crash"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def items(self, model: FileModel, settings: Settings) -> list[Any]:
        raise KeyboardInterrupt("simulated crash of the analysis thread")

    def compute_fix(self, model: FileModel, item: Any) -> None:
        return None


class _Broken(_Crash):
    name = "broken"

    def items(self, model: FileModel, settings: Settings) -> list[Any]:
        raise ValueError("a provider bug")


def test_a_failing_provider_is_skipped_and_reported() -> None:
    lane, results, got, _ = _lane([_Broken(), RuleProvider()])
    lane.start()
    try:
        lane.submit(Snapshot("file:///k.cu", "k.cu", 1, KERNELS.read_bytes(), DEFAULTS))
        assert got.wait(30)
    finally:
        lane.stop()
    (result,) = results
    assert isinstance(result, Analysis)
    assert result.problems == ("broken: ValueError: a provider bug",)
    assert any(i.id == "uncoalesced-global-access" for i in result.items)


def test_a_crash_of_the_thread_is_reported() -> None:
    lane, _, got, crashes = _lane([_Crash()])
    lane.start()
    lane.submit(Snapshot("file:///k.cu", "k.cu", 1, KERNELS.read_bytes(), DEFAULTS))
    assert got.wait(30)
    lane.stop()
    assert len(crashes) == 1 and not lane.alive


async def test_job_queue_priorities_dedupe_supersede_and_cancel() -> None:
    events: list[tuple[str, str]] = []
    queue = JobQueue(lambda job, event: events.append((job.title, event)))
    gate = asyncio.Event()
    started = asyncio.Event()
    order: list[str] = []

    def make(title: str, priority: int, key: tuple, supersede: tuple | None = None) -> Job:
        async def run(job: Job) -> str:
            order.append(title)
            if title == "blocker":
                started.set()
                await gate.wait()
            return title

        return Job(kind="test", title=title, key=key, run=run, priority=priority, supersede=supersede)

    blocker = queue.submit(make("blocker", Priority.INTERACTIVE, ("b",)))
    queue.start()
    await asyncio.wait_for(started.wait(), 10)
    low = queue.submit(make("low", Priority.BACKGROUND, ("l",)))
    old = queue.submit(make("save 1", Priority.ON_SAVE, ("s1",), supersede=("save",)))
    new = queue.submit(make("save 2", Priority.ON_SAVE, ("s2",), supersede=("save",)))
    same = queue.submit(make("save 2 again", Priority.ON_SAVE, ("s2",), supersede=("save",)))
    assert same is new, "an equal job joins the queued one"
    assert old.state is JobState.CANCELLED and old.cancel_reason == "superseded by a newer request"
    assert queue.cancel(blocker.id, "stop")
    await asyncio.wait_for(asyncio.gather(blocker.done, low.done, new.done), 10)
    assert blocker.state is JobState.CANCELLED
    assert order == ["blocker", "save 2", "low"], "most urgent first"
    assert new.result == "save 2"
    await queue.stop()
