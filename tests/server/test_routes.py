"""The routing table decides the lane: analysis-lane handlers are handed the current version's analysis."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from warpwise.server.routes import ROUTES, Lane, Route, in_lane


def test_every_analysis_route_names_its_document() -> None:
    for route in ROUTES:
        in_lane(route)  # Raises for a route its lane cannot run.
        if route.lane is Lane.ANALYSIS:
            assert route.document is not None and asyncio.iscoroutinefunction(route.handler), route.method


class _Server:
    def __init__(self, analyses: dict[str, Any]) -> None:
        self.analyses = analyses
        self.asked: list[str] = []

    async def analysis_for(self, uri: str) -> Any:
        self.asked.append(uri)
        return self.analyses.get(uri)


async def test_the_analysis_lane_hands_the_handler_the_analysis_or_answers_the_fallback() -> None:
    seen: list[tuple[Any, Any]] = []

    async def handler(ls: Any, analysis: Any, params: Any) -> str:
        seen.append((analysis, params))
        return "answered"

    route = Route("test/method", handler, Lane.ANALYSIS, fallback="nothing", document=lambda p: p.uri)
    run = in_lane(route)
    ls = _Server({"file:///a.cu": "analysis of a"})
    assert await run(ls, SimpleNamespace(uri="file:///a.cu")) == "answered"
    assert seen[0][0] == "analysis of a"
    assert await run(ls, SimpleNamespace(uri="file:///closed.cu")) == "nothing"
    assert len(seen) == 1 and ls.asked == ["file:///a.cu", "file:///closed.cu"]


def test_a_route_its_lane_cannot_run_is_refused_at_registration() -> None:
    def sync_handler(ls: Any, analysis: Any, params: Any) -> None:
        return None

    async def async_handler(ls: Any, analysis: Any, params: Any) -> None:
        return None

    with pytest.raises(TypeError, match="document lookup"):
        in_lane(Route("test/analysis", async_handler, Lane.ANALYSIS))
    with pytest.raises(TypeError, match="coroutine"):
        in_lane(Route("test/analysis", sync_handler, Lane.ANALYSIS, document=lambda p: p.uri))
