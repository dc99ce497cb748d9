"""The services the handlers in `features/` are given: each a narrow interface over one part of the server.

A handler never sees the server object. It names the services it uses as keyword-only parameters, and the
routing table (`routes.py`) hands it exactly those, once, at registration:

    async def hover(analysis: Analysis, params: HoverParams, *, verification: VerificationService,
                    client: ClientFeatures) -> Hover | None: ...

The services are the fields of `Services` (a name a handler asks for that is not one of them is refused at
registration). Some are the server's state objects themselves (the document store, the verification service,
the card provider), some are small state holders owned by one feature (progress tokens, debounce timers), and
three are typed interfaces the server implements with adapters (`Analyses`, `Editor`, `Tasks`), so that what a
feature may do with the analysis thread, the client connection and background tasks is written down here.
`tests/server/test_services.py` reads the features' code and fails when a handler reaches for the server.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

from warpwise.server.settings import DEFAULTS, SettingProblem, Settings

if TYPE_CHECKING:
    from warpwise.server.analysis import Analysis
    from warpwise.server.documents import DocumentStore, OpenDocument
    from warpwise.server.providers import CardProvider
    from warpwise.server.verification import VerificationService


class ClientFeatures:
    """What the connected client can do, read from its capabilities (again, in place, on `initialize`)."""

    def __init__(self, caps: types.ClientCapabilities | None = None) -> None:
        self.read(caps)

    def read(self, caps: types.ClientCapabilities | None) -> None:
        """Read what the client can do from its capabilities."""
        caps = caps or types.ClientCapabilities()
        td = caps.text_document or types.TextDocumentClientCapabilities()
        ws = caps.workspace or types.WorkspaceClientCapabilities()
        window = caps.window or types.WindowClientCapabilities()
        pub = td.publish_diagnostics
        self.related_information = bool(pub and pub.related_information)
        self.code_description = bool(pub and pub.code_description_support)
        self.pull_diagnostics = td.diagnostic is not None
        self.diagnostic_refresh = bool(ws.diagnostics and ws.diagnostics.refresh_support)
        ca = td.code_action
        self.code_action_literals = bool(ca and ca.code_action_literal_support)
        self.code_action_data = bool(ca and ca.data_support)
        self.resolve_edit = bool(
            ca and ca.resolve_support and "edit" in (ca.resolve_support.properties or []) and self.code_action_data
        )
        self.code_action_disabled = bool(ca and ca.disabled_support)
        self.code_lens = td.code_lens is not None
        self.code_lens_refresh = bool(ws.code_lens and ws.code_lens.refresh_support)
        self.work_done_progress = bool(window.work_done_progress)
        self.configuration = bool(ws.configuration)
        self.document_changes = bool(ws.workspace_edit and ws.workspace_edit.document_changes)
        hover = td.hover
        self.markdown = not hover or not hover.content_format or types.MarkupKind.Markdown in hover.content_format


@dataclass(slots=True)
class Config:
    """The current settings, their generation (bumped on every change), and the problems of the last change."""

    settings: Settings = DEFAULTS
    generation: int = 0
    problems: list[SettingProblem] = field(default_factory=list)
    initialization_options: Any = None


@dataclass(slots=True)
class ProgressBook:
    """The progress channel of every job that reports one, and the job behind each progress token."""

    jobs: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str | int, str] = field(default_factory=dict)


class Timers:
    """One debounce timer per document (the event loop's timer handles)."""

    def __init__(self) -> None:
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def start(self, uri: str, delay_s: float, callback: Callable[[], Any]) -> None:
        """(Re)start a document's timer."""
        self.cancel(uri)
        self._handles[uri] = asyncio.get_running_loop().call_later(delay_s, callback)

    def cancel(self, uri: str) -> None:
        """Stop a document's timer, if it runs."""
        if (timer := self._handles.pop(uri, None)) is not None:
            timer.cancel()


class Analyses(Protocol):
    """The analysis thread and the analyses of the documents' current versions."""

    def current(self, uri: str) -> Analysis | None:
        """Return the analysis of a document's current version, if it is ready."""

    async def wait_for(self, uri: str) -> Analysis | None:
        """Return the analysis of a document's current version, waiting for the analysis thread if needed."""

    def schedule(self, doc: OpenDocument) -> None:
        """Capture a snapshot of a document and hand it to the analysis thread."""

    def reset(self, uri: str) -> None:
        """Drop a document's analysis and answer its waiters with nothing (its versions were reset)."""

    def close(self, uri: str) -> None:
        """Drop a closed document's analysis and the analysis thread's copy of it."""

    def restart(self, reason: str | None = None) -> None:
        """Start (or restart) the analysis thread and re-analyse every open document; `reason` goes to the status."""

    def stop(self) -> None:
        """Stop the analysis thread."""

    def reanalyse_all(self) -> None:
        """Analyse every open document's current version again and publish the result (event loop)."""

    def warm_up(self) -> float:
        """Warm the analyzers and the card library up; return the milliseconds it took."""


class Editor(Protocol):
    """The connection to the client: messages, notifications, refresh requests, the status."""

    @property
    def initialized(self) -> bool:
        """Whether the client sent `initialized`."""

    @property
    def progress(self) -> Any:
        """pygls' work-done progress (`create_async`, `begin`, `report`, `end`, `tokens`)."""

    def connect(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember the event loop the connection runs on (`initialize`)."""

    def mark_initialized(self) -> None:
        """Record that the client sent `initialized`."""

    def show_message(self, kind: types.MessageType, text: str) -> None:
        """Show the user a one-line message."""

    def notify_status(self) -> None:
        """Send `warpwise/status` at the end of this loop turn, if it changed."""

    def status_payload(self) -> dict[str, Any]:
        """Return the `warpwise/status` payload."""

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification whose params are JSON values already."""

    def unstructure(self, value: Any) -> Any:
        """Return an lsprotocol value as JSON values."""

    def publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        """Send `textDocument/publishDiagnostics`."""

    def refresh_code_lenses(self) -> None:
        """Ask the client to request code lenses again."""

    def refresh_diagnostics(self) -> None:
        """Ask the client to pull diagnostics again."""

    async def configuration(self, params: types.ConfigurationParams) -> Any:
        """Ask the client for configuration (`workspace/configuration`)."""


class Tasks(Protocol):
    """Background tasks on the event loop, each kept and its failure logged."""

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task:
        """Run a coroutine in the background."""

    def once(self, name: str) -> bool:
        """Return True the first time it is asked with this name, False ever after (one-time work)."""

    def cancel_all(self) -> None:
        """Cancel every background task."""


@dataclass(frozen=True, slots=True)
class Services:
    """Every service a handler may ask for, by the name of its field."""

    documents: DocumentStore
    config: Config
    client: ClientFeatures
    analyses: Analyses
    verification: VerificationService
    cards: CardProvider
    editor: Editor
    tasks: Tasks
    timers: Timers
    progress: ProgressBook
    pushed: dict[str, bool]  # Whether profiling diagnostics were last pushed for a document (pull clients).

    def wanted(self, fn: Callable[..., Any]) -> dict[str, Any]:
        """Return the services a function asks for (its keyword-only parameters), by name."""
        return {name: getattr(self, name) for name in wanted_names(fn)}

    def bind(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Return `fn` with the services it asks for given (the other arguments are left to the caller)."""
        kw = self.wanted(fn)
        return functools.partial(fn, **kw) if kw else fn

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call `fn` with these arguments and the services it asks for."""
        return fn(*args, **self.wanted(fn))


SERVICE_NAMES = frozenset(f.name for f in fields(Services))


@functools.cache
def wanted_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Return the names of the services a function asks for; raise TypeError for a name that is no service."""
    names = tuple(_keyword_only(fn))
    unknown = [n for n in names if n not in SERVICE_NAMES]
    if unknown:
        raise TypeError(f"{fn.__qualname__} asks for {', '.join(unknown)}: not services ({', '.join(SERVICE_NAMES)})")
    return names


def _keyword_only(fn: Callable[..., Any]) -> Iterator[str]:
    for p in inspect.signature(fn).parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            yield p.name
