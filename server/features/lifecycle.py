"""Initialization and shutdown."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.server.app import ClientFeatures
from warpwise.server.features import configuration

if TYPE_CHECKING:
    from warpwise.server.app import WarpwiseServer

log = logging.getLogger(__name__)


def initialize(ls: WarpwiseServer, params: types.InitializeParams) -> None:
    """Read the client's capabilities and the initialization options (event loop)."""
    ls.loop = asyncio.get_running_loop()
    ls.client = ClientFeatures(params.capabilities)
    ls.initialization_options = params.initialization_options
    configuration.apply(ls, params.initialization_options, source="initializationOptions", announce=False)
    ls.verification.configure(ls.settings)
    ls.verification.start()
    # Load the skill cards now, while the client waits for `initialize`, so the first analysis does not.
    ls.card_provider.available()
    ls.start_lane()


async def initialized(ls: WarpwiseServer, params: types.InitializedParams) -> None:
    """Report setting problems found at start, pull the configuration, and look for a GPU (event loop)."""
    ls.initialized = True
    configuration.announce_problems(ls)
    ls.notify_status()
    if ls.client.configuration and not ls.initialization_options:
        ls.spawn(configuration.pull(ls), "pull-configuration")
    await ls.verification.detect_gpu()
    ls.notify_status()


async def shutdown(ls: WarpwiseServer, params: None) -> None:
    """Stop the analysis thread and every job (event loop)."""
    if ls.lane is not None:
        ls.lane.stop()
    await ls.verification.stop()
    for task in list(ls.tasks):
        task.cancel()
