"""Settings from `initializationOptions` and `workspace/didChangeConfiguration` (event loop).

A change merges onto the current settings (keys it does not name keep their value; trust changes only when named).
Invalid values are replaced by their defaults and reported to the user in one message; a change of settings
starts a new generation, so analyses computed under the old settings are dropped, and every open document is
analysed again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warpwise.server.services import Analyses, ClientFeatures, Config, Editor, Tasks
from warpwise.server.settings import SECTION, parse_settings
from warpwise.server.team_key import configure_team_key

if TYPE_CHECKING:
    from warpwise.server.documents import DocumentStore
    from warpwise.server.verification import VerificationService

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Reconfigure:
    """What a change of settings touches: the settings, the documents to re-analyse, the gate, the client."""

    config: Config
    documents: DocumentStore
    verification: VerificationService
    analyses: Analyses
    editor: Editor
    client: ClientFeatures

    def apply(self, raw: Any, source: str, announce: bool = True) -> None:
        """Validate raw settings onto the current ones, make them current, and re-analyse open documents."""
        config = self.config
        settings, problems = parse_settings(raw, base=config.settings)
        key_problem = configure_team_key(settings)
        config.problems = [*problems, key_problem] if key_problem is not None else problems
        if announce:
            self.announce_problems()
        logging.getLogger("warpwise").setLevel(settings.log_level.upper())
        if settings == config.settings:
            return
        config.settings = settings
        self.verification.configure(settings)
        config.generation += 1
        log.info("settings changed (%s); generation %d", source, config.generation)
        for doc in self.documents:
            self.analyses.schedule(doc)  # Nothing is scheduled before the analysis thread starts.
        if self.editor.initialized:
            if self.client.pull_diagnostics and self.client.diagnostic_refresh:
                self.editor.refresh_diagnostics()
            if self.client.code_lens_refresh:
                self.editor.refresh_code_lenses()
            self.editor.notify_status()

    def announce_problems(self) -> None:
        """Show the problems of the last settings change to the user, in one message."""
        problems, self.config.problems = self.config.problems, []
        if not problems:
            return
        text = "; ".join(str(p) for p in problems)
        self.editor.show_message(types.MessageType.Warning, f"warpwise settings: {text}")

    async def pull(self) -> None:
        """Ask the client for the `warpwise` section (`workspace/configuration`) and apply it."""
        try:
            result = await self.editor.configuration(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
            )
        except Exception as exc:  # A client that cannot answer keeps the current settings.
            log.warning("workspace/configuration failed: %s", exc)
            return
        if result and result[0] is not None:
            self.apply(result[0], source="workspace/configuration")


def did_change_configuration(
    params: types.DidChangeConfigurationParams,
    *,
    config: Config,
    documents: DocumentStore,
    verification: VerificationService,
    analyses: Analyses,
    editor: Editor,
    client: ClientFeatures,
    tasks: Tasks,
) -> None:
    """Apply the settings the client sent, or pull them when it sent none (event loop)."""
    settings = Reconfigure(config, documents, verification, analyses, editor, client)
    raw = params.settings
    if isinstance(raw, dict) and SECTION in raw:
        settings.apply(raw[SECTION], source="didChangeConfiguration")
    elif isinstance(raw, dict) and raw and any(k.startswith(f"{SECTION}.") for k in raw):
        settings.apply(raw, source="didChangeConfiguration")
    elif client.configuration:
        tasks.spawn(settings.pull(), "pull-configuration")
    elif raw is not None:
        settings.apply(raw, source="didChangeConfiguration")
