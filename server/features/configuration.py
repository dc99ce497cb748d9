"""Settings from `initializationOptions` and `workspace/didChangeConfiguration` (event loop).

A change merges onto the current settings (keys it does not name keep their value; trust changes only when named).
Invalid values are replaced by their defaults and reported to the user in one message; a change of settings
starts a new generation, so analyses computed under the old settings are dropped, and every open document is
analysed again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warpwise.server.settings import SECTION, parse_settings
from warpwise.server.team_key import configure_team_key

if TYPE_CHECKING:
    from warpwise.server.app import WarpwiseServer

log = logging.getLogger(__name__)


def apply(ls: WarpwiseServer, raw: Any, source: str, announce: bool = True) -> None:
    """Validate raw settings onto the current ones, make them current, and re-analyse open documents if changed."""
    settings, problems = parse_settings(raw, base=ls.settings)
    key_problem = configure_team_key(settings)
    ls.setting_problems = [*problems, key_problem] if key_problem is not None else problems
    if announce:
        announce_problems(ls)
    logging.getLogger("warpwise").setLevel(settings.log_level.upper())
    if settings == ls.settings:
        return
    ls.settings = settings
    ls.verification.configure(settings)
    ls.generation += 1
    log.info("settings changed (%s); generation %d", source, ls.generation)
    if ls.lane is not None:
        for doc in ls.documents:
            ls.schedule(doc)
    if ls.initialized:
        if ls.client.pull_diagnostics and ls.client.diagnostic_refresh:
            ls.workspace_diagnostic_refresh(None)
        if ls.client.code_lens_refresh:
            ls.workspace_code_lens_refresh(None)
        ls.notify_status()


def announce_problems(ls: WarpwiseServer) -> None:
    """Show the problems of the last settings change to the user, in one message."""
    problems, ls.setting_problems = ls.setting_problems, []
    if not problems:
        return
    text = "; ".join(str(p) for p in problems)
    ls.window_show_message(
        types.ShowMessageParams(type=types.MessageType.Warning, message=f"warpwise settings: {text}")
    )


def did_change_configuration(ls: WarpwiseServer, params: types.DidChangeConfigurationParams) -> None:
    """Apply the settings the client sent, or pull them when it sent none (event loop)."""
    raw = params.settings
    if isinstance(raw, dict) and SECTION in raw:
        apply(ls, raw[SECTION], source="didChangeConfiguration")
    elif isinstance(raw, dict) and raw and any(k.startswith(f"{SECTION}.") for k in raw):
        apply(ls, raw, source="didChangeConfiguration")
    elif ls.client.configuration:
        ls.spawn(pull(ls), "pull-configuration")
    elif raw is not None:
        apply(ls, raw, source="didChangeConfiguration")


async def pull(ls: WarpwiseServer) -> None:
    """Ask the client for the `warpwise` section (`workspace/configuration`) and apply it."""
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
        )
    except Exception as exc:  # A client that cannot answer keeps the current settings.
        log.warning("workspace/configuration failed: %s", exc)
        return
    if result and result[0] is not None:
        apply(ls, result[0], source="workspace/configuration")
