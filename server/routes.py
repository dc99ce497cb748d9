"""The routing table: every LSP method and command the server handles, in one place, with the lane it runs in.

Lanes (see the design notes, "Execution lanes in the server"):

* `LOOP`: on the event loop, bookkeeping only (documents, versions, settings, progress); returns at once.
* `ANALYSIS`: reads the immutable `Analysis` of the document's current version, computed on the analysis thread
  (waiting for it if that version is still being analysed); the lookup itself runs on the loop and is cheap.
  `register` does the lookup: the route names how to find the request's document, and the handler is called as
  `handler(analysis, params, **services)` with that version's analysis, or never (the route's fallback answers,
  or its `gone` hook refuses) when the document is closed or not analysed in time. Edits that need real work
  (`codeAction/resolve`) are computed in a worker thread over that analysis.
* `QUEUE`: long work, submitted to the job queue, with `$/progress` and cancellation; the handler only submits
  (and, for a command, awaits the job's answer without holding the loop).

No handler sees the server: each names the services it uses as keyword-only parameters (`services.py`), and
`register` binds them once. Every handler is wrapped so that one failing feature is logged and answers "nothing"
instead of an error (or, for a notification, is skipped); protocol errors a handler raises on purpose
(`ContentModified`) pass through.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from warpwise.server.features import (
    code_actions,
    code_lens,
    commands,
    configuration,
    diagnostics,
    hover,
    lifecycle,
    progress,
    sync,
)

if TYPE_CHECKING:
    from warpwise.server.app import WarpwiseServer
    from warpwise.server.services import Analyses, Services

log = logging.getLogger(__name__)


class Lane(StrEnum):
    """Where a handler runs."""

    LOOP = "event loop: bookkeeping only"
    ANALYSIS = "the current version's immutable analysis (computed on the analysis thread)"
    QUEUE = "the job queue (long work, with progress and cancellation)"


@dataclass(frozen=True, slots=True)
class Route:
    """One LSP method: its handler, its lane, the options it registers with, and its answer when it fails."""

    method: str
    handler: Callable[..., Any]
    lane: Lane
    options: Any = None
    fallback: Any = None
    request: bool = True
    document: Callable[[Any], str] | None = None  # ANALYSIS lane: the request's document URI
    gone: Callable[..., Any] | None = None  # ANALYSIS lane: answers (or raises) when no analysis is there


def _text_document(params: Any) -> str:
    """Return the URI of a request's `textDocument`."""
    return str(params.text_document.uri)


@dataclass(frozen=True, slots=True)
class CommandRoute:
    """One `workspace/executeCommand` command."""

    name: str
    handler: Callable[..., Any]
    lane: Lane
    summary: str


ROUTES: tuple[Route, ...] = (
    Route(types.INITIALIZE, lifecycle.initialize, Lane.LOOP),
    Route(types.INITIALIZED, lifecycle.initialized, Lane.LOOP, request=False),
    Route(types.SHUTDOWN, lifecycle.shutdown, Lane.LOOP),
    Route(types.TEXT_DOCUMENT_DID_OPEN, sync.did_open, Lane.LOOP, request=False),
    Route(types.TEXT_DOCUMENT_DID_CHANGE, sync.did_change, Lane.LOOP, request=False),
    Route(
        types.TEXT_DOCUMENT_DID_SAVE, sync.did_save, Lane.QUEUE, types.SaveOptions(include_text=False), request=False
    ),
    Route(types.TEXT_DOCUMENT_DID_CLOSE, sync.did_close, Lane.LOOP, request=False),
    Route(types.WORKSPACE_DID_CHANGE_CONFIGURATION, configuration.did_change_configuration, Lane.LOOP, request=False),
    Route(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        diagnostics.pull,
        Lane.ANALYSIS,
        types.DiagnosticOptions(identifier="warpwise", inter_file_dependencies=False, workspace_diagnostics=False),
        fallback=types.RelatedFullDocumentDiagnosticReport(items=[]),
        document=_text_document,
    ),
    Route(types.TEXT_DOCUMENT_HOVER, hover.hover, Lane.ANALYSIS, document=_text_document),
    Route(
        types.TEXT_DOCUMENT_CODE_ACTION,
        code_actions.code_action,
        Lane.ANALYSIS,
        types.CodeActionOptions(code_action_kinds=code_actions.CODE_ACTION_KINDS, resolve_provider=True),
        fallback=[],
        document=_text_document,
    ),
    Route(
        types.CODE_ACTION_RESOLVE,
        code_actions.resolve,
        Lane.ANALYSIS,
        document=code_actions.action_document,
        gone=code_actions.action_gone,
    ),
    Route(
        types.TEXT_DOCUMENT_CODE_LENS,
        code_lens.code_lens,
        Lane.ANALYSIS,
        types.CodeLensOptions(),
        fallback=[],
        document=_text_document,
    ),
    Route(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, progress.cancel, Lane.LOOP, request=False),
)

