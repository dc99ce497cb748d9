"""The analysis lane: one thread that parses, models and matches snapshots, off the event loop.

The loop hands in `Snapshot`s; the thread keeps one `CudaDocument` per open file and feeds it the snapshot's
edits, so a keystroke costs an incremental tree-sitter re-parse plus the analysis of the functions whose text
changed (`analyze_document` reuses the others). Snapshots of the same file that pile up while the thread is busy
are merged (their edits chained, older texts dropped), and a snapshot that is already superseded when its turn
comes has its edits applied but is not analysed: only the newest version is worth a result. Each `Analysis` is
an immutable value tagged with the snapshot's version; the loop publishes it only if the document is still at
that version.

One document's analysis never holds up another's: the analysers call `warpwise.analyzers.checkpoint.checkpoint()` at
cheap places (while tree-sitter parses, between functions, between the cards tried on one function, between rules),
every few milliseconds. At each one the lane runs, to completion, any snapshot of another document that is waiting
(newly opened ones first), then lets the interrupted analysis resume where it stopped; and it abandons the
interrupted analysis if its own document has a newer snapshot waiting (`Superseded`), so a superseded version costs
at most the time to the next checkpoint. A waiting snapshot of the same version (a re-analysis asked for when a
background build answered) supersedes nothing: it runs after the analysis in progress is delivered. The work run at
a checkpoint offers checkpoints too (for documents not already interrupted further down), so a third document opened
meanwhile does not wait for the second. One thread does it all: under Python's GIL a second analysis thread would
only take turns with the first, a switch interval at a time, rather than run beside it.

The thread never dies of one bad input: a failure while analysing one snapshot is logged and delivered as an
`AnalysisFailure`. If the thread itself stops unexpectedly, `on_crash` is called, and the server restarts it and
says so in its status.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from warpwise.analyzers.build import analyze_document
from warpwise.analyzers.checkpoint import Superseded, checkpoints
from warpwise.analyzers.embedded import mask_python
from warpwise.analyzers.model import FileModel
from warpwise.analyzers.parse import CudaDocument, SourceFile
from warpwise.server.documents import Snapshot
from warpwise.server.providers import Item, Provider, collect_items
from warpwise.server.settings import Settings

log = logging.getLogger(__name__)

MAX_REPLAYED_EDITS = 64
"""Past this many queued edits, re-parsing the whole text is cheaper than replaying them one by one."""

MAX_INTERRUPTIONS = 8
"""How many analyses may be interrupted at once, one inside the other (each for a different document)."""


@dataclass(frozen=True, slots=True)
class Analysis:
    """Everything the editor features read about one version of one file."""

    uri: str
    version: int
    content_hash: str
    model: FileModel
    items: tuple[Item, ...]
    problems: tuple[str, ...]
    settings: Settings
    generation: int
    elapsed_ms: float
    skipped: str | None = None

    def items_at(self, start: int, end: int) -> list[Item]:
        """Return the items whose span touches the byte range `start..end`."""
        return [i for i in self.items if i.span[0] <= end and start <= i.span[1]]


@dataclass(frozen=True, slots=True)
class AnalysisFailure:
    """An analysis that raised (a bug in warpwise, not in the user's code)."""

    uri: str
    version: int
    error: str


_FORGET = object()

WARM_UP_SOURCE = b"""
#define N 256
template <int TILE>
__global__ void warm_tile(const float* __restrict__ a, float* b, int n, float s) {
  __shared__ float t[TILE][TILE];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 4; ++k) { t[threadIdx.y][threadIdx.x] = a[i * n + k] * s; }
  __syncthreads();
  if (i < n) b[i] = t[threadIdx.x][threadIdx.y] + expf(1.0);
}
__global__ void warm_scale(const float* x, float* y, int n, float s) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float v;
    float w = x[i] * s;
    v = w + 1.0;
    y[i] = v;
  }
}
__global__ void warm_half(const __half* x, __half* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2half(__half2float(x[i]) * 2.0f);
}
__global__ void warm_rows(const float* x, float* y, int n) {
  for (int c = threadIdx.x; c < n; c += blockDim.x) y[blockIdx.x * n + c] = x[blockIdx.x * n + c] * 2.0f;
}
void warm_launch(const float* a, float* b, int n) {
  warm_tile<16><<<(n + 255) / 256, dim3(16, 16)>>>(a, b, n, 2.0f);
  warm_scale<<<(n + 255) / 256, 256>>>(a, b, n, 2.0f);
}
"""
"""A small file that takes most paths of the analyzers and matchers (templates, shared memory, loops, launches,
an element-wise body, a half-precision one whose element type is not a keyword, a loop over a row), so that the
queries they compile on first use are compiled before the first document (compiling one takes 10-20 ms)."""


def warm_up(providers: list[Provider], settings: Settings) -> float:
    """Analyse a small file once so that queries are compiled and caches filled before the first document."""
    t0 = time.perf_counter()
    try:
        doc = CudaDocument("<warm-up>.cu", WARM_UP_SOURCE)
        model = analyze_document(doc)
        items, _problems = collect_items(providers, model, settings)
        _warm_first_use(model, items)
        for p in providers:
            forget = getattr(p, "forget", None)
            if forget is not None:
                forget(model.path)
    except Exception:  # A failed warm-up only costs the first document its speed.
        log.exception("the analysis warm-up failed")
    return (time.perf_counter() - t0) * 1000


def _warm_first_use(model: FileModel, items: list[Item]) -> None:
    """Load what the first document's analysis and publication use once, so that they do not wait for it.

    The problem-spec reader (a kernel launched elsewhere gets the launch of its spec, `skills/spec_launch.py`) and
    the ranking with its model, which the quiet default asks for each card fix before the first diagnostics are
    published (`server/presentation.py`).
    """
    import warpwise.verify.spec  # noqa: F401
    from warpwise.ranking import load_model, predict_matches

    ranking = load_model()
    matches = [i.payload for i in items if i.source == "card" and i.has_fix and i.payload is not None]
    if ranking is not None and matches:
        predict_matches(model, matches, model=ranking, gpu=None)


class AnalysisLane:
    """A worker thread with an inbox of snapshots, one slot per document."""

    def __init__(
        self,
        providers: list[Provider],
        deliver: Callable[[Analysis | AnalysisFailure], None],
        on_crash: Callable[[BaseException], None],
    ) -> None:
        self._providers = providers
        self._deliver = deliver
        self._on_crash = on_crash
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._inbox: dict[str, object] = {}
        self._docs: dict[str, tuple[CudaDocument, int]] = {}
        self._stop = False
        self._thread: threading.Thread | None = None
        self._interrupted: list[str] = []
        self._running: dict[str, Snapshot] = {}
        """The snapshot each interrupted (or running) analysis is of, by document."""
        self.analyses = 0
        self.skipped_superseded = 0
        self.resyncs = 0
        self.interruptions = 0
        self.abandoned = 0

    def start(self) -> None:
        """Start the thread."""
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="warpwise-analysis", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop the thread (pending snapshots are dropped)."""
        self._stop = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._thread = None

    @property
    def alive(self) -> bool:
        """Return whether the thread is running."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def pending(self) -> int:
        """Return how many documents wait for analysis."""
        with self._lock:
            return sum(1 for v in self._inbox.values() if v is not _FORGET)

    def submit(self, snap: Snapshot) -> None:
        """Queue a snapshot, merging it with an older one of the same document that is still waiting."""
        with self._lock:
            older = self._inbox.pop(snap.uri, None)
            if isinstance(older, Snapshot):
                snap = snap.merged_after(older)
            self._inbox[snap.uri] = snap
        self._wake.set()

    def forget(self, uri: str) -> None:
        """Drop a closed document's state."""
        with self._lock:
            self._inbox.pop(uri, None)
            self._inbox[uri] = _FORGET
        self._wake.set()

    def _take(self) -> tuple[str, object] | None:
        with self._lock:
            if not self._inbox:
                return None
            uri = next(iter(self._inbox))
            return uri, self._inbox.pop(uri)

    def _take_other(self, busy: list[str]) -> Snapshot | None:
        """Take the waiting snapshot of a document not in `busy`, a newly opened one first."""
        with self._lock:
            others = [s for u, s in self._inbox.items() if isinstance(s, Snapshot) and u not in busy]
            if not others:
                return None
            snap = next((s for s in others if s.uri not in self._docs), others[0])
            del self._inbox[snap.uri]
            return snap

    def _superseded(self, uri: str) -> bool:
        """Return whether a newer snapshot of the document waits, or the document was closed.

        A snapshot of the very version being analysed (same text, version and settings generation: a re-analysis
        asked for because a background build answered) supersedes nothing: the running analysis is finished and
        delivered, and the waiting one runs after it. Abandoning it instead would hold a document's first
        diagnostics back for as long as builds keep answering.
        """
        with self._lock:
            if uri not in self._inbox:
                return False
            waiting, running = self._inbox[uri], self._running.get(uri)
            return not (isinstance(waiting, Snapshot) and running is not None and _same_version(waiting, running))

    def _run(self) -> None:
        try:
            while not self._stop:
                self._wake.wait()
                self._wake.clear()
                while not self._stop:
                    job = self._take()
                    if job is None:
                        break
                    uri, item = job
                    if item is _FORGET:
                        self._docs.pop(uri, None)
                        continue
                    assert isinstance(item, Snapshot)
                    self._handle(item)
        except BaseException as exc:  # The thread is gone; the server restarts it and says so.
            log.exception("the analysis thread stopped")
            self._on_crash(exc)

    def _handle(self, snap: Snapshot) -> None:
        """Analyse one snapshot and deliver its result, offering checkpoints to other documents meanwhile."""
        self._interrupted.append(snap.uri)
        self._running[snap.uri] = snap
        hook = self._checkpoint if len(self._interrupted) <= MAX_INTERRUPTIONS else None
        try:
            with checkpoints(hook):
                result: Analysis | AnalysisFailure | None = self._process(snap)
        except Superseded:  # A newer version of this document waits; only that one is worth a result.
            self.abandoned += 1
            result = None
        except Exception as exc:  # A bug on one input is logged and reported; the thread goes on.
            log.exception("analysis of %s (version %d) failed", snap.uri, snap.version)
            self._docs.pop(snap.uri, None)
            result = AnalysisFailure(snap.uri, snap.version, f"{type(exc).__name__}: {exc}")
        finally:
            self._interrupted.pop()
            self._running.pop(snap.uri, None)
        if result is not None:
            self._deliver(result)

    def _checkpoint(self, abortable: bool) -> None:
        """Run other documents' waiting snapshots now; abandon this analysis if its document has a newer one."""
        if not self._inbox:
            # Nothing waits (the common case, read without the lock): nothing to run and nothing newer.
            return
        current = self._interrupted[-1]
        while not self._stop:
            if abortable and self._superseded(current):
                raise Superseded(current)
            other = self._take_other(self._interrupted)
            if other is None:
                return
            self.interruptions += 1
            self._handle(other)

    def _document(self, snap: Snapshot) -> CudaDocument:
        """Bring this file's `CudaDocument` to the snapshot's text, incrementally when possible.

        A Python file is parsed whole as its `load_inline` CUDA strings, at their own offsets.
        """
        if snap.path.endswith(".py"):
            masked = mask_python(snap.text) or b" " * len(snap.text)
            embedded = CudaDocument(snap.path, masked)
            self._docs[snap.uri] = (embedded, snap.version)
            return embedded
        state = self._docs.get(snap.uri)
        doc: CudaDocument | None = None
        if state is not None:
            doc, version = state
            if version == snap.version and doc.data == snap.text:
                # A re-analysis of the version already parsed: nothing to parse again.
                return doc
            if snap.edits is not None and version == snap.base_version and len(snap.edits) <= MAX_REPLAYED_EDITS:
                doc.apply(list(snap.edits))
            else:
                doc.replace(snap.text)
        else:
            doc = CudaDocument(snap.path, snap.text)
        if doc.data != snap.text:
            # The editor's text is the truth; re-parse it whole rather than analyse a diverged copy.
            log.warning("re-synchronising %s at version %d", snap.uri, snap.version)
            self.resyncs += 1
            doc.replace(snap.text)
        self._docs[snap.uri] = (doc, snap.version)
        return doc

    def _process(self, snap: Snapshot) -> Analysis | None:
        t0 = time.perf_counter()
        limit = int(snap.settings.analysis_max_file_size_mib * 2**20)
        if len(snap.text) > limit:
            self._docs.pop(snap.uri, None)
            # An unparsed source: nothing reads its tree, and it would be parsed once if something did.
            empty = FileModel(snap.path, (), (), {}, frozenset(), SourceFile(snap.text))
            reason = (
                f"not analysed: the file is {len(snap.text) / 2**20:.1f} MiB, over the "
                f"`warpwise.analysis.maxFileSizeMiB` limit of {snap.settings.analysis_max_file_size_mib:g} MiB"
            )
            return Analysis(
                snap.uri, snap.version, snap.content_hash, empty, (), (), snap.settings, snap.generation, 0.0, reason
            )
        doc = self._document(snap)
        if self._superseded(snap.uri):
            self.skipped_superseded += 1
            return None
        model = analyze_document(doc)
        items, problems = collect_items(self._providers, model, snap.settings)
        self.analyses += 1
        return Analysis(
            uri=snap.uri,
            version=snap.version,
            content_hash=snap.content_hash,
            model=model,
            items=tuple(items),
            problems=tuple(problems),
            settings=snap.settings,
            generation=snap.generation,
            elapsed_ms=(time.perf_counter() - t0) * 1000,
        )


def _same_version(a: Snapshot, b: Snapshot) -> bool:
    """Return whether two snapshots are of one version of a document (text, version and settings generation)."""
    return a.version == b.version and a.generation == b.generation and a.text == b.text
