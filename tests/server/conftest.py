"""End-to-end fixtures for the language server: a real `warpwise serve` process driven by pytest-lsp.

Every scenario runs with the client capabilities of VS Code, Neovim and Emacs shipped by pytest-lsp. The test
client records every notification the server sends (diagnostics, status, progress) and tests wait for the one
they need with a predicate; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
KERNELS = FIXTURES / "kernels.cu"
SLOW_NVCC = FIXTURES / "slow_nvcc.py"
ANCHOR = HERE.parent.parent.parent / "shared" / "bench" / "anchor_kernels.cu"
CLIENTS = ("visual-studio-code", "neovim", "emacs")
PINNED_CARDS = ["constant-trip-loop-without-unroll", "missing-restrict", "uncoalesced-global-access", "syntax-error"]
"""The rules and cards the scenarios expect on `kernels.cu`; others may be added to the library at any time."""
PINNED = {"cards": {"enabled": PINNED_CARDS}}
WAIT_S = 30.0
SHUTDOWN_S = 15.0
SERVER = [sys.executable, "-m", "warpwise", "serve"]


class Recorder:
    """Every notification of interest the server sent, with a way to wait for one."""

    def __init__(self) -> None:
        self.diagnostics: list[types.PublishDiagnosticsParams] = []
        self.status: list[dict[str, Any]] = []
        self.progress: list[tuple[Any, Any]] = []
        self.messages: list[types.ShowMessageParams] = []
        self.refreshes = 0
        self._waiters: list[asyncio.Event] = []

    def record(self) -> None:
        for event in self._waiters:
            event.set()

    async def wait(self, found: Callable[[], Any], timeout: float = WAIT_S) -> Any:
        """Wait until `found()` returns something truthy (re-checked after every recorded notification)."""
        event = asyncio.Event()
        self._waiters.append(event)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    result = found()
                    if result:
                        return result
                    event.clear()
                    await event.wait()
        finally:
            self._waiters.remove(event)


def _publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.recorder.diagnostics.append(params)  # type: ignore[attr-defined]
    client.recorder.record()  # type: ignore[attr-defined]


def plain(value: Any) -> Any:
    """Return pygls' namedtuples (how it hands over custom notifications) as plain dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _status(client: LanguageClient, params: Any) -> None:
    client.recorder.status.append(plain(params))  # type: ignore[attr-defined]
    client.recorder.record()  # type: ignore[attr-defined]


def _show_message(client: LanguageClient, params: types.ShowMessageParams) -> None:
    client.messages.append(params)
    client.recorder.messages.append(params)  # type: ignore[attr-defined]
    client.recorder.record()  # type: ignore[attr-defined]


def _progress(client: LanguageClient, params: types.ProgressParams) -> None:
    DEFAULT_CLIENT_FEATURES[types.PROGRESS](client, params)
    reports = client.progress_reports.get(params.token)
    if reports:
        # The default handler stored the value as its lsprotocol type (begin, report or end).
        client.recorder.progress.append((params.token, reports[-1]))  # type: ignore[attr-defined]
    client.recorder.record()  # type: ignore[attr-defined]


def _refresh(client: LanguageClient, params: None) -> None:
    client.recorder.refreshes += 1  # type: ignore[attr-defined]
    client.recorder.record()  # type: ignore[attr-defined]


def make_client() -> LanguageClient:
    """Return a pytest-lsp client that records diagnostics, status, messages and progress."""
    client = LanguageClient(converter_factory=default_converter)
    client.recorder = Recorder()  # type: ignore[attr-defined]
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _publish
    features[types.WINDOW_SHOW_MESSAGE] = _show_message
    features[types.PROGRESS] = _progress
    features["warpwise/status"] = _status
    features[types.WORKSPACE_CODE_LENS_REFRESH] = _refresh
    register_lsp_features(client, features)
    return client


def server_env() -> dict[str, str]:
    """Return the server's environment (the test's, so the same interpreter and packages are used).

    Compile-only builds for resource claims are off: they answer in the background and re-publish, which would
    make what a scenario sees depend on NVRTC's timing (`test_resource_builds.py` turns them on).
    """
    return {**os.environ, "WARPWISE_NO_RESOURCE_BUILDS": "1"}


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=server_env())


