"""The card library seen as rules (for reports, SARIF and `warpwise rules`)."""

from __future__ import annotations

from warpwise.skills.library import builtin_library

# Each card is a folder of skills/; its documentation is the folder's card.md.
DOCS_URI = "https://github.com/warpwise/warpwise/blob/main/skills"


def card_rules() -> list[tuple[str, str, str, str]]:
    """Return (id, summary, severity, help URI) for every built-in card."""
    return [
        (c.skill_id, c.header.intent, c.header.severity, f"{DOCS_URI}/{c.skill_id}/card.md") for c in builtin_library()
    ]
