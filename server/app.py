"""The warpwise language server: its state, its lanes, and the few pygls hooks it needs.

Three lanes (see "Execution lanes in the server" in the design notes, and `routes.py`, where every method says
which lane it runs in):

* the **event loop** keeps the books: open documents, versions, settings, diagnostics, progress, status;
* the **analysis thread** (`AnalysisLane`) parses, models and matches immutable snapshots; its results come back
  to the loop and are published only if the document is still at the snapshot's version and settings generation;
* the **job queue** (`VerificationService.queue`) runs long jobs (compile-only builds today, GPU verification
  when `warpwise.verify` provides it) with `$/progress` and cancellation.

The protocol subclass changes three things in pygls: positions are always UTF-16 (the engine's `LineIndex`
counts UTF-16 columns; UTF-16 is the encoding every client must support), open documents live in
`DocumentStore` only (pygls' own copy would cost a second O(file) text rebuild per keystroke and splits lines
on form feeds, which LSP does not), and `workspace/executeCommand` hands the full params (with the client's
progress token) to the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Coroutine, Generator
from typing import Any, cast

from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from warpwise import __version__
from warpwise.server.analysis import Analysis, AnalysisFailure, AnalysisLane, warm_up
from warpwise.server.documents import DocumentStore, OpenDocument
from warpwise.server.jobs import Job
from warpwise.server.problem_files import problem_files_status
from warpwise.server.providers import CardProvider, Provider, RuleProvider
from warpwise.server.services import ClientFeatures, Config, ProgressBook, Services, Timers
from warpwise.server.settings import Settings
from warpwise.server.verification import VerificationService

log = logging.getLogger("warpwise.server")

STATUS_NOTIFICATION = "warpwise/status"
ANALYSIS_WAIT_S = 5.0


class _Answered:
    """A request that was already answered with an error while being read; the dispatcher skips it."""

    jsonrpc = "answered"


class WarpwiseProtocol(LanguageServerProtocol):
    """pygls' protocol with UTF-16 positions, documents kept by the server, and commands given full params."""

    _server: WarpwiseServer

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Read a message; a request whose params cannot be read is answered with an error, not dropped."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], error=exc.to_response_error())
                return _Answered()
            raise

    def unstructure(self, value: Any) -> Any:
        """Return an lsprotocol value as JSON values."""
        return self._converter.unstructure(value)

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification whose params are JSON values already (skipping the pass over lsprotocol types)."""
        self._send_data({"jsonrpc": self.VERSION, "method": method, "params": params})

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        """Initialize, offering UTF-16 positions only (the engine counts UTF-16 columns)."""
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            general.position_encodings = [types.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))

    # These three are plain functions, not generators like pygls' own: pygls keeps the future of every
    # generator-handled notification in `_request_futures` forever, one per keystroke.
    def _user(self, method: str, params: Any) -> None:
        if (handler := self.fm.features.get(method)) is not None:
            handler(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        """Hand the document to the server's store (pygls keeps no copy)."""
        self._user(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        """Hand the change to the server's store."""
        self._user(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        """Hand the close to the server's store."""
        self._user(types.TEXT_DOCUMENT_DID_CLOSE, params)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Generator[Any, Any, Any]:
        """Run a registered command with the full `ExecuteCommandParams`."""
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams.of(ValueError(f"unknown command {params.command!r}"))
        result = yield handler, (params,), None
        return result


class _ClientLogHandler(logging.Handler):
    """Forward warpwise's own warnings and errors to the editor's log (`window/logMessage`)."""

    def __init__(self, server: WarpwiseServer) -> None:
        super().__init__(logging.WARNING)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.server.loop
        if loop is None or loop.is_closed() or not self.server.initialized:
            return
        kind = types.MessageType.Error if record.levelno >= logging.ERROR else types.MessageType.Warning
        try:
            text = self.format(record)
            loop.call_soon_threadsafe(self.server.log_to_client, text, kind)
        except Exception:  # Logging must never raise into the code that logs.
            pass


class WarpwiseServer(LanguageServer):
    """The language server's state; the handlers in `features/` read and change it on the event loop."""

    def __init__(self) -> None:
        super().__init__(
            "warpwise",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=WarpwiseProtocol,
        )
        self.config = Config()
        self.documents = DocumentStore()
        self.analyses: dict[str, Analysis] = {}
        self._waiters: dict[str, list[tuple[int, int, asyncio.Future]]] = {}
        self.card_provider = CardProvider()
        self.providers: list[Provider] = [RuleProvider(), self.card_provider]
        self.lane: AnalysisLane | None = None
        self.verification = VerificationService(self._on_job_event)
        self.client = ClientFeatures()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.initialized = False
        self.worker_state = "running"
        self.worker_detail = ""
        self.worker_restarts = 0
        self.analysis_failures = 0
        self.last_failure = ""
        self.tasks: set[asyncio.Task] = set()
        self.pushed_profile: dict[str, bool] = {}
        self.progress_book = ProgressBook()
        self._status_scheduled = False
        self._last_status: dict[str, Any] | None = None
        self.feature_failures: dict[str, int] = {}
        self.timers = Timers()
        self.once_done: set[str] = set()
        self.services = Services(
            documents=self.documents,
            config=self.config,
            client=self.client,
            analyses=_ServerAnalyses(self),
            verification=self.verification,
            cards=self.card_provider,
            editor=_ServerEditor(self),
            tasks=_ServerTasks(self),
            timers=self.timers,
            progress=self.progress_book,
            pushed=self.pushed_profile,
        )
        logging.getLogger("warpwise").addHandler(_ClientLogHandler(self))

    @property
    def settings(self) -> Settings:
        """Return the current settings."""
        return self.config.settings

    @property
    def generation(self) -> int:
        """Return the settings' generation (bumped on every change)."""
        return self.config.generation

    # -- background tasks -------------------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task:
        """Run a coroutine in the background, keeping a reference and logging its failure."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self.tasks.discard(t)
            if not t.cancelled() and (exc := t.exception()) is not None:
                log.error("background task %s failed: %s", name, exc, exc_info=exc)

        task.add_done_callback(done)
        return task

    # -- the analysis lane ------------------------------------------------------------------------------------

    def start_lane(self) -> None:
        """Start (or restart) the analysis thread and re-analyse every open document."""
        if self.lane is not None:
            self.lane.stop()
        self.lane = AnalysisLane(self.providers, self._deliver, self._crashed)
        self.lane.start()
        for doc in self.documents:
            doc.pending = None
            doc.snapshot_version = None
            self.schedule(doc)

    def reanalyse_all(self) -> None:
        """Analyse every open document's current version again, e.g. once a compile-only build answered (event
        loop); unchanged functions reuse their matches, so only those that waited for the build are matched again."""
        for doc in self.documents:
            doc.pending = None
            doc.snapshot_version = None
            self.schedule(doc)

    def schedule(self, doc: OpenDocument) -> None:
        """Capture a snapshot of a document and hand it to the analysis thread (event loop)."""
        if self.lane is None:
            return
        self.lane.submit(doc.snapshot(self.settings, self.generation))

    def _deliver(self, result: Analysis | AnalysisFailure) -> None:
        """Pass a result from the analysis thread to the event loop."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            # The loop may close between the check and the call (shutdown).
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._on_analysis, result)

    def _crashed(self, exc: BaseException) -> None:
        """Restart the analysis thread after it stopped unexpectedly (called on that thread)."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._restart_after_crash, f"{type(exc).__name__}: {exc}")

    def _restart_after_crash(self, reason: str) -> None:
        self.worker_restarts += 1
        self.worker_state = "restarted"
        self.worker_detail = f"the analysis worker crashed ({reason}) and was restarted"
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=f"warpwise: {self.worker_detail}")
        )
        self.start_lane()
        self.notify_status()

    def _on_analysis(self, result: Analysis | AnalysisFailure) -> None:
        """Take a result once the input already waiting has been read (two turns of the event loop).

        A change that arrived while the analysis ran makes the result stale; reading it first avoids publishing
        (and serialising every diagnostic of) a version the editor has already left.
        """
        loop = asyncio.get_running_loop()
        loop.call_soon(loop.call_soon, self._take_analysis, result)

    def _take_analysis(self, result: Analysis | AnalysisFailure) -> None:
        """Keep and publish a result if its document is still at that version and settings generation."""
        from warpwise.server.features import diagnostics

        doc = self.documents.get(result.uri)
        if isinstance(result, AnalysisFailure):
            self.analysis_failures += 1
            self.last_failure = f"analysis of {result.uri} failed: {result.error}"
            self._resolve(result.uri, result.version, None)
            self.notify_status()
            return
        stale = doc is None or result.version != doc.version or result.content_hash != doc.content_hash
        if stale or result.generation != self.generation:
            self._resolve(result.uri, result.version, None, only_older=True)
            return
        self.analyses[result.uri] = result
        self._resolve(result.uri, result.version, result)
        self.services.call(diagnostics.on_analysis, doc, result)
        if "detect-gpu" not in self.once_done:
            from warpwise.server.features.lifecycle import start_gpu_detection

            self.services.call(start_gpu_detection)

    def _resolve(self, uri: str, version: int, result: Analysis | None, only_older: bool = False) -> None:
        waiters = self._waiters.get(uri)
        if not waiters:
            return
        keep = []
        for v, gen, fut in waiters:
            if fut.done():
                continue
            if v < version:
                fut.set_result(None)
            elif v == version and not only_older:
                fut.set_result(result if result is not None and result.generation == gen else None)
            else:
                keep.append((v, gen, fut))
        if keep:
            self._waiters[uri] = keep
        else:
            self._waiters.pop(uri, None)

    def drop_waiters(self, uri: str) -> None:
        """Answer everyone waiting for an analysis of a document with nothing (its versions were reset)."""
        for _, _, fut in self._waiters.pop(uri, []):
            if not fut.done():
                fut.set_result(None)

    def current_analysis(self, uri: str) -> Analysis | None:
        """Return the analysis of a document's current version, if it is ready."""
        doc = self.documents.get(uri)
        a = self.analyses.get(uri)
        if doc is None or a is None or a.version != doc.version or a.generation != self.generation:
            return None
        # The same version number may have named other text (a client whose versions went backwards).
        return a if a.content_hash == doc.content_hash else None

    async def analysis_for(self, uri: str) -> Analysis | None:
        """Return the analysis of a document's current version, waiting for the analysis thread if needed."""
        doc = self.documents.get(uri)
        if doc is None:
            return None
        if (a := self.current_analysis(uri)) is not None:
            return a
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(uri, []).append((doc.version, self.generation, fut))
        try:
            return await asyncio.wait_for(fut, ANALYSIS_WAIT_S)
        except TimeoutError:
            log.warning("no analysis of %s version %d after %.0f s", uri, doc.version, ANALYSIS_WAIT_S)
            return None

    # -- jobs, progress, status -------------------------------------------------------------------------------

    def _on_job_event(self, job: Job, event: str) -> None:
        """React to a job's state change (event loop): progress, results, status."""
        from warpwise.server.features import diagnostics, progress

        self.services.call(progress.on_job_event, job, event)
        if event == "end" and job.kind == "profile":
            self.services.call(diagnostics.on_profile, job)
        elif event == "end" and job.kind in ("verify", "gpu-profile"):
            self.services.call(diagnostics.on_result, job)
        self.notify_status()

    def status_payload(self) -> dict[str, Any]:
        """Return the `warpwise/status` payload."""
        gpu = self.verification.gpu
        available, reason = self.verification.verification_available()
        cards_ok, cards_reason = self.card_provider.available()
        running = self.verification.queue.running
        worker_state = self.worker_state
        if self.lane is not None and not self.lane.alive:
            worker_state = "stopped"
        return {
            "version": __version__,
            "gpu": {
                "found": bool(gpu and gpu.found),
                "name": gpu.name if gpu else None,
                "detail": gpu.detail if gpu else "looking for a GPU",
            },
            "backend": self.verification.backend(),
            "running": running.describe() if running is not None else None,
            "error": self._error_text(),
            "verification": {"available": available, "detail": reason},
            "problemFiles": problem_files_status(self.verification),
            "cards": {"available": cards_ok, "detail": cards_reason},
            "queue": {
                "length": self.verification.queue.length,
                "running": running.describe() if running is not None else None,
            },
            "worker": {
                "state": worker_state,
                "detail": self.worker_detail,
                "restarts": self.worker_restarts,
                "analysisFailures": self.analysis_failures,
                "lastFailure": self.last_failure,
            },
        }

    def _error_text(self) -> str | None:
        """Return the problem the status item should show, if any."""
        if self.lane is not None and not self.lane.alive:
            return "the analysis worker stopped"
        if self.worker_state == "restarted" and self.worker_detail:
            return self.worker_detail
        return None

    def notify_status(self) -> None:
        """Send `warpwise/status` at the end of this loop turn, if it changed."""
        if self._status_scheduled or self.loop is None:
            return
        self._status_scheduled = True
        self.loop.call_soon(self._send_status)

    def _send_status(self) -> None:
        self._status_scheduled = False
        if not self.initialized:
            return
        payload = self.status_payload()
        if payload == self._last_status:
            return
        self._last_status = payload
        self.protocol.notify(STATUS_NOTIFICATION, payload)

    def log_to_client(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """Write a line to the editor's log for this server."""
        # A broken pipe while logging is not worth a second error.
        with contextlib.suppress(Exception):
            self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log protocol-level errors (malformed messages and the like) instead of popping up a dialog each time.

        Errors a request answers with (`ContentModified` and the like) already reached the client in the response.
        """
        if source is FeatureRequestError:
            return
        log.error("protocol error (%s): %s", getattr(source, "__name__", source), error)


class _ServerAnalyses:
    """The `Analyses` service: the server's analysis lane and the analyses it delivered."""

    def __init__(self, server: WarpwiseServer) -> None:
        self._server = server

    def current(self, uri: str) -> Analysis | None:
        return self._server.current_analysis(uri)

    async def wait_for(self, uri: str) -> Analysis | None:
        return await self._server.analysis_for(uri)

    def schedule(self, doc: OpenDocument) -> None:
        self._server.schedule(doc)

    def reset(self, uri: str) -> None:
        self._server.analyses.pop(uri, None)
        self._server.drop_waiters(uri)

    def close(self, uri: str) -> None:
        if self._server.lane is not None:
            self._server.lane.forget(uri)
        self._server.analyses.pop(uri, None)

    def restart(self, reason: str | None = None) -> None:
        self._server.start_lane()
        if reason is not None:
            self._server.worker_state = "running"
            self._server.worker_detail = reason

    def stop(self) -> None:
        if self._server.lane is not None:
            self._server.lane.stop()

    def reanalyse_all(self) -> None:
        self._server.reanalyse_all()

    def warm_up(self) -> float:
        return warm_up(self._server.providers, self._server.settings)


class _ServerEditor:
    """The `Editor` service: the server's connection to the client."""

    def __init__(self, server: WarpwiseServer) -> None:
        self._server = server

    @property
    def initialized(self) -> bool:
        return self._server.initialized

    @property
    def progress(self) -> Any:
        return self._server.work_done_progress

    def connect(self, loop: asyncio.AbstractEventLoop) -> None:
        self._server.loop = loop

    def mark_initialized(self) -> None:
        self._server.initialized = True

    def show_message(self, kind: types.MessageType, text: str) -> None:
        self._server.window_show_message(types.ShowMessageParams(type=kind, message=text))

    def notify_status(self) -> None:
        self._server.notify_status()

    def status_payload(self) -> dict[str, Any]:
        return self._server.status_payload()

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        cast(WarpwiseProtocol, self._server.protocol).notify_json(method, params)

    def unstructure(self, value: Any) -> Any:
        return cast(WarpwiseProtocol, self._server.protocol).unstructure(value)

    def publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self._server.text_document_publish_diagnostics(params)

    def refresh_code_lenses(self) -> None:
        self._server.workspace_code_lens_refresh(None)

    def refresh_diagnostics(self) -> None:
        self._server.workspace_diagnostic_refresh(None)

    async def configuration(self, params: types.ConfigurationParams) -> Any:
        return await self._server.workspace_configuration_async(params)


class _ServerTasks:
    """The `Tasks` service: the server's background tasks."""

    def __init__(self, server: WarpwiseServer) -> None:
        self._server = server

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task:
        return self._server.spawn(coro, name)

    def once(self, name: str) -> bool:
        first = name not in self._server.once_done
        self._server.once_done.add(name)
        return first

    def cancel_all(self) -> None:
        for task in list(self._server.tasks):
            task.cancel()


def create_server() -> WarpwiseServer:
    """Return a server with every route of the routing table registered."""
    from warpwise.server.routes import register

    server = WarpwiseServer()
    register(server)
    return server


def serve(transport: str = "stdio", host: str = "127.0.0.1", port: int = 2087) -> None:
    """Run the server until the client disconnects."""
    # A short switch interval keeps the event loop responsive while the analysis thread holds the GIL.
    sys.setswitchinterval(0.001)
    server = create_server()
    if transport == "tcp":
        server.start_tcp(host, port)
    else:
        server.start_io()