class Session:
    """A client connected to a server, with the helpers the scenarios share."""

    def __init__(self, client: LanguageClient, name: str) -> None:
        self.client = client
        self.name = name
        self.caps = client_capabilities(name)
        self.recorder: Recorder = client.recorder  # type: ignore[attr-defined]
        self.versions: dict[str, int] = {}

    @property
    def pulls(self) -> bool:
        """Return whether this client pulls diagnostics (then static findings are not pushed)."""
        return bool(self.caps.text_document and self.caps.text_document.diagnostic is not None)

    async def initialize(self, options: Any = None, root: Path = FIXTURES) -> types.InitializeResult:
        """Initialize the session with this client's capabilities."""
        self.init_result = await self.client.initialize_session(
            types.InitializeParams(
                capabilities=self.caps,
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                initialization_options=options,
            )
        )
        return self.init_result

    def open(self, path: Path, text: str | None = None, language_id: str = "cuda-cpp") -> str:
        """Open a document (its text from disk unless given) and return its URI."""
        uri = path.as_uri()
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language_id, version=1, text=path.read_text() if text is None else text
                )
            )
        )
        return uri

    def change(self, uri: str, start: tuple[int, int], end: tuple[int, int], text: str) -> int:
        """Send one incremental change and return the new version."""
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=start[0], character=start[1]),
                            end=types.Position(line=end[0], character=end[1]),
                        ),
                        text=text,
                    )
                ],
            )
        )
        return self.versions[uri]

    def replace_all(self, uri: str, text: str) -> int:
        """Send a full-text change and return the new version."""
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.versions[uri]

    def save(self, uri: str) -> None:
        """Send `didSave`."""
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    async def pushed(self, uri: str, found: Callable[[types.PublishDiagnosticsParams], bool]) -> Any:
        """Wait for a `publishDiagnostics` of `uri` that satisfies `found`."""

        def look() -> Any:
            for p in reversed(self.recorder.diagnostics):
                if p.uri == uri:
                    return p if found(p) else None
            return None

        return await self.recorder.wait(look)

    async def static(self, uri: str, version: int | None = None) -> list[types.Diagnostic]:
        """Return the static findings of a document's version, by pull or by push as this client does."""
        version = version if version is not None else self.versions[uri]
        if self.pulls:
            report = await self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
            assert report.result_id is not None and report.result_id.startswith(f"{version}.")
            return list(report.items)
        params = await self.pushed(uri, lambda p: p.version == version)
        return [d for d in params.diagnostics if d.source == "warpwise"]

    async def profile(self, uri: str) -> list[types.Diagnostic]:
        """Wait for pushed profiling diagnostics of a document and return them."""
        params = await self.pushed(uri, lambda p: any(d.source == "warpwise profile" for d in p.diagnostics))
        return [d for d in params.diagnostics if d.source == "warpwise profile"]

    async def status(self, found: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Wait for a `warpwise/status` notification that satisfies `found`."""
        return await self.recorder.wait(lambda: next((s for s in reversed(self.recorder.status) if found(s)), None))

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        """Request a hover."""
        return await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )

    async def actions(
        self, uri: str, line: int, only: list[str] | None = None, diagnostics: list[types.Diagnostic] | None = None
    ) -> list[types.CodeAction]:
        """Request the code actions of one line."""
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(
                    start=types.Position(line=line, character=0), end=types.Position(line=line, character=200)
                ),
                context=types.CodeActionContext(diagnostics=diagnostics or [], only=only),
            )
        )
        return [a for a in result or [] if isinstance(a, types.CodeAction)]

    async def resolved(self, action: types.CodeAction) -> types.CodeAction:
        """Return the action with its edit (resolving it when this client resolves edits)."""
        if action.edit is not None:
            return action
        return await self.client.code_action_resolve_async(action)

    async def command(self, name: str, *args: Any, token: str | None = None) -> Any:
        """Run a server command."""
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args), work_done_token=token)
        )


def apply_edit(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    """Apply a workspace edit's text edits of one document to its text (LSP positions, UTF-16 columns)."""
    edits: list[types.TextEdit] = []
    if edit.document_changes:
        for change in edit.document_changes:
            assert isinstance(change, types.TextDocumentEdit)
            assert change.text_document.uri == uri
            edits.extend(e for e in change.edits if isinstance(e, types.TextEdit))
    if edit.changes:
        edits.extend(edit.changes.get(uri, []))
    lines = text.split("\n")
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)

    def at(pos: types.Position) -> int:
        return starts[pos.line] + pos.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: at(e.range.start)] + e.new_text + text[at(e.range.end) :]
    return text


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS)
async def initialized_client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """A client per editor, connected to a fresh server and initialized with default settings."""
    lsp_client.editor = request.param  # type: ignore[attr-defined]
    await Session(lsp_client, request.param).initialize(PINNED)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), SHUTDOWN_S)


@pytest.fixture
def session(initialized_client: LanguageClient) -> Session:
    """The session of `initialized_client`."""
    return Session(initialized_client, initialized_client.editor)  # type: ignore[attr-defined]


@pytest_asyncio.fixture
async def sessions():
    """Return a factory of sessions with custom initialization options; every one is shut down afterwards."""
    made: list[Session] = []

    async def make(name: str, options: Any = None) -> Session:
        client = await CONFIG.start()
        assert isinstance(client, LanguageClient)
        s = Session(client, name)
        made.append(s)
        await s.initialize(options)
        return s

    yield make
    for s in made:
        # A server that does not shut down in time fails the test rather than hanging the run.
        await asyncio.wait_for(s.client.shutdown_session(), SHUTDOWN_S)
        await asyncio.wait_for(s.client.stop(), SHUTDOWN_S)
