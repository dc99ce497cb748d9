"""The routing table decides the lane: analysis-lane handlers are handed the current version's analysis."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from warpwise.server.app import create_server
from warpwise.server.routes import COMMANDS, ROUTES, Lane, Route, in_lane
from warpwise.server.services import wanted_names


def test_every_analysis_route_names_its_document() -> None:
    services = create_server().services
    for route in ROUTES:
        in_lane(route, services)  # Raises for a route its lane cannot run or a service that does not exist.
        if route.lane is Lane.ANALYSIS:
            assert route.document is not None and asyncio.iscoroutinefunction(route.handler), route.method
    for cmd in COMMANDS:
        wanted_names(cmd.handler)


class _Analyses:
    def __init__(self, analyses: dict[str, Any]) -> None:
        self.analyses = analyses
        self.asked: list[str] = []

    async def wait_for(self, uri: str) -> Any:
        self.asked.append(uri)
        return self.analyses.get(uri)


def _services(analyses: _Analyses) -> Any:
    real = create_server().services
    return type(real)(**{**{f: getattr(real, f) for f in real.__dataclass_fields__}, "analyses": analyses})


async def test_the_analysis_lane_hands_the_handler_the_analysis_or_answers_the_fallback() -> None:
    seen: list[tuple[Any, Any, Any]] = []

    async def handler(analysis: Any, params: Any, *, documents: Any) -> str:
        seen.append((analysis, params, documents))
        return "answered"

    route = Route("test/method", handler, Lane.ANALYSIS, fallback="nothing", document=lambda p: p.uri)
    analyses = _Analyses({"file:///a.cu": "analysis of a"})
    services = _services(analyses)
    run = in_lane(route, services)
    assert await run(SimpleNamespace(uri="file:///a.cu")) == "answered"
    assert seen[0][0] == "analysis of a" and seen[0][2] is services.documents
    assert await run(SimpleNamespace(uri="file:///closed.cu")) == "nothing"
    assert len(seen) == 1 and analyses.asked == ["file:///a.cu", "file:///closed.cu"]


def test_a_route_its_lane_cannot_run_is_refused_at_registration() -> None:
    services = create_server().services

    def sync_handler(analysis: Any, params: Any) -> None:
        return None

    async def async_handler(analysis: Any, params: Any) -> None:
        return None

    async def wants_the_server(analysis: Any, params: Any, *, server: Any) -> None:
        return None

    with pytest.raises(TypeError, match="document lookup"):
        in_lane(Route("test/analysis", async_handler, Lane.ANALYSIS), services)
    with pytest.raises(TypeError, match="coroutine"):
        in_lane(Route("test/analysis", sync_handler, Lane.ANALYSIS, document=lambda p: p.uri), services)
    with pytest.raises(TypeError, match="not services"):
        in_lane(Route("test/analysis", wants_the_server, Lane.ANALYSIS, document=lambda p: p.uri), services)


def test_pygls_never_passes_the_server_to_a_registered_handler() -> None:
    import functools

    server = create_server()
    registered = {**server.protocol.fm.features, **server.protocol.fm.commands}
    assert len(registered) >= len(ROUTES) + len(COMMANDS)
    for name, handler in registered.items():
        # pygls binds the server to a handler whose first parameter is `ls`: a partial, or a coroutine with `.func`.
        assert not isinstance(handler, functools.partial) and not hasattr(handler, "func"), name
