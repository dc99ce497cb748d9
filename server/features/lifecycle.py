"""Initialization and shutdown."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.server.analysis import warm_up
from warpwise.server.app import ClientFeatures
from warpwise.server.features import configuration

if TYPE_CHECKING:
    from warpwise.server.app import WarpwiseServer

log = logging.getLogger(__name__)

GPU_DETECTION_DELAY_S = 1.0


def initialize(ls: WarpwiseServer, params: types.InitializeParams) -> None:
    """Read the client's capabilities and the initialization options (event loop)."""
    ls.loop = asyncio.get_running_loop()
    ls.client = ClientFeatures(params.capabilities)
    ls.initialization_options = params.initialization_options
    configuration.apply(ls, params.initialization_options, source="initializationOptions", announce=False)
    ls.verification.configure(ls.settings)
    ls.verification.start()
    # Load the skill cards and warm the analyzers now, while the client waits for `initialize`, so that the first
    # document does not pay for it.
    ls.card_provider.available()
    log.info("analysis warm-up took %.0f ms", warm_up(ls.providers, ls.settings))
    # Everything loaded so far (protocol types, the card library, compiled queries) lives as long as the server:
    # keep it out of the cyclic collector's full passes, which would otherwise stall a keystroke now and then.
    gc.collect()
    gc.freeze()
    ls.start_lane()


async def initialized(ls: WarpwiseServer, params: types.InitializedParams) -> None:
    """Report setting problems found at start, pull the configuration, schedule the first status (event loop)."""
    ls.initialized = True
    configuration.announce_problems(ls)
    if ls.client.configuration and not ls.initialization_options:
        ls.spawn(configuration.pull(ls), "pull-configuration")
    # The first status says whether verification is available, which imports the verification modules (tens of
    # milliseconds on the event loop), and looking for a GPU imports the CUDA driver bindings: do both after the
    # first analysis is published (or a second from now) rather than while the first document is being read.
    asyncio.get_running_loop().call_later(GPU_DETECTION_DELAY_S, start_gpu_detection, ls)


def start_gpu_detection(ls: WarpwiseServer) -> None:
    """Send the first status, then look for a GPU once, in the background, and report it in the status."""
    if ls.gpu_detection is not None:
        return
    ls.notify_status()

    async def detect() -> None:
        await ls.verification.detect_gpu()
        ls.notify_status()

    ls.gpu_detection = ls.spawn(detect(), "detect-gpu")


async def shutdown(ls: WarpwiseServer, params: None) -> None:
    """Stop the analysis thread and every job (event loop)."""
    if ls.lane is not None:
        ls.lane.stop()
    await ls.verification.stop()
    for task in list(ls.tasks):
        task.cancel()
