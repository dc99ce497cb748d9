"""Initialization and shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from warpwise.server.features import configuration
from warpwise.server.services import Analyses, ClientFeatures, Config, Editor, Tasks

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.providers import CardProvider
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)

GPU_DETECTION_DELAY_S = 1.0
GPU_DETECTION_MAX_WAIT_S = 10.0
"""While an open document has no analysis yet, the detection waits (its first publish starts it), up to this."""


def initialize(
    params: types.InitializeParams,
    *,
    editor: Editor,
    client: ClientFeatures,
    config: Config,
    documents: DocumentStore,
    verification: VerificationService,
    cards: CardProvider,
    analyses: Analyses,
) -> None:
    """Read the client's capabilities and the initialization options (event loop)."""
    editor.connect(asyncio.get_running_loop())
    client.read(params.capabilities)
    config.initialization_options = params.initialization_options
    settings = configuration.Reconfigure(config, documents, verification, analyses, editor, client)
    settings.apply(params.initialization_options, source="initializationOptions", announce=False)
    verification.configure(config.settings)
    verification.start()
    # Load the skill cards and warm the analyzers now, while the client waits for `initialize`, so that the first
    # document does not pay for it.
    cards.available()
    log.info("analysis warm-up took %.0f ms", analyses.warm_up())
    _resource_builds_in_background(analyses)
    # Everything loaded so far (protocol types, the card library, compiled queries) lives as long as the server:
    # keep it out of the cyclic collector's full passes, which would otherwise stall a keystroke now and then.
    gc.collect()
    gc.freeze()
    analyses.restart()


async def initialized(
    params: types.InitializedParams,
    *,
    editor: Editor,
    client: ClientFeatures,
    config: Config,
    documents: DocumentStore,
    verification: VerificationService,
    analyses: Analyses,
    tasks: Tasks,
) -> None:
    """Report setting problems found at start, pull the configuration, schedule the first status (event loop)."""
    editor.mark_initialized()
    settings = configuration.Reconfigure(config, documents, verification, analyses, editor, client)
    settings.announce_problems()
    if client.configuration and not config.initialization_options:
        tasks.spawn(settings.pull(), "pull-configuration")
    # The first status says whether verification is available, which imports the verification modules (tens of
    # milliseconds on the event loop), and looking for a GPU imports the CUDA driver bindings: do both after the
    # first analysis is published (or a second from now when no document is open) rather than while the first
    # document is being read: on a loaded machine the first analysis takes longer than the second, and the imports
    # would compete with it for the interpreter.
    detect = functools.partial(
        detect_when_read, documents=documents, analyses=analyses, editor=editor, verification=verification, tasks=tasks
    )
    asyncio.get_running_loop().call_later(GPU_DETECTION_DELAY_S, detect, GPU_DETECTION_DELAY_S)


def detect_when_read(
    waited: float,
    *,
    documents: DocumentStore,
    analyses: Analyses,
    editor: Editor,
    verification: VerificationService,
    tasks: Tasks,
) -> None:
    """Start the GPU detection, unless an open document waits for its first analysis (then look again later).

    The first publish starts the detection itself (`WarpwiseServer._take_analysis`); this is the fallback when no
    document is open, or when the first analysis takes longer than `GPU_DETECTION_MAX_WAIT_S`.
    """
    reading = any(analyses.current(doc.uri) is None for doc in documents)
    if reading and waited < GPU_DETECTION_MAX_WAIT_S:
        again = functools.partial(
            detect_when_read,
            documents=documents,
            analyses=analyses,
            editor=editor,
            verification=verification,
            tasks=tasks,
        )
        asyncio.get_running_loop().call_later(GPU_DETECTION_DELAY_S, again, waited + GPU_DETECTION_DELAY_S)
        return
    start_gpu_detection(editor=editor, verification=verification, tasks=tasks)


def start_gpu_detection(*, editor: Editor, verification: VerificationService, tasks: Tasks) -> None:
    """Send the first status, then look for a GPU once, in the background, and report it in the status.

    The compile-only resource builds held back since `initialize` start now too (`warpwise.verify.resources`).
    """
    from warpwise.verify import resources

    resources.release()
    if not tasks.once("detect-gpu"):
        return
    editor.notify_status()

    async def detect() -> None:
        await verification.detect_gpu()
        editor.notify_status()

    tasks.spawn(detect(), "detect-gpu")


async def shutdown(params: None, *, analyses: Analyses, verification: VerificationService, tasks: Tasks) -> None:
    """Stop the analysis thread and every job (event loop)."""
    analyses.stop()
    await verification.stop()
    tasks.cancel_all()


def _resource_builds_in_background(analyses: Analyses) -> None:
    """Never let a compile-only build for a resource claim hold up the analysis lane (event loop).

    The builds run on a background thread in their own process (`warpwise.verify.resources`), each answer that
    comes in making the open documents be analysed again and published. They are held back until the first
    diagnostics are published (or, with no document open, until the GPU detection starts: `start_gpu_detection`):
    the build process's start and each build's device-source extraction would otherwise compete with the first
    analysis for the interpreter and the cores.
    """
    from warpwise.verify import resources

    loop = asyncio.get_running_loop()

    def answered() -> None:
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # The loop may close between the check and the call.
                loop.call_soon_threadsafe(analyses.reanalyse_all)

    resources.set_background(True)
    resources.hold()
    resources.add_listener(answered)
    resources.warm_up()