COMMANDS: tuple[CommandRoute, ...] = (
    CommandRoute("warpwise.verifyKernel", commands.verify_kernel, Lane.QUEUE, "verify a kernel's candidate rewrites"),
    CommandRoute("warpwise.optimizeKernel", commands.optimize_kernel, Lane.QUEUE, "search for a faster kernel"),
    CommandRoute(
        "warpwise.generateKernel", commands.generate_kernel, Lane.QUEUE, "write a kernel and its problem from words"
    ),
    CommandRoute("warpwise.profileFile", commands.profile_file, Lane.QUEUE, "profile the kernels of a file now"),
    CommandRoute("warpwise.showLineage", commands.show_lineage, Lane.LOOP, "show where a skill card comes from"),
    CommandRoute("warpwise.clearCache", commands.clear_cache, Lane.LOOP, "forget cached reports and results"),
    CommandRoute("warpwise.restartWorker", commands.restart_worker, Lane.LOOP, "restart the workers"),
    CommandRoute("warpwise.cancelJob", commands.cancel_job, Lane.LOOP, "cancel a queued or running job"),
    CommandRoute("warpwise.status", commands.status, Lane.LOOP, "return the warpwise/status payload"),
)


def _guard(
    name: str, handler: Callable[..., Any], fallback: Any, request: bool, failures: dict[str, int]
) -> Callable[..., Any]:
    """Wrap a handler so a failure is logged, counted in `failures` and skipped.

    The wrapper takes `*args` only, so pygls passes it the params and never the server.
    """

    def failed(started: float) -> Any:
        log.exception("%s failed after %.1f ms; skipped", name, (time.perf_counter() - started) * 1000)
        failures[name] = failures.get(name, 0) + 1
        return fallback if request else None

    if asyncio.iscoroutinefunction(handler):

        async def run_async(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return await handler(*args)
            except (JsonRpcException, asyncio.CancelledError):
                raise
            except Exception:  # One failing feature is logged and skipped.
                return failed(started)

        return _named(run_async, handler)

    def run(*args: Any) -> Any:
        started = time.perf_counter()
        try:
            return handler(*args)
        except JsonRpcException:
            raise
        except Exception:  # One failing feature is logged and skipped.
            return failed(started)

    return _named(run, handler)


def _named(wrapper: Callable[..., Any], handler: Callable[..., Any]) -> Callable[..., Any]:
    """Give a wrapper its handler's name and docstring (not its signature: pygls reads that to pass the server)."""
    inner = getattr(handler, "func", handler)  # A handler with its services bound is a functools.partial.
    wrapper.__name__ = getattr(inner, "__name__", wrapper.__name__)
    wrapper.__qualname__ = getattr(inner, "__qualname__", wrapper.__qualname__)
    wrapper.__doc__ = getattr(inner, "__doc__", None)
    return wrapper


def in_lane(route: Route, services: Services) -> Callable[..., Any]:
    """Return the handler as its lane runs it, with its services bound: ANALYSIS handlers get the current
    version's analysis first."""
    handler = services.bind(route.handler)
    if route.lane is not Lane.ANALYSIS:
        return handler
    if route.document is None or not asyncio.iscoroutinefunction(route.handler):
        raise TypeError(f"{route.method}: an analysis-lane route needs a coroutine handler and a document lookup")
    document, fallback = route.document, route.fallback
    gone = services.bind(route.gone) if route.gone is not None else None
    analyses: Analyses = services.analyses

    async def with_analysis(params: Any) -> Any:
        analysis = await analyses.wait_for(document(params))
        if analysis is None:
            return gone(params) if gone is not None else fallback
        return await handler(analysis, params)

    return with_analysis


def register(server: WarpwiseServer) -> None:
    """Register every route and command with pygls, each run as its lane says and given only its services."""
    services = server.services
    for route in ROUTES:
        wrapped = _guard(route.method, in_lane(route, services), route.fallback, route.request, server.feature_failures)
        server.feature(route.method, route.options)(wrapped)
    for cmd in COMMANDS:
        fallback = {"ok": False, "status": "failed", "message": f"{cmd.name} failed; see the warpwise log"}
        handler = services.bind(cmd.handler)
        server.command(cmd.name)(_guard(cmd.name, handler, fallback, True, server.feature_failures))
